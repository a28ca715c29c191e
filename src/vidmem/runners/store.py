"""Run directories and the per-item SQLite store that makes runs resumable.

A run directory holds::

    run.json        the manifest (:class:`RunManifest`): versions, config, backends,
                    seeds, protocol choices, status and counts
    items.sqlite    one row per request (:class:`ItemStore`): request, response,
                    score, status ('done' | 'error'), error message, attempts
    scores.jsonl    the per-item scores, written when a run finishes
    report/         tables, plots and HTML made from the files above

Rules for reusing a directory (:meth:`RunDir.create`):

* a new or empty directory is created;
* a directory holding a run with the *same* configuration is reopened: a complete
  run as it is (every item is a cache hit), an unfinished one (``running`` after a
  kill, or ``failed``) only with ``resume=True``;
* a directory holding a run with a *different* configuration is refused, naming the
  differing keys, unless ``overwrite=True`` (which deletes the old run's files);
* a ``run.json`` written by a newer vidmem (higher ``schema_version``) is refused.

Each process opens its own :class:`ItemStore`; the database runs in WAL mode with a
busy timeout, and every write is one short ``BEGIN IMMEDIATE`` transaction, so
several worker processes can write to one store at the same time.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

import vidmem
from vidmem.errors import StoreError, UserInputError
from vidmem.io.hashing import content_hash
from vidmem.io.jsonl import read_jsonl, write_jsonl

__all__ = [
    "ITEMS_DB",
    "REPORT_DIR",
    "RUN_JSON",
    "RUN_SCHEMA_VERSION",
    "SCORES_JSONL",
    "STORE_SCHEMA_VERSION",
    "BackendRecord",
    "ItemStore",
    "RunDir",
    "RunManifest",
    "StoredItem",
    "UnstorableValueError",
    "git_revision",
    "read_manifest",
    "to_json_text",
    "utc_now",
]

RUN_SCHEMA_VERSION = 1
"""Version of the ``run.json`` layout; bump it (and add a migration) on any change."""

STORE_SCHEMA_VERSION = 1
"""Version of the ``items.sqlite`` tables, kept in its ``meta`` table."""

RUN_JSON = "run.json"
ITEMS_DB = "items.sqlite"
SCORES_JSONL = "scores.jsonl"
REPORT_DIR = "report"

RunStatus = Literal["running", "complete", "failed"]
ItemStatus = Literal["done", "error"]

_ITEM_STATUSES = ("done", "error")
_T = TypeVar("_T")


class UnstorableValueError(StoreError):
    """A value that cannot be stored as strict JSON (NaN, infinity, or a non-JSON type)."""


# --------------------------------------------------------------------------- helpers


def utc_now() -> str:
    """The current UTC time as an ISO 8601 string with second precision.

    Example:
        >>> utc_now().endswith("+00:00")
        True
    """
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


@cache
def git_revision() -> str | None:
    """The git commit of the vidmem source tree, or ``None``.

    Returns ``None`` (never raises) when vidmem is not running from a git checkout,
    when git is not installed, or when the package sits untracked inside some other
    repository (e.g. a virtual environment inside a project).
    """
    try:
        pkg = Path(vidmem.__file__).resolve().parent
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=pkg,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            env=env,
        )
        if rev.returncode != 0:
            return None
        tracked = subprocess.run(
            ["git", "ls-files", "--error-unmatch", "--", "__init__.py"],
            cwd=pkg,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            env=env,
        )
        if tracked.returncode != 0:
            return None
        text = rev.stdout.strip()
        if len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text):
            return text
    except Exception:  # noqa: BLE001 - provenance is best effort and must never fail a run
        return None
    return None


def _json_default(obj: Any) -> Any:
    """Turn numpy scalars/arrays and paths into plain JSON values."""
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"object of type {type(obj).__name__} is not JSON-serialisable")


def _find_bad_value(obj: Any, where: str) -> str | None:
    """Path (like ``score['recall'][2]``) of the first NaN/inf or non-JSON value."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, (str, int)):
        return None
    if isinstance(obj, (float, np.floating)):
        return None if math.isfinite(float(obj)) else f"{where} = {float(obj)!r}"
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "fc" and not np.isfinite(obj).all():
            return f"{where} (array with non-finite values)"
        return None
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            found = _find_bad_value(v, f"{where}[{k!r}]")
            if found:
                return found
        return None
    if isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            found = _find_bad_value(v, f"{where}[{i}]")
            if found:
                return found
        return None
    if isinstance(obj, (np.integer, np.bool_, Path)):
        return None
    return f"{where} (a {type(obj).__name__}, not JSON)"


