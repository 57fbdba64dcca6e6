"""Item pipelines, in ``ITEM_PIPELINES`` order: clean (100) -> qRead fallback (200) -> summary (300) ->
store (900). They take the :class:`crawler.items.Article` the spider gives for an article page; every
outcome is a slash-path stat (``extract/qread_fallback/<site>``, ``store/new/<site>``, ...)."""
