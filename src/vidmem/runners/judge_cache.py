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
differently). Only answers that pass their question's every check are stored, and a
stored answer is checked again when read; an ``unparsable`` or ``error`` result is
asked again next time.

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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from vidmem.errors import JudgeUnavailableError, StoreError
from vidmem.io.hashing import content_hash
from vidmem.models.backends.judge_common import request_problem
from vidmem.models.prompt_files import answer_schema
from vidmem.models.protocols import Judge, JudgeRequest, JudgeResult
from vidmem.runners.cache import default_cache_dir

__all__ = [
    "ANSWER_CACHE_FORMAT",
    "AnswerCache",
    "CachedJudge",
    "answer_key",
    "asked_through_cache",
    "default_judge_cache_path",
]

#: Bumped whenever vidmem's reading of an answer changes (JSON extraction, checks), so
#: answers read under old rules are not served as if read under the new ones.
ANSWER_CACHE_FORMAT = 2  # 2: answers checked against the question's accept rule

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
        "answer_schema": None if model is None else answer_schema(model),
        "payload": request.payload,
        "contract": request.contract,
        # how the reply is read and how long it may be change which answers come back
        "strict_json": request.strict_json,
        "max_tokens": request.max_tokens,
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
                    try:
                        parsed = json.loads(data)
                    except (TypeError, ValueError):  # a damaged row is a miss, asked again
                        continue
                    found[key] = JudgeResult(item_id="", status="ok", data=parsed,
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
    cannot answer, and never lets a failed question pass as an answer.

    The rules (issue "a judge that fails never yields a finished run"):

    * An answer is usable only when it passes the question's every check
      (:func:`~vidmem.models.backends.judge_common.request_problem`: required keys,
      types, answer schema and the question's own ``accept``). An ``ok`` result that
      fails them is turned into ``unparsable`` here, whatever judge produced it. A stored
      answer is checked again when read: one that fails (a tampered row, a row written
      under older rules) is a miss and asked again.
    * Each usable answer is written to the cache as soon as it arrives (questions go
      out ``batch_size`` at a time, ``concurrency`` of those at once, as the judge
      would take them), so a run killed in the middle of an item keeps what it got.
    * A question that got no answer (``status="error"``: transport, HTTP status,
      timeout) raises :class:`~vidmem.errors.JudgeUnavailableError` once every other
      question of the call is answered and stored: the item fails, the run's exit code
      says so, and ``--resume`` asks exactly the questions that got no answer. A cache
      write that fails (full disk) fails the item the same way, after every answer
      that could be written was.

    ``cache=None`` applies every rule but the storing (``--judge-cache off``).
    Cached results come back with ``cached=True``, ``attempts=0`` and the asking
    request's ``item_id``. Identical questions within one :meth:`judge_many` call are
    asked once. :meth:`info` is the wrapped judge's, so the run log names the model
    that produced the answers. Other attributes (``ping``, ``stats``...) pass through.
    """

    def __init__(self, judge: Judge, cache: AnswerCache | None) -> None:
        self.inner = judge
        self.cache = cache
        self._identity = judge_identity(judge.info().to_dict())
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(ANSWER_COUNTS, 0)
        self._sample: str | None = None

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (e.g. while unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def info(self) -> Any:
        return self.inner.info()

    def answer_counts(self) -> dict[str, int]:
        """How the questions since construction were answered: ``from_cache`` (served
        by the cache), ``asked`` (put to the judge), and of those ``unparsable`` (the
        model answered, the answer was not usable) and ``errors`` (no answer)."""
        with self._lock:
            return dict(self._counts)

    def unparsable_sample(self) -> str | None:
        """The raw text of the first unusable answer seen (for the run's health line)."""
        with self._lock:
            return self._sample

    def judge(self, request: JudgeRequest) -> JudgeResult:
        return self.judge_many([request])[0]

    def judge_many(self, requests: Sequence[JudgeRequest], *,
                   concurrency: int | None = None) -> list[JudgeResult]:
        todo = list(requests)
        keys = [answer_key(self._identity, r) for r in todo]
        known = self._stored(keys, todo)
        ask: dict[str, JudgeRequest] = {}
        for key, request in zip(keys, todo, strict=True):
            if key not in known and key not in ask:
                ask[key] = request
        answers: dict[str, JudgeResult] = {}
        write_failure: list[str] = []
        if ask:
            answers = self._ask(ask, concurrency, write_failure)
        self._tally(len([k for k in keys if k in known]), answers.values())
        failed = [r for r in answers.values() if r.status == "error"]
        if failed:
            raise JudgeUnavailableError(
                f"{self.inner.info().name}: {len(failed)} of {len(ask)} judge questions got no "
                f"answer (first: {failed[0].item_id}: {_first_line(failed[0].error)})",
                hint="check that the judge is reachable and answers (vidmem judge ping), then "
                "rerun with --resume: every answer received is kept and only the unanswered "
                "questions are asked again")
        if write_failure:
            raise StoreError(
                f"judge answer cache {self.cache.path if self.cache else '?'}: "
                f"{write_failure[0]}", hint="free space on that disk (or pass --judge-cache "
                "PATH elsewhere) and rerun with --resume; answers already stored are kept")
        out = []
        for key, request in zip(keys, todo, strict=True):
            result = known.get(key) or answers[key]
            if result.item_id != request.item_id:
                result = replace(result, item_id=request.item_id)
            out.append(result)
        return out

    def _stored(self, keys: list[str], requests: list[JudgeRequest]) -> dict[str, JudgeResult]:
        """The cached answers among ``keys`` that still pass their question's checks."""
        if self.cache is None:
            return {}
        found = self.cache.get_many(keys)
        by_key = dict(zip(keys, requests, strict=True))
        return {k: r for k, r in found.items()
                if not _answer_problem(by_key[k], r.data, self.inner)}

    def _ask(self, ask: dict[str, JudgeRequest], concurrency: int | None,
             write_failure: list[str]) -> dict[str, JudgeResult]:
        """Ask the judge in slices, storing each slice's usable answers as it returns."""
        pending = list(ask.items())
        size = max(1, int(getattr(self.inner, "batch_size", 1) or 1))
        lanes = max(1, int(concurrency or getattr(self.inner, "concurrency", 1) or 1))
        slices = [pending[i:i + size] for i in range(0, len(pending), size)]
        answers: dict[str, JudgeResult] = {}

        def one(chunk: list[tuple[str, JudgeRequest]]) -> None:
            got = self.inner.judge_many([r for _, r in chunk], concurrency=1)
            checked = {k: _checked(r, req, self.inner) for (k, req), r in zip(chunk, got, strict=True)}
            self._store(checked, ask, write_failure)
            with self._lock:
                answers.update(checked)

        if lanes == 1 or len(slices) == 1:
            for chunk in slices:
                one(chunk)
        else:
            with ThreadPoolExecutor(max_workers=min(lanes, len(slices)),
                                    thread_name_prefix="vidmem-judge-cache") as pool:
                for future in [pool.submit(one, chunk) for chunk in slices]:
                    future.result()
        return answers

    def _store(self, results: Mapping[str, JudgeResult], ask: Mapping[str, JudgeRequest],
               write_failure: list[str]) -> None:
        if self.cache is None:
            return
        try:
            self.cache.put_many((k, r, ask[k].contract) for k, r in results.items())
        except StoreError as exc:  # keep asking: the answers still reach this item's result
            with self._lock:
                if not write_failure:
                    write_failure.append(f"writing answers failed ({exc.message})")

    def _tally(self, from_cache: int, results: Iterable[JudgeResult]) -> None:
        results = list(results)
        with self._lock:
            self._counts["from_cache"] += from_cache
            self._counts["asked"] += len(results)
            for r in results:
                if r.status == "unparsable":
                    self._counts["unparsable"] += 1
                    if self._sample is None:
                        self._sample = (r.raw or r.error or "")[:500]
                elif r.status == "error":
                    self._counts["errors"] += 1


def asked_through_cache(judge: Judge, cache: str | os.PathLike[str] | AnswerCache | None) -> CachedJudge:
    """``judge`` behind a :class:`CachedJudge` over the cache file ``cache`` (``None``: no
    cache, every rule but the storing). Everything that asks a judge goes through this,
    so that no caller can read a question without an answer as an answer."""
    if cache is None or isinstance(cache, AnswerCache):
        return CachedJudge(judge, cache)
    return CachedJudge(judge, AnswerCache(cache))


#: the counts of :meth:`CachedJudge.answer_counts`.
ANSWER_COUNTS = ("from_cache", "asked", "unparsable", "errors")


def _checked(result: JudgeResult, request: JudgeRequest, judge: Any) -> JudgeResult:
    """``result``, or ``unparsable`` when an ``ok`` answer fails the question's checks."""
    if result.status != "ok":
        return result
    problem = _answer_problem(request, result.data, judge)
    if not problem:
        return result
    return replace(result, status="unparsable", data=None, error=problem)


def _answer_problem(request: JudgeRequest, data: Any, judge: Any) -> str:
    """Why ``data`` cannot answer ``request`` ('' when it can).

    A judge that reads the question's ``payload`` rather than its prompt (the sim
    world's card judges: ``answers_from_payload = True``) answers in its own documented
    shape, which each benchmark's reader knows, not in the prompt's JSON schema: only the
    question's own ``accept`` rule applies to it. Every other judge's answer must pass
    every check (:func:`~vidmem.models.backends.judge_common.request_problem`).
    """
    if getattr(judge, "answers_from_payload", False):
        if not isinstance(data, Mapping):
            return f"the answer is not a JSON object ({type(data).__name__})"
        return request.accept(data) if request.accept is not None else ""
    return request_problem(request, data)


def _first_line(text: str | None) -> str:
    return (text or "no message").strip().splitlines()[0][:300] if (text or "").strip() else "no message"


def _reopen(path: str, timeout: float) -> AnswerCache:
    return AnswerCache(path, timeout=timeout)
