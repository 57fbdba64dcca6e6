"""The crawler's spiders: one, ``sites``, serves every site rule."""
