"""The ``items`` table of ``items.sqlite``: its SQL, its rows and their encoding.

:class:`StoredItem` is one decoded row. :func:`encode_row` checks and turns the
arguments of :meth:`ItemStore.put <vidmem.runners.item_store.ItemStore.put>` into the
parameters of :data:`UPSERT_SQL` (JSON columns as strict JSON text);
:func:`decode_row` turns a ``SELECT`` of :data:`COLUMNS` back into a
:class:`StoredItem`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal

from vidmem.errors import UserInputError
from vidmem.runners.strict_json import to_json_text

__all__ = [
    "COLUMNS",
    "ITEM_STATUSES",
    "PUT_FIELDS",
    "SCHEMA_SQL",
    "STORE_SCHEMA_VERSION",
    "UPSERT_SQL",
    "ItemStatus",
    "StoredItem",
    "decode_row",
    "encode_row",
]

STORE_SCHEMA_VERSION = 1
"""Version of the ``items.sqlite`` tables, kept in its ``meta`` table."""

ItemStatus = Literal["done", "error"]

ITEM_STATUSES = ("done", "error")

SCHEMA_SQL = """
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

COLUMNS = (
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

UPSERT_SQL = """
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

PUT_FIELDS = frozenset(
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


def encode_row(
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
    """Check one item and encode it as the parameters of :data:`UPSERT_SQL`.

    Raises:
        UserInputError: ``key``, ``item_id`` or ``kind`` is not a non-empty string, or
            ``status`` is not ``done`` / ``error``.
        UnstorableValueError: a JSON column holds NaN/inf or a non-JSON value.
    """
    for name, value in (("key", key), ("item_id", item_id), ("kind", kind)):
        if not isinstance(value, str) or not value:
            raise UserInputError(
                f"item store put: expected '{name}' to be a non-empty string, "
                f"found {value!r} (item {item_id!r})",
                hint="pass WorkItem-style values: key=content hash, item_id and kind strings",
            )
    if status not in ITEM_STATUSES:
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


def decode_row(row: tuple) -> StoredItem:
    """Decode one row selected as :data:`COLUMNS` (JSON columns parsed)."""
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
