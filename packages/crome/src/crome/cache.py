"""An on-disk cache of oracle responses, keyed by hash(model, request), one file per entry.

Each entry is written atomically and carries a SHA-256 checksum of its content, so an entry
that was truncated or edited is detected, counted in `corrupted`, deleted and re-requested.
A second augmentation run over the same data therefore makes zero oracle calls.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from shared_core.atomic import atomic_write_json


def request_key(model: str, request: Any) -> str:
    """SHA-256 of the model id and the canonical JSON of the request (messages + settings)."""
    try:
        blob = json.dumps({"model": model, "request": request}, sort_keys=True, ensure_ascii=False)
    except TypeError as e:
        raise TypeError(
            f"request: expected JSON-serialisable messages and settings ({e})"
        ) from None
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _checksum(key: str, model: str, response: str) -> str:
    return hashlib.sha256(f"{key}\0{model}\0{response}".encode()).hexdigest()


class OracleCache:
    """``get(model, request) -> str | None`` and ``put(model, request, response)`` on a folder.

    Counters: `hits`, `misses`, `corrupted` (entries that failed their checksum).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"root: expected a folder path, got {type(root).__name__}")
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise ValueError(f"root: {self.root} is a file; expected a folder for the cache")
        self.root.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0
        self.corrupted = 0

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, model: str, request: Any) -> str | None:
        key = request_key(model, request)
        p = self.path(key)
        if not p.exists():
            self.misses += 1
            return None
        try:
            entry = json.loads(p.read_text(encoding="utf-8"))
            ok = (
                isinstance(entry, dict)
                and entry.get("key") == key
                and entry.get("model") == model
                and isinstance(entry.get("response"), str)
                and entry.get("checksum") == _checksum(key, model, entry["response"])
            )
        except (json.JSONDecodeError, UnicodeDecodeError, OSError):
            ok = False
        if not ok:
            self.corrupted += 1
            self.misses += 1
            p.unlink(missing_ok=True)
            return None
        self.hits += 1
        return str(entry["response"])

    def put(self, model: str, request: Any, response: str) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"model: expected a non-empty model id, got {model!r}")
        if not isinstance(response, str):
            raise TypeError(f"response: expected a string, got {type(response).__name__}")
        key = request_key(model, request)
        atomic_write_json(
            self.path(key),
            {
                "key": key,
                "model": model,
                "request": request,
                "response": response,
                "checksum": _checksum(key, model, response),
            },
        )

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json"))
