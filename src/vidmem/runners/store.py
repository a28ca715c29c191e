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
* a directory holding a run that stopped before finishing any item (a bad option or
  missing weights failed it before its first item) and holds nothing else is started
  again with the new settings, same or different, without ``resume``: run.json is
  replaced and :data:`NOTICE` is told so;
* a directory holding a run with a *different* configuration is refused, naming the
  differing keys, unless ``overwrite=True`` (which deletes the old run's files);
* a ``run.json`` written by a newer vidmem (higher ``schema_version``) is refused.

:meth:`RunDir.open` reads a ``running`` run whose lock no live process holds as
``interrupted`` (its writer died), never as still running.

Each process opens its own :class:`ItemStore`; the database runs in WAL mode with a
busy timeout, and every write is one short ``BEGIN IMMEDIATE`` transaction, so
several worker processes can write to one store at the same time.

This module holds :class:`RunDir` and re-exports the pieces it is built from, so
``from vidmem.runners.store import ...`` reaches all of them:

* :mod:`vidmem.runners.manifest` -- :class:`RunManifest`, :class:`BackendRecord`,
  :func:`read_manifest` and provenance helpers (``run.json``);
* :mod:`vidmem.runners.item_store` -- :class:`ItemStore` (``items.sqlite``);
* :mod:`vidmem.runners.item_rows` -- the ``items`` table and :class:`StoredItem`;
* :mod:`vidmem.runners.strict_json` -- :func:`to_json_text` and
  :class:`UnstorableValueError`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.errors import StoreError, UserInputError
from vidmem.io.jsonl import read_jsonl, write_jsonl
from vidmem.runners import frozen_calibration, run_lock
from vidmem.runners.item_rows import STORE_SCHEMA_VERSION, StoredItem
from vidmem.runners.item_rows import ItemStatus as ItemStatus  # re-exported
from vidmem.runners.item_store import ItemStore
from vidmem.runners.manifest import (
    RUN_JSON,
    RUN_SCHEMA_VERSION,
    BackendRecord,
    RunManifest,
    RunStatus,
    backend_conflicts,
    backend_dict,
    git_revision,
    identity_changes,
    read_manifest,
    resume_hint,
    utc_now,
)
from vidmem.runners.strict_json import UnstorableValueError, to_json_text

__all__ = [
    "ITEMS_DB",
    "REPORT_DIR",
    "RUN_JSON",
    "RUN_SCHEMA_VERSION",
    "SCORES_JSONL",
    "STORE_SCHEMA_VERSION",
    "BackendRecord",
    "NOTICE",
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

ITEMS_DB = "items.sqlite"
SCORES_JSONL = "scores.jsonl"
SUMMARY_JSON = "summary.json"
REPORT_DIR = "report"

_RUN_FILES = (
    RUN_JSON,
    ITEMS_DB,
    f"{ITEMS_DB}-wal",
    f"{ITEMS_DB}-shm",
    f"{ITEMS_DB}-journal",
    SCORES_JSONL,
    f"{SCORES_JSONL}.tmp",
)


#: where :meth:`RunDir.create` says what it did on its own (a stale first attempt
#: replaced): the CLI prints it; unset, it is a :class:`UserWarning`
NOTICE: ContextVar[Callable[[str], None] | None] = ContextVar("vidmem_run_notice", default=None)


def _tell(text: str) -> None:
    handler = NOTICE.get()
    if handler is not None:
        handler(text)
    else:
        warnings.warn(text, UserWarning, stacklevel=4)


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


def _refuse_backend_conflicts(
    root: Path, old: Mapping[str, BackendRecord], new: Mapping[str, BackendRecord]
) -> None:
    conflicts = backend_conflicts(old, new)
    if conflicts:
        raise StoreError(
            f"{root}: this run's items were computed with different backends; "
            f"differing: {'; '.join(conflicts)}",
            hint="choose a new --out directory, or pass --overwrite to recompute everything",
        )


def _temp_names() -> tuple[str, ...]:
    """Glob patterns of the temp files vidmem's own atomic writes leave when killed."""
    return (f".{RUN_JSON}.*.tmp", f".{SUMMARY_JSON}.*.tmp", f"{SCORES_JSONL}.tmp")


def _remove_stale_temps(root: Path) -> None:
    """Delete temp files a killed writer of this run left (the caller holds the lock)."""
    for pattern in _temp_names():
        for tmp in root.glob(pattern):
            with contextlib.suppress(OSError):  # a leftover is harmless; never fail for it
                tmp.unlink()


def _items_db_is_empty(path: Path) -> bool:
    """An ``items.sqlite`` that holds no item: empty, or only :class:`ItemStore`'s tables
    (``meta``, ``items``) with no row in ``items``."""
    if path.stat().st_size == 0:
        return True
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro",
                                                uri=True)) as db:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not tables <= {"meta", "items"}:
                return False
            return "items" not in tables or not db.execute("SELECT 1 FROM items LIMIT 1").fetchone()
    except sqlite3.Error:
        return False


