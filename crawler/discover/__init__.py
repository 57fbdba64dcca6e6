"""Discover crawls: toward a topic, beyond the sites a rule knows (see docs/discover.md).

- :mod:`crawler.discover.topic`: how relevant a fetched page is to a rule's topic, and why;
- :mod:`crawler.discover.links`: the features of a link and the online model of a link's value;
- :mod:`crawler.discover.shared`: that model shared by every worker through Redis, versioned;
- :mod:`crawler.discover.frontier`: the links found and not fetched yet, per host, and the bandit that
  picks the host each next request goes to.

Nothing here imports Scrapy: the worker's pipeline (:mod:`crawler.worker.pipelines.discover`) drives it.
"""
