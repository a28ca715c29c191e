"""The per-item SQLite store (``items.sqlite``) that makes runs resumable.

Each process opens its own :class:`ItemStore`; the database runs in WAL mode with a
busy timeout, and every write is one short ``BEGIN IMMEDIATE`` transaction, so
several worker processes can write to one store at the same time. The table layout
and row encoding live in :mod:`vidmem.runners.item_rows`.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

import vidmem
from vidmem.errors import StoreError, UserInputError
from vidmem.runners.item_rows import (
    COLUMNS,
    ITEM_STATUSES,
    PUT_FIELDS,
    SCHEMA_SQL,
    STORE_SCHEMA_VERSION,
    UPSERT_SQL,
    ItemStatus,
    StoredItem,
    decode_row,
    encode_row,
)

__all__ = ["ItemStore", "StoredItem"]

_T = TypeVar("_T")


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
                for statement in SCHEMA_SQL.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.executemany(
                    "INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)",
                    [
                        ("schema_version", str(STORE_SCHEMA_VERSION)),
                        ("created_by", f"vidmem {vidmem.__version__}"),
                    ],
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
        missing = [c for c in COLUMNS if c not in columns]
        if missing:
            raise StoreError(
                f"{self.path}: expected an 'items' table with columns {list(COLUMNS)}, "
                f"found one without {missing}",
                hint=f"this is not a vidmem item store; delete {self.path.name} or use a "
                "different --out",
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
        row = encode_row(
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
            conn.execute(UPSERT_SQL, row)

    def put_many(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Insert or replace several items in one transaction; return how many.

        Each row is a mapping with the keyword arguments of :meth:`put` plus ``key``.
        Every row is encoded before anything is written, so a bad row writes nothing.
        """
        encoded = []
        for i, row in enumerate(rows):
            unknown = set(row) - PUT_FIELDS
            if unknown or "key" not in row:
                raise UserInputError(
                    f"item store put_many: row {i}: expected fields {sorted(PUT_FIELDS)}, "
                    f"found unknown {sorted(unknown)}" + ("" if "key" in row else " and no 'key'")
                )
            fields = dict(row)
            key = fields.pop("key")
            encoded.append(encode_row(key, **fields))
        if encoded:
            with self._write(f"saving {len(encoded)} items") as conn:
                conn.executemany(UPSERT_SQL, encoded)
        return len(encoded)

    def get(self, key: str) -> StoredItem | None:
        """The stored item for ``key``, or ``None``."""
        rows = self._query(
            f"SELECT {', '.join(COLUMNS)} FROM items WHERE key = ?", (key,), doing="reading"
        )
        return decode_row(rows[0]) if rows else None

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
            if status not in ITEM_STATUSES:
                raise UserInputError(
                    f"iter_items: expected status 'done' or 'error', found {status!r}"
                )
            where.append("status = ?")
            params.append(status)
        sql = f"SELECT {', '.join(COLUMNS)} FROM items"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY item_id, key"
        try:
            cursor = self.conn.execute(sql, tuple(params))
            while batch := cursor.fetchmany(500):
                for row in batch:
                    yield decode_row(row)
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
