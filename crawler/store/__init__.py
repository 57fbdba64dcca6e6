"""Article storage: the store interface (:mod:`crawler.store.base`, which lists the document fields) and
its backends; :func:`open_store` picks the backend from the settings or the environment.

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

import os
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from scrapy.settings import BaseSettings

from crawler.store import fingerprint
from crawler.store.base import (
    DOCUMENT_FIELDS,
    DedupPolicy,
    Store,
    StoreError,
    Written,
    article_id,
    content_hash,
    redacted,
    week_of,
)
from crawler.store.sqlite import SqliteStore

__all__ = [
    "DOCUMENT_FIELDS",
    "DedupPolicy",
    "SqliteStore",
    "Store",
    "StoreError",
    "Written",
    "article_id",
    "content_hash",
    "open_store",
    "redacted",
    "week_of",
]

DEFAULT_DATA_DIR = "data"
DEFAULT_BATCH_SIZE = 100
DEFAULT_PREFIX = "crawler"


def open_store(settings_or_env: BaseSettings | Mapping[str, Any] | None = None) -> Store:
    """The store the settings (Scrapy settings, or a mapping such as ``os.environ``; default the
    environment) name: ``MONGO_URI``, ``MONGO_DB_PREFIX``, ``MONGO_WRITE_CONCERN``, ``MONGO_TIMEOUT_MS``,
    ``CRAWLER_DATA_DIR``, ``STORE_BATCH_SIZE``, ``STORE_SPOOL_RETRY_SECONDS``, ``DEDUP_ENABLED``,
    ``DEDUP_WINDOW_DAYS``, ``DEDUP_MAX_DISTANCE``. Settings missing from a mapping take the defaults of
    crawler/settings.py."""
    source: BaseSettings | Mapping[str, Any] = os.environ if settings_or_env is None else settings_or_env
    data_dir = str(source.get("CRAWLER_DATA_DIR") or DEFAULT_DATA_DIR)
    batch_size = _whole(source, "STORE_BATCH_SIZE", DEFAULT_BATCH_SIZE, minimum=1)
    dedup = DedupPolicy(
        window=timedelta(days=_number(source, "DEDUP_WINDOW_DAYS", 7, minimum=0, whole=False)),
        max_distance=_whole(source, "DEDUP_MAX_DISTANCE", fingerprint.DEFAULT_MAX_DISTANCE, minimum=0),
        enabled=_flag(source, "DEDUP_ENABLED", default=True),
    )
    mongo_uri = source.get("MONGO_URI")
    if not mongo_uri:
        return SqliteStore(data_dir, batch_size=batch_size, dedup=dedup)
    from crawler.store.mongo import MongoStore, parse_write_concern  # noqa: PLC0415 - pymongo only when used

    uri = str(mongo_uri)
    if not uri.startswith(("mongodb://", "mongodb+srv://")):
        raise StoreError(
            f"MONGO_URI is {redacted(uri)!r}: expected mongodb://HOST[:PORT] or mongodb+srv://HOST"
        )
    return MongoStore(
        uri,
        spool_dir=data_dir,
        prefix=str(source.get("MONGO_DB_PREFIX") or DEFAULT_PREFIX),
        write_concern=parse_write_concern(source.get("MONGO_WRITE_CONCERN") or "majority"),
        batch_size=batch_size,
        dedup=dedup,
        timeout_ms=_whole(source, "MONGO_TIMEOUT_MS", 5000, minimum=1),
        retry_seconds=_number(source, "STORE_SPOOL_RETRY_SECONDS", 10.0, minimum=0, whole=False),
    )


def _number(
    source: BaseSettings | Mapping[str, Any], name: str, default: float, *, minimum: float, whole: bool
) -> float:
    value = source.get(name)
    if value in (None, ""):
        return default
    try:
        number = None if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or number < minimum or (whole and not number.is_integer()):
        what = "a whole number" if whole else "a number"
        raise StoreError(f"{name} is {value!r}: expected {what} of at least {minimum:g}")
    return number


def _whole(source: BaseSettings | Mapping[str, Any], name: str, default: int, *, minimum: int) -> int:
    return int(_number(source, name, default, minimum=minimum, whole=True))


def _flag(source: BaseSettings | Mapping[str, Any], name: str, *, default: bool) -> bool:
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
    raise StoreError(f"{name} is {value!r}: expected true or false")
