"""Item pipelines, in ``ITEM_PIPELINES`` order: clean (100) -> text (200: the qRead fallback, summaries
and fingerprints, in the text pool) -> store (900). They take the :class:`crawler.items.Article` the
spider gives for an article page; every outcome is a slash-path stat (``extract/qread_fallback/<site>``,
``store/new/<site>``, ...)."""
