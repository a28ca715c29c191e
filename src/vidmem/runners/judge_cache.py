"""The judge answer cache: a usable answer is asked for once, across runs.

A full study asks a VLM judge hundreds of thousands of questions, and a rescore, a
second run with another memory policy over the same references, or a rerun after a
crash asks many of them again. :class:`CachedJudge` wraps any
:class:`~vidmem.models.protocols.Judge` and answers a question from an
:class:`AnswerCache` (one SQLite file, shared by every run) when the same judge was
asked the same question before.

"The same question" is :func:`answer_key`: the judge backend's name, its model id and
weights fingerprint, every setting that changes answers (decoding, image encoding),
the prompt text, the SHA-256 of every image's pixels (with shape and dtype), the
required keys and types, the answer schema, the payload, the prompt template's
contract version and :data:`ANSWER_CACHE_FORMAT` (bumped when vidmem reads answers
differently). Only ``ok`` answers are stored: an ``unparsable`` or ``error`` result
is asked again next time.

SQLite rather than a folder of files (see :mod:`vidmem.runners.cache`) because one
answer is a few hundred bytes, and millions of tiny files are worse than one table.
The file is opened with a busy timeout and written in short transactions, so worker
processes share it; on a network file system whose locking is unreliable, point
``--judge-cache`` at a local disk.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vidmem.errors import StoreError
from vidmem.io.hashing import content_hash
from vidmem.models.protocols import Judge, JudgeRequest, JudgeResult
from vidmem.runners.cache import default_cache_dir

__all__ = [
    "ANSWER_CACHE_FORMAT",
    "AnswerCache",
    "CachedJudge",
    "answer_key",
    "default_judge_cache_path",
]

#: Bumped whenever vidmem's reading of an answer changes (JSON extraction, checks), so
#: answers read under old rules are not served as if read under the new ones.
ANSWER_CACHE_FORMAT = 1

#: Settings of ``info()`` that decide how a judge is reached, not what it answers.
TRANSPORT_SETTINGS = frozenset({
    "base_url", "timeout_seconds", "max_retries", "max_total_seconds", "concurrency",
})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    judge TEXT NOT NULL,
    contract TEXT NOT NULL,
    data TEXT NOT NULL,
    raw TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def default_judge_cache_path() -> Path:
    """``$VIDMEM_JUDGE_CACHE`` when set, else ``judge-answers.sqlite`` in the user cache
    folder (``$VIDMEM_CACHE_DIR``, default ``~/.cache/vidmem``)."""
    env = os.environ.get("VIDMEM_JUDGE_CACHE", "").strip()
    return Path(env).expanduser() if env else default_cache_dir() / "judge-answers.sqlite"


def judge_identity(info: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a judge's ``info().to_dict()`` that decides its answers.

    Example:
        >>> judge_identity({"name": "judge/openai", "weights": None, "weights_sha256": None,
        ...     "device": "remote", "dtype": "n/a", "official": False,
        ...     "settings": {"model": "qwen", "temperature": 0.0, "base_url": "http://a/v1"}})
        {'name': 'judge/openai', 'weights_sha256': None, 'dtype': 'n/a', 'settings': {'model': 'qwen', 'temperature': 0.0}}
    """
    settings = {k: v for k, v in dict(info.get("settings") or {}).items()
                if k not in TRANSPORT_SETTINGS}
    # the weights' hash, not their path: a model moved elsewhere answers the same
    identity = {"name": info.get("name"), "weights_sha256": info.get("weights_sha256"),
                "dtype": info.get("dtype"), "settings": settings}
    if info.get("weights_sha256") is None and info.get("weights") is not None:
        identity["weights"] = info.get("weights")
    return identity


def answer_key(identity: Mapping[str, Any], request: JudgeRequest) -> str:
    """The content hash that names one (judge, question) pair.

    Example:
        >>> import numpy as np
        >>> who = {"name": "judge/x", "settings": {"temperature": 0.0}}
        >>> a = JudgeRequest("item-1", "Is it red?", images=(np.zeros((2, 2, 3), np.uint8),))
        >>> b = JudgeRequest("item-2", "Is it red?", images=(np.zeros((2, 2, 3), np.uint8),))
        >>> c = JudgeRequest("item-1", "Is it red?", images=(np.ones((2, 2, 3), np.uint8),))
        >>> answer_key(who, a) == answer_key(who, b), answer_key(who, a) == answer_key(who, c)
        (True, False)
    """
    model = request.answer_model
    return content_hash({
        "format": ANSWER_CACHE_FORMAT,
        "judge": dict(identity),
        "prompt": request.prompt,
        "images": list(request.images),  # hashed by pixels, shape and dtype
        "required_keys": list(request.required_keys),
        "key_types": {k: list(v) for k, v in request.key_types.items()},
        "answer_schema": None if model is None else model.model_json_schema(),
        "payload": request.payload,
        "contract": request.contract,
    }, length=64)