def to_json_text(value: Any, *, where: str) -> str:
    """Encode ``value`` as strict JSON (no NaN/inf), naming ``where`` on failure.

    numpy scalars and arrays become plain numbers and lists; ``Path`` becomes a string.

    Raises:
        UnstorableValueError: the value holds NaN/infinity or a non-JSON type.

    Example:
        >>> to_json_text({"b": 1, "a": [1.5, None]}, where="score")
        '{"a":[1.5,null],"b":1}'
    """
    try:
        return json.dumps(
            value,
            allow_nan=False,
            default=_json_default,
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
    except (ValueError, TypeError) as exc:
        bad = _find_bad_value(value, where) or where
        if isinstance(exc, ValueError) and "JSON compliant" in str(exc):
            raise UnstorableValueError(
                f"{bad}: expected a finite number, found NaN or infinity; "
                "vidmem never stores NaN silently",
                hint="return None (JSON null) for an undefined value, or fix the computation",
            ) from None
        raise UnstorableValueError(
            f"{bad}: expected JSON data (dict, list, str, number, bool, None), found: {exc}",
            hint="convert the value to plain Python data before returning it",
        ) from None


def _plain_json(value: Any, *, where: str) -> Any:
    """Round-trip ``value`` through strict JSON (numpy -> Python, tuples -> lists)."""
    try:
        return json.loads(to_json_text(value, where=where))
    except UnstorableValueError as exc:
        raise UserInputError(exc.message, hint=exc.hint) from None


def _short(value: Any, limit: int = 60) -> str:
    text = "(absent)" if value is _MISSING else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


_MISSING = object()


def _diff_mapping(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str) -> list[str]:
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, _MISSING), new.get(key, _MISSING)
        if a is _MISSING or b is _MISSING or content_hash(a) != content_hash(b):
            out.append(f"{prefix}{key} ({_short(a)} -> {_short(b)})")
    return out


# -------------------------------------------------------------------------- manifest


