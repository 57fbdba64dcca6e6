"""Article storage: the store interface (:mod:`crawler.store.base`, which lists the document fields) and
its backends; :func:`open_store` picks the backend from the settings or the environment.

Today the backend is the embedded SQLite store (:mod:`crawler.store.sqlite`), one file per ISO week under
``CRAWLER_DATA_DIR/articles``; MongoDB (``MONGO_URI``) comes with the next issue::

    from crawler.store import open_store
    with open_store(crawler.settings) as store:
        for article in store.iter_articles(site="citynews", week="2026w47", limit=10):
            print(article["title"])
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from scrapy.settings import BaseSettings

from crawler.store.base import DOCUMENT_FIELDS, Store, StoreError, article_id, content_hash, week_of
from crawler.store.sqlite import SqliteStore

__all__ = [
    "DOCUMENT_FIELDS",
    "SqliteStore",
    "Store",
    "StoreError",
    "article_id",
    "content_hash",
    "open_store",
    "week_of",
]

DEFAULT_DATA_DIR = "data"
DEFAULT_BATCH_SIZE = 100


def open_store(settings_or_env: BaseSettings | Mapping[str, Any] | None = None) -> Store:
    """The store the settings (Scrapy settings, or a mapping such as ``os.environ``; default the
    environment) name: ``MONGO_URI``, ``CRAWLER_DATA_DIR``, ``STORE_BATCH_SIZE``."""
    source: BaseSettings | Mapping[str, Any] = os.environ if settings_or_env is None else settings_or_env
    mongo_uri = source.get("MONGO_URI")
    if mongo_uri:
        raise StoreError(
            f"MONGO_URI is set ({_redacted(str(mongo_uri))}), but this version stores articles only in the"
            " embedded SQLite store: unset MONGO_URI to store them under CRAWLER_DATA_DIR"
        )
    data_dir = source.get("CRAWLER_DATA_DIR") or DEFAULT_DATA_DIR
    batch_value = source.get("STORE_BATCH_SIZE")
    batch_size = DEFAULT_BATCH_SIZE if batch_value in (None, "") else _whole_number(batch_value)
    return SqliteStore(str(data_dir), batch_size=batch_size)


def _whole_number(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    raise StoreError(f"STORE_BATCH_SIZE is {value!r}: expected a whole number of at least 1")


def _redacted(uri: str) -> str:
    """``uri`` without its user name and password: a message must not show credentials."""
    parts = urlsplit(uri)
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}/..." if parts.scheme and host else "a value that is not a URI"