def _has_done_item(path: Path) -> bool:
    """Whether the item store at ``path`` holds a finished (``done``) item."""
    if not path.is_file():
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro",
                                                uri=True)) as db:
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            return "items" in tables and db.execute(
                "SELECT 1 FROM items WHERE status = 'done' LIMIT 1").fetchone() is not None
    except sqlite3.Error:
        return True  # unreadable: never taken for empty


def _produced_nothing(root: Path) -> bool:
    """Whether the run in ``root`` stopped before producing anything worth keeping: no
    finished item, and no file but vidmem's own run files (no generated clip, not even a
    partial one; empty folders do not count)."""
    if _has_done_item(root / ITEMS_DB):
        return False
    own = {*_RUN_FILES, run_lock.LOCK_FILE, REPORT_DIR}
    for path in root.iterdir():
        if path.name in own or any(path.match(p) for p in _temp_names()):
            continue
        if path.is_symlink() or not path.is_dir():
            return False
        if any(p.is_file() or p.is_symlink() for p in path.rglob("*")):
            return False
    return True


def _is_skeleton(path: Path) -> bool:
    """Whether ``path`` (in a folder without run.json) is part of a run vidmem began to
    create and never finished: an empty ``report/``, a run.json temp file, or an item
    store with no item. Anything else may be the user's and is never taken for it."""
    name = path.name
    if name == REPORT_DIR:
        return path.is_dir() and not path.is_symlink() and not any(path.iterdir())
    if any(path.match(pattern) for pattern in _temp_names()):
        return path.is_file()
    if name == ITEMS_DB:
        return path.is_file() and not path.is_symlink() and _items_db_is_empty(path)
    if name in (f"{ITEMS_DB}-wal", f"{ITEMS_DB}-shm", f"{ITEMS_DB}-journal"):
        db = path.with_name(ITEMS_DB)
        return not db.exists() or _is_skeleton(db)
    return False


def _remove_skeleton(root: Path, *, made_report: bool) -> None:
    with contextlib.suppress(OSError):
        if made_report:
            (root / REPORT_DIR).rmdir()  # only when still empty
    for name in (RUN_JSON, ITEMS_DB, f"{ITEMS_DB}-wal", f"{ITEMS_DB}-shm", f"{ITEMS_DB}-journal"):
        path = root / name
        if name != RUN_JSON and path.exists() and not _is_skeleton(path):
            continue
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)


def _dead_status(status: str) -> str:
    """A stored status as read by the lock holder: ``running`` is a dead writer's."""
    return "interrupted" if status == "running" else status