class AnswerCache:
    """Usable judge answers by :func:`answer_key`, in one SQLite file.

    Args:
        path: the database file (created with its folder when missing).
        timeout: seconds to wait for another process's write to finish.

    Example:
        >>> import tempfile
        >>> cache = AnswerCache(Path(tempfile.mkdtemp()) / "answers.sqlite")
        >>> r = JudgeResult("item-1", "ok", {"present": True}, '{"present": true}', 1, "judge/x")
        >>> cache.put_many([("k1", r, "")])
        1
        >>> cache.get_many(["k1", "k2"])["k1"].data, len(cache)
        ({'present': True}, 1)
    """

    def __init__(self, path: str | Path, *, timeout: float = 60.0) -> None:
        self.path = Path(path).expanduser()
        self.timeout = float(timeout)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=self.timeout,
                                         check_same_thread=False, isolation_level=None)
            self._conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            self._conn.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"judge answer cache {self.path}: cannot open it ({exc})",
                hint="pass --judge-cache PATH on a writable local disk, or --judge-cache off",
            ) from None

    def __reduce__(self) -> tuple[Callable[..., AnswerCache], tuple[str, float]]:
        # a worker process opens its own connection to the same file
        return (_reopen, (str(self.path), self.timeout))

    def __repr__(self) -> str:
        return f"AnswerCache({str(self.path)!r})"

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM answers").fetchone()[0])

    def get_many(self, keys: Iterable[str]) -> dict[str, JudgeResult]:
        """The stored answers among ``keys`` (``item_id`` is filled in by the caller)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, JudgeResult] = {}
        with self._lock:
            for start in range(0, len(wanted), 500):  # SQLite's bound-parameter limit
                chunk = wanted[start:start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._query(f"SELECT key, judge, data, raw FROM answers WHERE key IN ({marks})",
                                   chunk)
                for key, judge, data, raw in rows:
                    found[key] = JudgeResult(item_id="", status="ok", data=json.loads(data),
                                             raw=raw, attempts=0, judge=judge, cached=True)
        return found

    def put_many(self, entries: Iterable[tuple[str, JudgeResult, str]]) -> int:
        """Store ``(key, result, contract)`` for every ``ok`` result; return how many."""
        rows = [(key, r.judge, contract, json.dumps(r.data, sort_keys=True), r.raw, time.time())
                for key, r, contract in entries if r.status == "ok" and r.data is not None]
        if not rows:
            return 0
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.executemany(
                    "INSERT OR REPLACE INTO answers (key, judge, contract, data, raw, created) "
                    "VALUES (?, ?, ?, ?, ?, ?)", rows)
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise self._error(exc, "writing") from None
        return len(rows)

    def _query(self, sql: str, params: Sequence[Any]) -> list[tuple]:
        try:
            return self._conn.execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise self._error(exc, "reading") from None

    def _error(self, exc: sqlite3.Error, doing: str) -> StoreError:
        return StoreError(
            f"judge answer cache {self.path}: {doing} failed ({exc})",
            hint="another process may hold it locked for long, or it is damaged: delete it "
            "(answers are asked again) or pass --judge-cache with another path",
        )

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class CachedJudge:
    """A :class:`~vidmem.models.protocols.Judge` that asks ``judge`` only what ``cache``
    cannot answer.

    Cached results come back with ``cached=True``, ``attempts=0`` and the asking
    request's ``item_id``. Identical questions within one :meth:`judge_many` call are
    asked once. :meth:`info` is the wrapped judge's, so the run log names the model
    that produced the answers. Other attributes (``ping``, ``stats``...) pass through.
    """

    def __init__(self, judge: Judge, cache: AnswerCache) -> None:
        self.inner = judge
        self.cache = cache
        self._identity = judge_identity(judge.info().to_dict())
        self._lock = threading.Lock()
        self._hits = 0
        self._asked = 0

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (e.g. while unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def info(self) -> Any:
        return self.inner.info()

    def answer_counts(self) -> dict[str, int]:
        """``{"from_cache": answers served by the cache, "asked": questions put to the
        judge}`` since construction."""
        with self._lock:
            return {"from_cache": self._hits, "asked": self._asked}

    def judge(self, request: JudgeRequest) -> JudgeResult:
        return self.judge_many([request])[0]

    def judge_many(self, requests: Sequence[JudgeRequest], *,
                   concurrency: int | None = None) -> list[JudgeResult]:
        todo = list(requests)
        keys = [answer_key(self._identity, r) for r in todo]
        known = self.cache.get_many(keys)
        ask: dict[str, JudgeRequest] = {}
        for key, request in zip(keys, todo, strict=True):
            if key not in known and key not in ask:
                ask[key] = request
        answers: dict[str, JudgeResult] = {}
        if ask:
            got = self.inner.judge_many(list(ask.values()), concurrency=concurrency)
            answers = dict(zip(ask, got, strict=True))
            self.cache.put_many((k, r, ask[k].contract) for k, r in answers.items())
        with self._lock:
            self._hits += sum(1 for k in keys if k in known)
            self._asked += len(ask)
        out = []
        for key, request in zip(keys, todo, strict=True):
            result = known.get(key) or answers[key]
            if result.item_id != request.item_id:
                result = _for_item(result, request.item_id)
            out.append(result)
        return out


def _reopen(path: str, timeout: float) -> AnswerCache:
    return AnswerCache(path, timeout=timeout)


def _for_item(result: JudgeResult, item_id: str) -> JudgeResult:
    from dataclasses import replace

    return replace(result, item_id=item_id)
