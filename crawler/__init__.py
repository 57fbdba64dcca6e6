"""A focused web crawler service: YAML site rules, regular and temp grabs, qRead article extraction.

The folders are the architecture (docs/architecture.md): :mod:`crawler.cli` on top, then the Scrapy
plug-ins of a worker (:mod:`crawler.worker`) and the status report, the regular grabs
(:mod:`crawler.schedule`), requests and jobs (:mod:`crawler.requests`), the rules, the Redis parts, the
store and the demo sites, and at the bottom the configuration, the Redis keys, the settings and the
errors. Each imports only from below it (the contracts in pyproject.toml).
"""

from __future__ import annotations

import time

__version__ = "0.1.0"
PROJECT_NAME = "focused-crawler"
# When this process started, by time.monotonic's clock, as near as its own code can tell: a command (and
# any process of a crawl) imports this package first, a few hundredths of a second after its start.
PROCESS_STARTED = time.monotonic()

__all__ = ["PROCESS_STARTED", "PROJECT_NAME", "__version__"]