class BackendRecord(BaseModel):
    """What ``run.json`` records about one backend (mirrors ``models.BackendInfo``)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    weights: str | None = None
    weights_sha256: str | None = None
    device: str = "cpu"
    dtype: str = "float32"
    official: bool = False
    settings: dict[str, Any] = Field(default_factory=dict)

    @field_validator("settings", mode="before")
    @classmethod
    def _settings_json(cls, v: Any) -> Any:
        return _plain_json(v, where="backend settings") if isinstance(v, Mapping) else v


def _backend_dict(value: Any) -> Any:
    """Accept a ``BackendInfo`` (anything with ``to_dict``) where a record is expected."""
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else value


class RunManifest(BaseModel):
    """The contents of ``run.json``.

    Build one with the fields that define the run; provenance fields fill themselves::

        RunManifest(benchmark="cmbench", benchmark_version="1.0",
                    config={"generator": "sim", "n_cases": 20}, seeds={"sim": 0})

    ``config`` is the run's identity: everything that changes the results should be in
    it (``benchmark``, ``benchmark_version``, ``seeds`` and ``protocol`` are compared
    too). ``config``, ``seeds`` and ``protocol`` are normalised to plain JSON (numpy
    values become numbers, tuples become lists) and ``config_hash`` is
    ``content_hash(config)`` of the normalised config.

    Attributes:
        schema_version: layout version of this file (:data:`RUN_SCHEMA_VERSION`).
        vidmem_version: the vidmem that wrote the run.
        git_revision: commit of the vidmem checkout, ``None`` for an installed package.
        created_at: UTC ISO time the run was first started.
        command: the command line (``sys.argv`` by default).
        benchmark: benchmark name, e.g. ``cmbench``.
        benchmark_version: version of the benchmark's data and protocol.
        config: every setting that changes the results (JSON data).
        config_hash: ``content_hash(config)``; filled in when empty.
        seeds: named random seeds.
        backends: backend name -> :class:`BackendRecord` (weights path and hash...).
        protocol: the protocol choices made (e.g. which judge, which thresholds).
        status: ``running`` | ``complete`` | ``failed``.
        counts: item counts (total, done, error...).
        finished_at: UTC ISO time the run completed or failed, else ``None``.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: int = RUN_SCHEMA_VERSION
    vidmem_version: str = Field(default_factory=lambda: vidmem.__version__)
    git_revision: str | None = Field(default_factory=git_revision)
    created_at: str = Field(default_factory=utc_now)
    command: list[str] = Field(default_factory=lambda: [str(a) for a in sys.argv])
    benchmark: str
    benchmark_version: str
    config: dict[str, Any] = Field(default_factory=dict)
    config_hash: str = ""
    seeds: dict[str, Any] = Field(default_factory=dict)
    backends: dict[str, BackendRecord] = Field(default_factory=dict)
    protocol: dict[str, Any] = Field(default_factory=dict)
    status: RunStatus = "running"
    counts: dict[str, int] = Field(default_factory=dict)
    finished_at: str | None = None

    @field_validator("config", "seeds", "protocol", mode="before")
    @classmethod
    def _json_data(cls, v: Any, info: Any) -> Any:
        if isinstance(v, Mapping):
            return _plain_json(dict(v), where=f"run {info.field_name}")
        return v

    @field_validator("backends", mode="before")
    @classmethod
    def _backends(cls, v: Any) -> Any:
        if isinstance(v, Mapping):
            return {str(k): _backend_dict(b) for k, b in v.items()}
        return v

    @field_validator("schema_version")
    @classmethod
    def _schema(cls, v: int) -> int:
        if v != RUN_SCHEMA_VERSION:
            raise ValueError(f"this vidmem reads schema_version {RUN_SCHEMA_VERSION}, found {v}")
        return v

    @model_validator(mode="after")
    def _hash_config(self) -> RunManifest:
        digest = content_hash(self.config)
        if not self.config_hash:
            self.config_hash = digest
        elif self.config_hash != digest:
            raise ValueError(
                f"config_hash {self.config_hash!r} does not match the config, which hashes to "
                f"{digest!r} (was run.json edited by hand?)"
            )
        return self

    def to_json(self) -> str:
        """The manifest as indented strict JSON text (what ``run.json`` holds)."""
        data = self.model_dump(mode="json")
        return json.dumps(data, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def read_manifest(path: str | Path) -> RunManifest:
    """Read and validate a ``run.json`` file (or the one inside a run directory).

    Raises:
        StoreError: the file is missing, not JSON, written by a newer vidmem, or invalid.
    """
    p = Path(path)
    if p.is_dir():
        p = p / RUN_JSON
    fix = "restore run.json from a backup, or start again with --overwrite or a new --out"
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StoreError(
            f"{p}: no run.json found; this is not a vidmem run directory",
            hint="pass the directory a `vidmem run` or `vidmem score` wrote (its --out)",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"{p}: cannot read run.json ({exc})", hint=fix) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(
            f"{p}: expected a JSON object, found invalid JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno}); the file may have been truncated or edited",
            hint=fix,
        ) from None
    if not isinstance(data, dict):
        raise StoreError(f"{p}: expected a JSON object, found {type(data).__name__}", hint=fix)
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise StoreError(f"{p}: expected an integer 'schema_version', found {version!r}", hint=fix)
    if version > RUN_SCHEMA_VERSION:
        raise StoreError(
            f"{p}: written by a newer vidmem (schema {version}); this vidmem "
            f"{vidmem.__version__} reads up to {RUN_SCHEMA_VERSION}",
            hint="upgrade vidmem (pip install -U vidmem) to read this run",
        )
    try:
        return RunManifest.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(x) for x in err['loc']) or '(top level)'}: {err['msg']}"
            for err in exc.errors()[:5]
        )
        raise StoreError(f"{p}: not a valid run manifest: {problems}", hint=fix) from None
    except UserInputError as exc:
        raise StoreError(f"{p}: not a valid run manifest: {exc.message}", hint=fix) from None


# ------------------------------------------------------------------------ item store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS items (
    key TEXT PRIMARY KEY,
    item_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT,
    score TEXT,
    status TEXT NOT NULL CHECK (status IN ('done', 'error')),
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS items_status ON items (status);
CREATE INDEX IF NOT EXISTS items_kind ON items (kind);
"""

_COLUMNS = (
    "key",
    "item_id",
    "kind",
    "request",
    "response",
    "score",
    "status",
    "error",
    "attempts",
    "updated_at",
)

_UPSERT = """
INSERT INTO items (key, item_id, kind, request, response, score, status, error, attempts, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?)
ON CONFLICT (key) DO UPDATE SET
    item_id = excluded.item_id,
    kind = excluded.kind,
    request = excluded.request,
    response = excluded.response,
    score = excluded.score,
    status = excluded.status,
    error = excluded.error,
    attempts = items.attempts + 1,
    updated_at = excluded.updated_at
