"""Article storage: the document (:mod:`crawler.store.document`), the store interface
(:mod:`crawler.store.base`) and its backends; :func:`open_store` picks the backend from the settings.

With ``MONGO_URI`` set, MongoDB (:mod:`crawler.store.mongo`): one database per ISO week,
``<MONGO_DB_PREFIX>_2026w47``. Without it, the embedded SQLite store (:mod:`crawler.store.sqlite`): one
file per ISO week under ``CRAWLER_DATA_DIR/articles``. Both keep the same documents and answer the same
reads::

    from crawler.store import open_store
    with open_store(crawler.settings) as store:
        for article in store.iter_articles(site="citynews", week="2026w47", limit=10):
            print(article["title"])
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crawler import settings as defaults
from crawler.bounds import checked_setting, declared_ranges
from crawler.config import Config
from crawler.errors import StoreError, StoreSettingError
from crawler.store import fingerprint
from crawler.store.base import DedupPolicy, Store, Written
from crawler.store.document import DOCUMENT_FIELDS, article_id, content_hash, week_of
from crawler.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from crawler.store.mongo import MongoConfig

__all__ = [
    "DOCUMENT_FIELDS",
    "DedupPolicy",
    "SqliteStore",
    "Store",
    "StoreConfig",
    "StoreError",
    "StoreSettingError",
    "Written",
    "article_id",
    "content_hash",
    "open_store",
    "store_config",
    "week_of",
]

# The range of each store setting, declared beside it in crawler/settings.py.
_RANGES = declared_ranges(defaults)


@dataclass(frozen=True)
class StoreConfig:
    """The store the settings name, checked without opening it or connecting to it
    (:func:`store_config`); :meth:`open` opens it."""

    data_dir: str
    batch_size: int
    dedup: DedupPolicy
    mongo: MongoConfig | None = None  # None: the embedded SQLite store
    busy_timeout: float = defaults.STORE_BUSY_TIMEOUT_SECONDS  # SQLite's only

    def open(self, *, skip_damaged: bool = False) -> Store:
        """The store, opened. ``skip_damaged``: reads across weeks leave out a SQLite week file that cannot
        be read (:meth:`Store.weeks_left_out`) instead of failing."""
        if self.mongo is None:
            return SqliteStore(
                self.data_dir,
                batch_size=self.batch_size,
                busy_timeout=self.busy_timeout,
                dedup=self.dedup,
                skip_damaged=skip_damaged,
            )
        return self.mongo.open(self.data_dir, batch_size=self.batch_size, dedup=self.dedup)

    @property
    def local(self) -> bool:
        """Whether the store is this machine's own (SQLite files under the data folder), not MongoDB."""
        return self.mongo is None

    def where(self) -> str:
        """Where articles go, the same for every process that stores into the same place:
        ``HOST:/abs/path/articles`` for SQLite (this machine's name and the folder's absolute path: a
        container has a name of its own), the servers of ``MONGO_URI`` and the databases' prefix for
        MongoDB (:meth:`crawler.store.mongo.MongoConfig.place`: no credentials, options or database)."""
        if self.mongo is None:
            return f"{socket.gethostname()}:{(Path(self.data_dir) / 'articles').resolve()}"
        return self.mongo.place()

    def spooled(self) -> str | None:
        """What waits in the local spool of the MongoDB store under the data folder, to be written into
        MongoDB when it is back (how many articles, where); None when nothing does (or for SQLite)."""
        return None if self.mongo is None else self.mongo.spooled(self.data_dir)


def store_config(settings: Mapping[str, Any]) -> StoreConfig:
    """The store the settings (Scrapy settings, or any mapping) name, every value checked
    (:class:`StoreSettingError` names the one that is wrong): ``MONGO_URI``, ``MONGO_DB_PREFIX``,
    ``MONGO_WRITE_CONCERN``, ``MONGO_TIMEOUT_MS``, ``CRAWLER_DATA_DIR``, ``STORE_BATCH_SIZE``,
    ``STORE_SPOOL_RETRY_SECONDS``, ``STORE_BUSY_TIMEOUT_SECONDS``, ``DEDUP_ENABLED``, ``DEDUP_WINDOW_DAYS``,
    ``DEDUP_MAX_DISTANCE``.
    Settings missing from a mapping take the defaults of :mod:`crawler.settings` and
    :class:`crawler.config.Config`. Nothing is opened or connected to."""
    source = settings
    config = Config()
    data_dir = str(source.get("CRAWLER_DATA_DIR") or config.data_dir)
    batch_size = _whole(source, "STORE_BATCH_SIZE", defaults.STORE_BATCH_SIZE)
    dedup = DedupPolicy(
        window=timedelta(days=_number(source, "DEDUP_WINDOW_DAYS", defaults.DEDUP_WINDOW_DAYS)),
        max_distance=_whole(source, "DEDUP_MAX_DISTANCE", fingerprint.DEFAULT_MAX_DISTANCE),
        enabled=_flag(source, "DEDUP_ENABLED", default=defaults.DEDUP_ENABLED),
    )
    mongo_uri = source.get("MONGO_URI")
    if not mongo_uri:
        busy_timeout = _number(source, "STORE_BUSY_TIMEOUT_SECONDS", defaults.STORE_BUSY_TIMEOUT_SECONDS)
        return StoreConfig(data_dir, batch_size, dedup, busy_timeout=busy_timeout)
    from crawler.store.mongo import MongoConfig, parse_write_concern  # noqa: PLC0415 - pymongo only when used

    mongo = MongoConfig(
        str(mongo_uri),
        prefix=str(source.get("MONGO_DB_PREFIX") or config.mongo_db_prefix),
        write_concern=parse_write_concern(source.get("MONGO_WRITE_CONCERN") or config.mongo_write_concern),
        timeout_ms=_whole(source, "MONGO_TIMEOUT_MS", defaults.MONGO_TIMEOUT_MS),
        retry_seconds=_number(source, "STORE_SPOOL_RETRY_SECONDS", defaults.STORE_SPOOL_RETRY_SECONDS),
    )
    return StoreConfig(data_dir, batch_size, dedup, mongo)


def open_store(settings: Mapping[str, Any], *, skip_damaged: bool = False) -> Store:
    """The store the settings name (:func:`store_config`), opened (:meth:`StoreConfig.open`)."""
    return store_config(settings).open(skip_damaged=skip_damaged)


def _number(source: Mapping[str, Any], name: str, default: float) -> float:
    """The setting ``name`` as a number in the range crawler/settings.py declares for it
    (:func:`crawler.bounds.checked_setting`), ``default`` when it is not given."""
    number = checked_setting(name, source.get(name), _RANGES[name], default=default, error=StoreSettingError)
    return default if number is None else number


def _whole(source: Mapping[str, Any], name: str, default: int) -> int:
    return int(_number(source, name, default))


def _flag(source: Mapping[str, Any], name: str, *, default: bool) -> bool:
    value = source.get(name)
    if value in (None, ""):
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise StoreSettingError(f"{name} is {value!r}: expected true or false")
