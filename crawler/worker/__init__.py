"""The Scrapy plug-ins of a worker: the leased scheduler and the Bloom dupefilter on the shared Redis, the
one spider, the downloader and spider middlewares, the item pipelines, the stats and heartbeat
extensions; and running a worker in this process, or fetching one page through Scrapy for a command."""
