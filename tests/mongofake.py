"""A pymongo-shaped fake, to check the MongoDB store's query shapes. It is NOT MongoDB.

mongomock keeps the documents and answers finds, updates and aggregations; this module replays
``bulk_write`` one operation at a time (mongomock 4.3 cannot take the operations of pymongo 4.9 and
later), reports duplicate keys the way an unordered bulk write does, and can be switched ``down`` to
raise ``AutoReconnect`` like an unreachable server, or made to fail calls of one collection
(``fail_next``: a connection lost, a write refused), or to refuse the writes of some documents as a
collection's validator does (``refuse``). ``$text`` is not implemented by mongomock: the search
case runs against a real server only. Tests that count as MongoDB need ``MONGO_URI``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mongomock
from pymongo.errors import AutoReconnect, BulkWriteError, DuplicateKeyError
from pymongo.operations import UpdateOne


class _Result:
    def __init__(self, upserted_ids: dict[int, Any]) -> None:
        self.upserted_ids = upserted_ids


class FakeCollection:
    def __init__(self, client: FakeClient, collection: Any) -> None:
        self._client = client
        self._collection = collection

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._collection, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            self._client.check()
            self._client.check_call(self._collection.name, name)
            return attribute(*args, **kwargs)

        return call

    def bulk_write(self, requests: list[UpdateOne], ordered: bool = True) -> _Result:
        self._client.check()
        self._client.check_call(self._collection.name, "bulk_write")
        upserted: dict[int, Any] = {}
        errors: list[dict[str, Any]] = []
        for index, request in enumerate(requests):
            if self._client.refused(request._filter):
                errors.append({"index": index, "code": 121, "errmsg": "Document failed validation"})
                if ordered:
                    break
                continue
            try:
                result = self._collection.update_one(request._filter, request._doc, upsert=request._upsert)
            except DuplicateKeyError as exc:
                errors.append({"index": index, "code": 11000, "errmsg": str(exc)})
                if ordered:
                    break
                continue
            if result.upserted_id is not None:
                upserted[index] = result.upserted_id
        if errors:
            details = {
                "writeErrors": errors,
                "upserted": [{"index": index, "_id": value} for index, value in upserted.items()],
            }
            raise BulkWriteError(details)
        return _Result(upserted)


class FakeDatabase:
    def __init__(self, client: FakeClient, database: Any) -> None:
        self._client = client
        self._database = database

    def get_collection(self, name: str, **_: Any) -> FakeCollection:
        return FakeCollection(self._client, self._database.get_collection(name))

    def __getitem__(self, name: str) -> FakeCollection:
        return self.get_collection(name)


class FakeClient:
    """What MongoStore uses of MongoClient, over mongomock; ``down = True`` makes every call fail."""

    def __init__(self) -> None:
        self._client: Any = mongomock.MongoClient()
        self.down = False
        self._failures: dict[tuple[str, str], list[list[Any]]] = {}
        self._refused: str | None = None

    def check(self) -> None:
        if self.down:
            raise AutoReconnect("connection refused (the fake server is down)")

    def fail_next(self, collection: str, operation: str, error: Exception, *, after: int = 0) -> None:
        """The call of ``operation`` (``bulk_write``, ``find``…) on a collection named ``collection`` that
        comes after ``after`` others raises ``error``; the calls after it succeed. Failures asked for
        before it fires come after it: ``after`` then counts from the call that raised the one before."""
        self._failures.setdefault((collection, operation), []).append([after, error])

    def refuse(self, part: str) -> None:
        """Every write of a document whose URL holds ``part`` is refused, each alone in its bulk write, as
        by a collection's validator (DocumentValidationFailure, code 121)."""
        self._refused = part

    def refused(self, selector: Mapping[str, Any]) -> bool:
        url = selector.get("url")
        return self._refused is not None and isinstance(url, str) and self._refused in url

    def check_call(self, collection: str, operation: str) -> None:
        failures = self._failures.get((collection, operation))
        if not failures:
            return
        if failures[0][0] > 0:
            failures[0][0] -= 1
            return
        raise failures.pop(0)[1]

    def __getitem__(self, name: str) -> FakeDatabase:
        return FakeDatabase(self, self._client[name])

    def list_database_names(self) -> list[str]:
        self.check()
        return list(self._client.list_database_names())

    def drop_database(self, name: str) -> None:
        self._client.drop_database(name)

    def close(self) -> None:
        return None