def _with_current_locations(old: RunManifest, new: RunManifest) -> RunManifest:
    """``old`` recording where ``new`` found its inputs (the same run, maybe moved).

    The identity part of both configs is equal (checked before); the location keys take
    the new values, and ``config_hash`` is recomputed (a run.json from before location
    keys existed hashed its paths too).
    """
    keys = set(old.location_keys) | set(new.location_keys)
    config = {**old.config, **{k: v for k, v in new.config.items() if k in keys}}
    data = {**old.model_dump(mode="json"), "config": config,
            "location_keys": sorted(keys), "config_hash": ""}
    return RunManifest.model_validate(data)


def _make_dirs(path: Path, root: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"{root}: cannot create the run directory ({exc})",
            hint="check the --out path and its permissions",
        ) from None


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
                from a newer vidmem (unless ``overwrite``); the store is corrupt; or
                another process is writing it (:mod:`vidmem.runners.run_lock`; the lock
                is held until the returned object is gone or the process ends).
        """
        root = Path(path)
        if root.exists() and not root.is_dir():
            raise StoreError(
                f"{root}: expected a run directory, found a file",
                hint="choose a new --out directory",
            )
        _make_dirs(root, root)
        release = run_lock.acquire(root)
        try:
            run = cls._create_locked(root, manifest, resume=resume, overwrite=overwrite)
        except BaseException:
            release()
            raise
        weakref.finalize(run, release)
        return run

    @classmethod
    def _create_locked(cls, root: Path, manifest: RunManifest, *, resume: bool,
                       overwrite: bool) -> RunDir:
        if overwrite:
            cls._remove_run_files(root)
        _remove_stale_temps(root)  # under the lock, no writer of this run is alive
        run_json = root / RUN_JSON
        if not run_json.exists():
            return cls._create_new(root, manifest, overwrite=overwrite)

        old = read_manifest(run_json)
        changes = identity_changes(old, manifest)
        if old.status != "complete" and not (resume and not changes) and _produced_nothing(root):
            # a first attempt that failed before its first item (a bad option, missing
            # weights): nothing to resume and nothing to protect, so the corrected retry
            # just starts -- only run.json and an empty store are replaced
            return cls._start_again(root, old, manifest, changes)
        if changes:
            raise StoreError(
                f"{root}: this directory holds a run with a different configuration "
                f"(config_hash {old.config_hash}, this run {manifest.config_hash}); "
                f"differing: {'; '.join(f'{n} ({a} -> {b})' for n, a, b in changes)}",
                hint=resume_hint(changes),
            )
        _refuse_backend_conflicts(root, old.backends, manifest.backends)
        backends = {**old.backends, **manifest.backends}
        kept = {"backends": backends, "calibration": frozen_calibration.merge_kept(
            old.calibration, manifest.calibration)}  # frozen cuts survive --resume
        as_read, old = old, _with_current_locations(old, manifest)
        items_missing = not (root / ITEMS_DB).exists()
        if old.status == "complete" and not items_missing:
            run = cls(root, old.model_copy(update=kept), "complete")
            if run.manifest != as_read:
                run.save()
            ItemStore(run.items_path, create=False).close()
            return run
        if not resume and old.status != "complete":
            raise StoreError(
                f"{root}: holds an unfinished run with the same configuration (status "
                f"'{_dead_status(old.status)}', started {old.created_at})",
                hint="pass --resume to continue it (items already done are not computed "
                "again), or choose a new --out, or pass --overwrite to start over",
            )
        run = cls(
            root,
            old.model_copy(update={**kept, "status": "running", "finished_at": None}),
            "resumed",
        )
        run.save()
        ItemStore(run.items_path, create=True).close()
        return run

    @classmethod
    def _start_again(cls, root: Path, old: RunManifest, manifest: RunManifest,
                     changes: list[Any]) -> RunDir:
        """Replace a run that finished no item with a new one (see :meth:`create`)."""
        what = ("with the new settings (" + "; ".join(f"{n}: {a} -> {b}" for n, a, b in changes)
                + ")") if changes else "with the same settings"
        cls._remove_run_files(root)
        run = cls._create_new(root, manifest, overwrite=True)
        _tell(f"{root}: the earlier run (status '{_dead_status(old.status)}', started "
              f"{old.created_at}) stopped before its first item; starting again {what}, "
              "run.json replaced")
        return run

    @classmethod
    def _create_new(cls, root: Path, manifest: RunManifest, *, overwrite: bool) -> RunDir:
        if root.is_dir() and not overwrite:
            leftovers = sorted(p.name for p in root.iterdir()
                               if p.name != run_lock.LOCK_FILE and not _is_skeleton(p))
            if leftovers:
                shown = ", ".join(leftovers[:5]) + (" ..." if len(leftovers) > 5 else "")
                raise StoreError(
                    f"{root}: expected an empty directory or a vidmem run directory, found "
                    f"files but no run.json ({shown})",
                    hint="choose a new --out directory, or pass --overwrite (only files "
                    "vidmem writes are replaced)",
                )
        made_report = not (root / REPORT_DIR).exists()
        try:
            _make_dirs(root / REPORT_DIR, root)
            run = cls(
                root,
                manifest.model_copy(update={"status": "running", "finished_at": None,
                                            "counts": {}}),
                "new",
            )
            run.save()
            ItemStore(run.items_path, create=True).close()
        except BaseException:
            # e.g. a full disk: take back the skeleton, so the directory is as it was
            _remove_skeleton(root, made_report=made_report)
            raise
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
        manifest = read_manifest(root / RUN_JSON)
        if manifest.status == "running" and not run_lock.is_held(root):
            # its writer is gone: say so instead of showing it as still running
            manifest = manifest.model_copy(update={"status": "interrupted"})
        return cls(root, manifest, "opened")

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
            str(name): BackendRecord.model_validate(backend_dict(b)) for name, b in backends.items()
        }
        _refuse_backend_conflicts(self.path, self.manifest.backends, records)
        merged = {**self.manifest.backends, **records}
        self.manifest = self.manifest.model_copy(update={"backends": merged})
        self.save()

    def freeze_calibration(self, analysis: str, key: str, data: Mapping[str, Any], *,
                           controls_sha256: str, replace: bool = False,
                           fix: str = "rerun the analysis with --opt recalibrate=true to "
                                      "replace it") -> dict[str, Any]:
        """Freeze ``data`` as run.json's ``calibration[analysis][key]``; return the entry.

        An entry from the same controls is reused as stored; one from other controls is
        refused unless ``replace`` (rules: :mod:`vidmem.runners.frozen_calibration`).
        run.json is read again under the run's lock, so a concurrent writer is not undone.

        Raises:
            UserInputError: the stored entry came from other controls (``fix`` is the hint).
            StoreError: run.json is unreadable, or another process is writing the run.
        """
        release = run_lock.acquire(self.path)
        try:
            fresh = read_manifest(self.run_json)
            block, entry, changed = frozen_calibration.with_entry(
                fresh.calibration, analysis, key, data, controls=controls_sha256,
                frozen_at=utc_now(), replace=replace, where=str(self.path), fix=fix)
            self.manifest = fresh.model_copy(update={"calibration": block})
            if changed:
                self.save()
            return entry
        finally:
            release()

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

    def summary(self) -> dict[str, Any]:
        """``summary.json`` as a dict; ``{}`` when the run has not finished scoring.

        Raises:
            StoreError: the file is unreadable or not a JSON object (e.g. truncated).
        """
        path = self.path / SUMMARY_JSON
        if not path.is_file():
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise StoreError(f"{path}: cannot read the summary ({exc}); the file may have "
                             "been truncated", hint="rerun the run's command with --resume to "
                             "write it again (finished items are not computed again)") from None
        if not isinstance(data, dict):
            raise StoreError(f"{path}: expected a JSON object, found {type(data).__name__}",
                             hint="rerun the run's command with --resume to write it again")
        return data

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