"""

_PUT_FIELDS = frozenset(
    {"key", "item_id", "kind", "request", "response", "score", "status", "error"}
)


@dataclass(frozen=True)
class StoredItem:
    """One row of the item store, with its JSON columns decoded.

    Attributes:
        key: the request's content hash (primary key).
        item_id: the benchmark's id for the item (case, clip, question...).
        kind: what the request asks for (``embed``, ``detect``, ``judge``...).
        request: the request data.
        response: the response data (``None`` for an error).
        score: the per-item score data (``None`` for an error or when unscored).
        status: ``done`` or ``error``.
        error: the error message when ``status == 'error'``.
        attempts: how many times the row was written.
        updated_at: Unix time (seconds) of the last write.
    """

    key: str
    item_id: str
    kind: str
    request: Any
    response: Any
    score: Any
    status: str
    error: str | None
    attempts: int
    updated_at: float


def _reopen_store(path: str, timeout: float) -> ItemStore:
    return ItemStore(path, timeout=timeout)


class ItemStore:
    """Per-item requests, responses and scores in one SQLite file.

    Open one ``ItemStore`` per process (pickling an ``ItemStore`` sends its path, and
    the receiving process opens its own connection). Writes are short ``BEGIN
    IMMEDIATE`` transactions; the database uses WAL journaling and waits up to
    ``timeout`` seconds for another writer, so several processes may write at once.

    Args:
        path: the ``items.sqlite`` file.
        timeout: seconds to wait for a lock held by another process.
        create: create the file when it does not exist (else raise).

    Raises:
        StoreError: the file is missing (``create=False``), is not a SQLite database,
            is corrupt, belongs to a newer vidmem, or stays locked.

    Example:
        >>> import tempfile, os
        >>> with tempfile.TemporaryDirectory() as d, ItemStore(os.path.join(d, "items.sqlite")) as s:
        ...     s.put("k1", item_id="case-1", kind="embed", request={"frame": 3}, score={"sim": 0.5})
        ...     (s.get("k1").score, s.done_keys(), s.counts()["done"])
        ({'sim': 0.5}, {'k1'}, 1)
    """

    def __init__(self, path: str | Path, *, timeout: float = 60.0, create: bool = True) -> None:
        self.path = Path(path)
        self.timeout = float(timeout)
        if self.path.is_dir():
            raise StoreError(
                f"{self.path}: expected a SQLite file for the item store, found a directory",
                hint="point at the items.sqlite file inside the run directory",
            )
        if not create and not self.path.is_file():
            raise StoreError(
                f"{self.path}: the item store does not exist",
                hint="rerun with --resume to rebuild it (items are recomputed), "
                "or restore the file from a backup",
            )
        try:
            self._conn: sqlite3.Connection | None = sqlite3.connect(
                str(self.path), timeout=self.timeout, isolation_level=None
            )
        except sqlite3.Error as exc:
            raise self._error(exc, "opening the item store") from None
        try:
            self._setup()
        except sqlite3.Error as exc:
            self.close()
            raise self._error(exc, "opening the item store") from None
        except BaseException:
            self.close()
            raise

    # -- plumbing -------------------------------------------------------------------

    def __reduce__(self) -> tuple[Callable[..., ItemStore], tuple[str, float]]:
        return _reopen_store, (str(self.path), self.timeout)

    def __enter__(self) -> ItemStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ItemStore({str(self.path)!r})"

    def close(self) -> None:
        """Close this process's connection (safe to call twice)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @property
    def conn(self) -> sqlite3.Connection:
        """The open connection (raises :class:`StoreError` after :meth:`close`)."""
        if self._conn is None:
            raise StoreError(
                f"{self.path}: the item store was closed",
                hint="open a new ItemStore(path) in this process",
            )
        return self._conn

    def _error(self, exc: sqlite3.Error, doing: str) -> StoreError:
        msg = str(exc)
        low = msg.lower()
        if "locked" in low or "busy" in low:
            return StoreError(
                f"{self.path}: the item store stayed locked for more than {self.timeout:.0f} s "
                f"while {doing} ({msg})",
                hint="another process is writing to this run; wait for it to finish, or "
                "use a different --out",
            )
        if "unable to open" in low:
            return StoreError(
                f"{self.path}: cannot open the item store while {doing} ({msg})",
                hint="check that the directory exists and is writable",
            )
        corrupt = ("not a database", "malformed", "corrupt", "no such table", "no such column")
        if any(word in low for word in corrupt) or not isinstance(exc, sqlite3.OperationalError):
            return StoreError(
                f"{self.path}: expected a vidmem item store (SQLite), found a file that is "
                f"not a SQLite database or is corrupt ({msg}) while {doing}",
                hint=f"delete {self.path.name} (and any {self.path.name}-wal / -shm next to "
                "it) and rerun with --resume to recompute the items, or restore it from a "
                "backup",
            )
        return StoreError(
            f"{self.path}: SQLite error while {doing}: {msg}",
            hint="check free disk space and permissions of the run directory",
        )

    def _retry_locked(self, fn: Callable[[], _T]) -> _T:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc).lower() or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    @contextmanager
    def _write(self, doing: str) -> Iterator[sqlite3.Connection]:
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._error(exc, doing) from None
        try:
            yield conn
        except BaseException as exc:
            with suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise self._error(exc, doing) from None
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            with suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            raise self._error(exc, doing) from None

    def _query(self, sql: str, params: tuple[Any, ...] = (), *, doing: str) -> list[tuple]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._error(exc, doing) from None

    def _setup(self) -> None:
        conn = self.conn
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        self._retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone())
        conn.execute("PRAGMA synchronous = NORMAL")
        exists = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('meta', 'items')"
        ).fetchone()[0]
        if exists < 2:
            with self._write("creating the item store tables"):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "INSERT OR IGNORE INTO meta (name, value) VALUES ('schema_version', ?)",
                    (str(STORE_SCHEMA_VERSION),),
                )
                conn.execute(
                    "INSERT OR IGNORE INTO meta (name, value) VALUES ('created_by', ?)",
                    (f"vidmem {vidmem.__version__}",),
                )
        row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
        found = row[0] if row else None
        try:
            version = int(found) if found is not None else None
        except ValueError:
            version = None
        if version is None:
            raise StoreError(
                f"{self.path}: expected a vidmem item store with a schema_version in its meta "
                f"table, found {found!r}",
                hint=f"delete {self.path.name} and rerun with --resume, or restore it",
            )
        if version > STORE_SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: written by a newer vidmem (store schema {version}); this vidmem "
                f"{vidmem.__version__} reads up to {STORE_SCHEMA_VERSION}",
                hint="upgrade vidmem (pip install -U vidmem)",
            )
        columns = {r[1] for r in conn.execute("PRAGMA table_info(items)").fetchall()}
        missing = [c for c in _COLUMNS if c not in columns]
        if missing:
            raise StoreError(
                f"{self.path}: expected an 'items' table with columns {list(_COLUMNS)}, "
                f"found one without {missing}",
                hint=f"this is not a vidmem item store; delete {self.path.name} or use a "
                "different --out",
            )

    # -- encoding -------------------------------------------------------------------

    @staticmethod
    def _encode_row(
        key: Any,
        *,
        item_id: Any,
        kind: Any,
        request: Any,
        response: Any = None,
        score: Any = None,
        status: str = "done",
        error: str | None = None,
    ) -> tuple[Any, ...]:
        for name, value in (("key", key), ("item_id", item_id), ("kind", kind)):
            if not isinstance(value, str) or not value:
                raise UserInputError(
                    f"item store put: expected '{name}' to be a non-empty string, "
                    f"found {value!r} (item {item_id!r})",
                    hint="pass WorkItem-style values: key=content hash, item_id and kind strings",
                )
        if status not in _ITEM_STATUSES:
            raise UserInputError(
                f"item {item_id!r}: expected status 'done' or 'error', found {status!r}"
            )
        if status == "error" and not error:
            error = "unknown error"
        where = f"item {item_id!r} (kind {kind!r}, key {key})"
        return (
            key,
            item_id,
            kind,
            to_json_text(request, where=f"{where}: request"),
            to_json_text(response, where=f"{where}: response"),
            to_json_text(score, where=f"{where}: score"),
            status,
            None if error is None else str(error),
            time.time(),
        )

    @staticmethod
    def _decode(row: tuple) -> StoredItem:
        key, item_id, kind, request, response, score, status, error, attempts, updated = row
        return StoredItem(
            key=key,
            item_id=item_id,
            kind=kind,
            request=json.loads(request),
            response=None if response is None else json.loads(response),
            score=None if score is None else json.loads(score),
            status=status,
            error=error,
            attempts=int(attempts),
            updated_at=float(updated),
        )

    # -- API ------------------------------------------------------------------------

    def put(
        self,
        key: str,
        *,
        item_id: str,
        kind: str,
        request: Any,
        response: Any = None,
        score: Any = None,
        status: ItemStatus = "done",
        error: str | None = None,
    ) -> None:
        """Insert or replace one item (one short transaction).

        Args:
            key: the request's content hash.
            item_id: the benchmark's id for the item.
            kind: what the request asks for.
            request: JSON data (numpy scalars/arrays are converted).
            response: JSON data, ``None`` for errors.
            score: JSON data, ``None`` for errors or unscored items.
            status: ``done`` or ``error``.
            error: the error message for ``status='error'``.

        Raises:
            UnstorableValueError: a value holds NaN/inf or is not JSON; names the item.
            StoreError: the database cannot be written.
        """
        row = self._encode_row(
            key,
            item_id=item_id,
            kind=kind,
            request=request,
            response=response,
            score=score,
            status=status,
            error=error,
        )
        with self._write(f"saving item {item_id!r}") as conn:
            conn.execute(_UPSERT, row)

    def put_many(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Insert or replace several items in one transaction; return how many.

        Each row is a mapping with the keyword arguments of :meth:`put` plus ``key``.
        Every row is encoded before anything is written, so a bad row writes nothing.
        """
        encoded = []
        for i, row in enumerate(rows):
            unknown = set(row) - _PUT_FIELDS
            if unknown or "key" not in row:
                raise UserInputError(
                    f"item store put_many: row {i}: expected fields {sorted(_PUT_FIELDS)}, "
                    f"found unknown {sorted(unknown)}" + ("" if "key" in row else " and no 'key'")
                )
            fields = dict(row)
            key = fields.pop("key")
            encoded.append(self._encode_row(key, **fields))
        if encoded:
            with self._write(f"saving {len(encoded)} items") as conn:
                conn.executemany(_UPSERT, encoded)
        return len(encoded)

    def get(self, key: str) -> StoredItem | None:
        """The stored item for ``key``, or ``None``."""
        rows = self._query(
            f"SELECT {', '.join(_COLUMNS)} FROM items WHERE key = ?", (key,), doing="reading"
        )
        return self._decode(rows[0]) if rows else None

    def done_keys(self) -> set[str]:
        """Keys of all items with status ``done`` (errors are not included: they are retried)."""
        rows = self._query("SELECT key FROM items WHERE status = 'done'", doing="reading")
        return {r[0] for r in rows}

    def iter_items(
        self, kind: str | None = None, status: ItemStatus | None = None
    ) -> Iterator[StoredItem]:
        """Yield stored items ordered by ``(item_id, key)``, optionally filtered."""
        where, params = [], []
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        if status is not None:
            if status not in _ITEM_STATUSES:
                raise UserInputError(
                    f"iter_items: expected status 'done' or 'error', found {status!r}"
                )
            where.append("status = ?")
            params.append(status)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM items"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY item_id, key"
        try:
            cursor = self.conn.execute(sql, tuple(params))
            while batch := cursor.fetchmany(500):
                for row in batch:
                    yield self._decode(row)
        except sqlite3.Error as exc:
            raise self._error(exc, "reading items") from None

    def counts(self, kind: str | None = None) -> dict[str, int]:
        """``{"total": n, "done": d, "error": e}``, for one kind or all."""
        sql = "SELECT status, count(*) FROM items"
        params: tuple[Any, ...] = ()
        if kind is not None:
            sql += " WHERE kind = ?"
            params = (kind,)
        rows = self._query(sql + " GROUP BY status", params, doing="counting items")
        out = {"total": 0, "done": 0, "error": 0}
        for status, n in rows:
            out[status] = int(n)
            out["total"] += int(n)
        return out

    def __len__(self) -> int:
        return self.counts()["total"]

    def integrity_check(self) -> list[str]:
        """Problems SQLite's ``PRAGMA integrity_check`` reports (empty when healthy)."""
        rows = self._query("PRAGMA integrity_check", doing="checking integrity")
        problems = [r[0] for r in rows]
        return [] if problems == ["ok"] else problems


# --------------------------------------------------------------------------- run dir

_RUN_FILES = (
    RUN_JSON,
    ITEMS_DB,
    f"{ITEMS_DB}-wal",
    f"{ITEMS_DB}-shm",
    f"{ITEMS_DB}-journal",
    SCORES_JSONL,
    f"{SCORES_JSONL}.tmp",
)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StoreError(
            f"{path}: cannot write ({exc})",
            hint="check free disk space and permissions of the run directory",
        ) from None


def _identity_diff(old: RunManifest, new: RunManifest) -> list[str]:
    diffs = _diff_mapping(old.config, new.config, "")
    for name in ("benchmark", "benchmark_version"):
        a, b = getattr(old, name), getattr(new, name)
        if a != b:
            diffs.append(f"{name} ({_short(a)} -> {_short(b)})")
    diffs += _diff_mapping(old.seeds, new.seeds, "seeds.")
    diffs += _diff_mapping(old.protocol, new.protocol, "protocol.")
    return diffs


def _backend_conflicts(
    old: Mapping[str, BackendRecord], new: Mapping[str, BackendRecord]
) -> list[str]:
    out = []
    for name in sorted(set(old) & set(new)):
        a, b = old[name], new[name]
        for field in ("weights_sha256", "dtype"):
            if getattr(a, field) != getattr(b, field):
                out.append(f"{name}.{field} ({getattr(a, field)!r} -> {getattr(b, field)!r})")
        if content_hash(a.settings) != content_hash(b.settings):
            out.append(f"{name}.settings ({_short(a.settings)} -> {_short(b.settings)})")
    return out


class RunDir:
    """A run directory: ``run.json``, ``items.sqlite``, ``scores.jsonl``, ``report/``.

    Make one with :meth:`create` (to run) or :meth:`open` (to read or report).

    Attributes:
        path: the directory.
        manifest: the current :class:`RunManifest` (updated by the ``set_*`` methods).
        state: how :meth:`create` found the directory: ``"new"`` (created or
            overwritten), ``"resumed"`` (an unfinished run continued) or ``"complete"``
            (a finished run reopened; every item is a cache hit). ``"opened"`` for
            :meth:`open`.
    """

    def __init__(self, path: Path, manifest: RunManifest, state: str) -> None:
        self.path = path
        self.manifest = manifest
        self.state = state

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r}, state={self.state!r}, status={self.manifest.status!r})"

    # -- paths ----------------------------------------------------------------------

    @property
    def run_json(self) -> Path:
        """Path of ``run.json``."""
        return self.path / RUN_JSON

    @property
    def items_path(self) -> Path:
        """Path of ``items.sqlite``."""
        return self.path / ITEMS_DB

    @property
    def scores_path(self) -> Path:
        """Path of ``scores.jsonl``."""
        return self.path / SCORES_JSONL

    @property
    def report_dir(self) -> Path:
        """Path of the ``report/`` folder."""
        return self.path / REPORT_DIR

    # -- opening --------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | Path,
        manifest: RunManifest,
        *,
        resume: bool = False,
        overwrite: bool = False,
    ) -> RunDir:
        """Create a run directory, or reopen one that holds the same run.

        Args:
            path: the run directory (the CLI's ``--out``).
            manifest: the manifest of the run about to start.
            resume: continue an unfinished run with the same configuration.
            overwrite: delete the files of any run already in ``path`` first (files
                vidmem did not write are left alone).

        Returns:
            The run directory; ``state`` says whether it is new, resumed or complete.

        Raises:
            StoreError: ``path`` is a file; it holds other files but no run; it holds a
                run with a different configuration or backends; it holds an unfinished
                run and ``resume`` is false; its ``run.json`` is unreadable, invalid or
                from a newer vidmem (unless ``overwrite``); or the store is corrupt.
        """
        root = Path(path)
        if root.exists() and not root.is_dir():
            raise StoreError(
                f"{root}: expected a run directory, found a file",
                hint="choose a new --out directory",
            )
        if overwrite and root.is_dir():
            cls._remove_run_files(root)
        run_json = root / RUN_JSON
        if not run_json.exists():
            return cls._create_new(root, manifest, overwrite=overwrite)

        old = read_manifest(run_json)
        diffs = _identity_diff(old, manifest)
        if diffs:
            raise StoreError(
                f"{root}: this directory holds a run with a different configuration "
                f"(config_hash {old.config_hash}, this run {manifest.config_hash}); "
                f"differing: {'; '.join(diffs)}",
                hint="choose a new --out directory, or pass --overwrite to discard the old run",
            )
        conflicts = _backend_conflicts(old.backends, manifest.backends)
        if conflicts:
            raise StoreError(
                f"{root}: this run's items were computed with different backends; "
                f"differing: {'; '.join(conflicts)}",
                hint="choose a new --out directory, or pass --overwrite to recompute everything",
            )
        backends = {**old.backends, **manifest.backends}
        items_missing = not (root / ITEMS_DB).exists()
        if old.status == "complete" and not items_missing:
            run = cls(root, old.model_copy(update={"backends": backends}), "complete")
            if backends != old.backends:
                run.save()
            ItemStore(run.items_path, create=False).close()
            return run
        if not resume and old.status != "complete":
            raise StoreError(
                f"{root}: holds an unfinished run with the same configuration (status "
                f"'{old.status}', started {old.created_at})",
                hint="pass --resume to continue it (items already done are not computed "
                "again), or choose a new --out, or pass --overwrite to start over",
            )
        run = cls(
            root,
            old.model_copy(update={"backends": backends, "status": "running", "finished_at": None}),
            "resumed",
        )
        run.save()
        ItemStore(run.items_path, create=True).close()
        return run

    @classmethod
    def _create_new(cls, root: Path, manifest: RunManifest, *, overwrite: bool) -> RunDir:
        if root.is_dir() and not overwrite:
            leftovers = sorted(p.name for p in root.iterdir())
            if leftovers:
                shown = ", ".join(leftovers[:5]) + (" ..." if len(leftovers) > 5 else "")
                raise StoreError(
                    f"{root}: expected an empty directory or a vidmem run directory, found "
                    f"files but no run.json ({shown})",
                    hint="choose a new --out directory, or pass --overwrite (only files "
                    "vidmem writes are replaced)",
                )
        try:
            (root / REPORT_DIR).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"{root}: cannot create the run directory ({exc})",
                hint="check the --out path and its permissions",
            ) from None
        run = cls(
            root,
            manifest.model_copy(update={"status": "running", "finished_at": None, "counts": {}}),
            "new",
        )
        run.save()
        ItemStore(run.items_path, create=True).close()
        return run

    @staticmethod
    def _remove_run_files(root: Path) -> None:
        try:
            for name in _RUN_FILES:
                (root / name).unlink(missing_ok=True)
            for tmp in root.glob(f".{RUN_JSON}.*.tmp"):
                tmp.unlink(missing_ok=True)
            if (root / REPORT_DIR).is_dir():
                shutil.rmtree(root / REPORT_DIR)
        except OSError as exc:
            raise StoreError(
                f"{root}: cannot remove the old run's files for --overwrite ({exc})",
                hint="check permissions, or choose a new --out directory",
            ) from None

    @classmethod
    def open(cls, path: str | Path) -> RunDir:
        """Open an existing run directory to read it (report, rescore).

        Raises:
            StoreError: there is no ``run.json`` or it is unreadable, invalid or newer.
        """
        root = Path(path)
        if not root.is_dir():
            raise StoreError(
                f"{root}: expected a run directory, found "
                + ("a file" if root.exists() else "nothing"),
                hint="pass the directory a `vidmem run` or `vidmem score` wrote (its --out)",
            )
        return cls(root, read_manifest(root / RUN_JSON), "opened")

    # -- updating -------------------------------------------------------------------

    def items(self) -> ItemStore:
        """Open this process's connection to ``items.sqlite`` (close it when done)."""
        return ItemStore(self.items_path, create=False)

    def save(self) -> None:
        """Write the manifest to ``run.json`` atomically (temp file + ``os.replace``)."""
        _write_atomic(self.run_json, self.manifest.to_json())

    def set_status(self, status: RunStatus) -> None:
        """Set ``running``/``complete``/``failed``; the last two stamp ``finished_at``."""
        if status not in ("running", "complete", "failed"):
            raise UserInputError(
                f"{self.run_json}: expected status 'running', 'complete' or 'failed', "
                f"found {status!r}"
            )
        finished = None if status == "running" else utc_now()
        self.manifest = self.manifest.model_copy(update={"status": status, "finished_at": finished})
        self.save()

    def set_counts(self, counts: Mapping[str, int]) -> None:
        """Replace the recorded counts (e.g. ``ItemStore.counts()`` or a summary)."""
        clean = {}
        for k, v in counts.items():
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise UserInputError(f"{self.run_json}: expected integer counts, found {k}={v!r}")
            clean[str(k)] = int(v)
        self.manifest = self.manifest.model_copy(update={"counts": clean})
        self.save()

    def set_backends(self, backends: Mapping[str, Any]) -> None:
        """Record backends (``BackendInfo`` objects or dicts), keyed by name.

        Backends already recorded must agree on weights hash, dtype and settings.

        Raises:
            StoreError: a recorded backend now has different weights, dtype or settings.
        """
        records = {
            str(name): BackendRecord.model_validate(_backend_dict(b))
            for name, b in backends.items()
        }
        conflicts = _backend_conflicts(self.manifest.backends, records)
        if conflicts:
            raise StoreError(
                f"{self.path}: this run's items were computed with different backends; "
                f"differing: {'; '.join(conflicts)}",
                hint="choose a new --out directory, or pass --overwrite to recompute everything",
            )
        merged = {**self.manifest.backends, **records}
        self.manifest = self.manifest.model_copy(update={"backends": merged})
        self.save()

    # -- scores ---------------------------------------------------------------------

    def write_scores(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Write ``scores.jsonl`` atomically, one JSON object per row; return the count.

        Raises:
            UnstorableValueError: a row holds NaN/inf or a non-JSON value (names the row).
        """
        plain = []
        for i, row in enumerate(rows):
            label = f"{self.scores_path}: row {i}"
            if isinstance(row, Mapping) and "item_id" in row:
                label += f" (item {row['item_id']!r})"
            if not isinstance(row, Mapping):
                raise UserInputError(f"{label}: expected a dict, found {type(row).__name__}")
            plain.append(json.loads(to_json_text(dict(row), where=label)))
        try:
            return write_jsonl(self.scores_path, plain)
        except OSError as exc:
            raise StoreError(
                f"{self.scores_path}: cannot write ({exc})",
                hint="check free disk space and permissions of the run directory",
            ) from None

    def scores(self) -> list[dict[str, Any]]:
        """Read ``scores.jsonl``.

        Raises:
            StoreError: the file is missing (the run has not finished) or invalid.
        """
        if not self.scores_path.is_file():
            raise StoreError(
                f"{self.scores_path}: no scores yet (run status '{self.manifest.status}')",
                hint="finish the run first: rerun the same command with --resume",
            )
        try:
            return [row for _, row in read_jsonl(self.scores_path)]
        except UserInputError as exc:
            raise StoreError(
                exc.message, hint="rerun with --resume to rewrite the scores"
            ) from None
