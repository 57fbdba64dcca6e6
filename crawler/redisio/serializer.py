"""JSON for requests in Redis (``SCHEDULER_SERIALIZER``), never pickle.

``Request.to_dict()`` holds bytes (body, header names and values); JSON has no bytes and no non-string
keys, so they travel tagged: ``{"$b": base64}`` for bytes and ``{"$map": [[key, value], ...]}`` for a
mapping with bytes keys. ``dumps`` sorts keys so one request always gives the same bytes: the queue is a
sorted set, and an identical request pushed twice is stored once.
"""

from __future__ import annotations

import base64
import json
from typing import Any

_BYTES = "$b"
_MAP = "$map"


def dumps(obj: Any) -> bytes:
    """``obj`` (a request dict) as compact, canonical JSON bytes."""
    return json.dumps(_encode(obj), separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode("utf-8")


def loads(data: bytes | str) -> Any:
    """The object ``dumps`` encoded."""
    return json.loads(data, object_hook=_decode)


def _encode(obj: Any) -> Any:
    if isinstance(obj, bytes):
        return {_BYTES: base64.b64encode(obj).decode("ascii")}
    if isinstance(obj, dict):
        if all(isinstance(key, str) for key in obj):
            return {key: _encode(value) for key, value in obj.items()}
        return {_MAP: [[_encode(key), _encode(value)] for key, value in obj.items()]}
    if isinstance(obj, list | tuple):
        return [_encode(item) for item in obj]
    return obj


def _decode(obj: dict[str, Any]) -> Any:
    if len(obj) == 1:
        if _BYTES in obj:
            return base64.b64decode(obj[_BYTES])
        if _MAP in obj:
            return {_hashable(key): value for key, value in obj[_MAP]}
    return obj


def _hashable(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key
