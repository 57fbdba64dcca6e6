"""The bundled demo news sites that ``crawler demo`` crawls: their data, their pages and their server.

* :mod:`crawler.demo.sites`: the sites and articles as data (``demo_sites()``): what a crawl must store;
* :mod:`crawler.demo.layouts`: each site's HTML;
* :mod:`crawler.demo.server`: the HTTP server on 127.0.0.1 (``python -m crawler.demo.server``, and
  ``DemoServer`` in-process; not imported here, so that ``python -m`` runs it cleanly).

The rules that crawl them are package data, in ``DEMO_RULES`` (``crawler/demo/rules/``):
``demo-citynews.yaml``, ``demo-techdaily.yaml`` and ``demo-huaxia.yaml``; they name the origin
``DEMO_ORIGIN`` (``http://127.0.0.1:8631``) and allow its loopback address. City News is read from its
index pages, TechDaily from its RSS feed, 华夏网 from its JSON news list.
"""

from __future__ import annotations

from crawler.demo.sites import (
    DEMO_ORIGIN,
    DEMO_PORT,
    DEMO_RULES,
    DemoArticle,
    DemoSite,
    demo_site,
    demo_sites,
)

__all__ = ["DEMO_ORIGIN", "DEMO_PORT", "DEMO_RULES", "DemoArticle", "DemoSite", "demo_site", "demo_sites"]
