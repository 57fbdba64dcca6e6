"""The environment, read in one place, and the Scrapy settings built from it.

Environment variables (each also a setting of the same name; a ``-s NAME=VALUE`` on the command line wins):

======================================  ==============================================================
``REDIS_URL``                           the shared Redis; unset: the embedded server under the data folder
``MONGO_URI``                           the MongoDB store; unset: weekly SQLite files under the data folder
``MONGO_DB_PREFIX``                     weekly MongoDB databases are ``<prefix>_<YYYY>w<WW>``
``MONGO_WRITE_CONCERN``                 ``majority``, or how many members acknowledge a write
``MONGO_TIMEOUT_MS``                    how long a command waits for MongoDB (read commands too)
``CRAWLER_DATA_DIR``                    the data folder: embedded Redis, SQLite stores, spool files
``CRAWLER_RULES_DIR``                   the folder of site rules, one YAML file per site
``CRAWLER_PROXIES``                     proxies of the sites whose rule names none (URLs, comma-separated)
``CRAWLER_PROXY_FILE``                  a file of such proxies, one URL per line
``CRAWLER_ALLOW_PRIVATE_NETWORKS``      ``1``: fetch loopback and private addresses (tests only)
======================================  ==============================================================

Every other setting is a plain value of :mod:`crawler.settings`. ``crawler`` commands read the environment
once (:meth:`Config.from_env`) and build their settings with :meth:`Config.settings`; ``scrapy crawl
sites`` gets the same values through the spider (:func:`apply_environment`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler import settings as project_settings
from crawler.keys import Keys

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings, Settings

__all__ = ["ALLOW_PRIVATE_NETWORKS_ENV", "Config", "apply_environment", "crawl_settings"]

# The test-only allowance to fetch loopback and private addresses ("1" turns it on).
ALLOW_PRIVATE_NETWORKS_ENV = "CRAWLER_ALLOW_PRIVATE_NETWORKS"


# Environment variables that crawler.settings gives a default too: Config.values() holds them only when set.
_SETTINGS_DEFAULTED = frozenset({"MONGO_TIMEOUT_MS"})


@dataclass(frozen=True, slots=True)
class Config:
    """Where things are, from the environment; the defaults are the fields' own."""

    redis_url: str | None = None
    mongo_uri: str | None = None
    mongo_db_prefix: str = "crawler"
    mongo_write_concern: str = "majority"
    # Empty: crawler.settings.MONGO_TIMEOUT_MS; checked as a number where the store is opened.
    mongo_timeout_ms: str = ""
    data_dir: Path = Path("data")
    rules_dir: Path = Path("rules")
    proxies: str = ""
    proxy_file: str = ""
    allow_private_networks: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Config:
        """The configuration ``env`` (default ``os.environ``) gives; unset or empty names keep defaults."""
        source = os.environ if env is None else env
        default = cls()

        def text(name: str, fallback: str) -> str:
            return source.get(name) or fallback

        return cls(
            redis_url=source.get("REDIS_URL") or None,
            mongo_uri=source.get("MONGO_URI") or None,
            mongo_db_prefix=text("MONGO_DB_PREFIX", default.mongo_db_prefix),
            mongo_write_concern=text("MONGO_WRITE_CONCERN", default.mongo_write_concern),
            mongo_timeout_ms=text("MONGO_TIMEOUT_MS", default.mongo_timeout_ms).strip(),
            data_dir=Path(text("CRAWLER_DATA_DIR", str(default.data_dir))),
            rules_dir=Path(text("CRAWLER_RULES_DIR", str(default.rules_dir))),
            proxies=text("CRAWLER_PROXIES", default.proxies),
            proxy_file=text("CRAWLER_PROXY_FILE", default.proxy_file),
            allow_private_networks=source.get(ALLOW_PRIVATE_NETWORKS_ENV, "").strip() == "1",
        )

    def replace(self, **changes: Any) -> Config:
        """A copy with ``changes`` (field names) applied."""
        return dataclasses.replace(self, **changes)

    @property
    def keys(self) -> Keys:
        """The Redis keys of this deployment (``REDIS_KEY_PREFIX``)."""
        return Keys(project_settings.REDIS_KEY_PREFIX)

    def values(self) -> dict[str, Any]:
        """The configuration as settings: the environment variables' names and their values (those with
        a default in :mod:`crawler.settings` only when the environment sets them)."""
        timeout = {"MONGO_TIMEOUT_MS": self.mongo_timeout_ms} if self.mongo_timeout_ms else {}
        return timeout | {
            "REDIS_URL": self.redis_url,
            "MONGO_URI": self.mongo_uri,
            "MONGO_DB_PREFIX": self.mongo_db_prefix,
            "MONGO_WRITE_CONCERN": self.mongo_write_concern,
            "CRAWLER_DATA_DIR": str(self.data_dir),
            "CRAWLER_RULES_DIR": str(self.rules_dir),
            "CRAWLER_PROXIES": self.proxies,
            "CRAWLER_PROXY_FILE": self.proxy_file,
            ALLOW_PRIVATE_NETWORKS_ENV: self.allow_private_networks,
        }

    def settings(self, overrides: Mapping[str, Any] | None = None) -> Settings:
        """The Scrapy settings of a crawl: :mod:`crawler.settings`, this configuration, then ``overrides``
        (the command line's, which win)."""
        from scrapy.settings import Settings  # noqa: PLC0415 - Scrapy only when a crawl is set up

        settings = Settings()
        settings.setmodule(project_settings, priority="project")
        settings.setdict(self.values(), priority="project")
        settings.setdict(dict(overrides or {}), priority="cmdline")
        return settings


def crawl_settings(overrides: Mapping[str, Any] | None = None, *, config: Config | None = None) -> Settings:
    """The settings of a crawl from ``config`` (default: the environment's) with ``overrides`` on top."""
    return (config or Config.from_env()).settings(overrides)


def apply_environment(settings: BaseSettings) -> None:
    """Give ``settings`` the environment's values where nothing set them at the project's priority or
    above (``scrapy crawl sites``, which reads only :mod:`crawler.settings`); ``MONGO_TIMEOUT_MS``, which
    :mod:`crawler.settings` gives a default at the project's priority, where the environment sets it and
    nothing set it above that (``-s`` wins)."""
    from scrapy.settings import SETTINGS_PRIORITIES  # noqa: PLC0415 - Scrapy only when a crawl is set up

    project = SETTINGS_PRIORITIES["project"]
    for name, value in Config.from_env().values().items():
        above = project + 1 if name in _SETTINGS_DEFAULTED else project
        if (settings.getpriority(name) or 0) < above:
            settings.set(name, value, priority="project")
