"""The run manifest (``run.json``): what a run is, who made it, and how it went.

:class:`RunManifest` holds the run's identity (benchmark, config, seeds, protocol),
its provenance (vidmem version, git revision, command line, backends) and its state
(status, counts). :func:`read_manifest` reads and validates one from disk, and
:func:`identity_diff` / :func:`backend_conflicts` say why two manifests do not
describe the same run.

Paths that only say *where* the inputs were found (a dataset root, a videos folder)
are :class:`InputLocation` values: resolved to an absolute path, recorded in
``config`` under their key, listed in ``location_keys`` and left out of the identity,
so a run resumes however the path is spelled and after the dataset moved. A benchmark
marks a path so only when every item key already holds the content hashes of the
files it reads there (a changed file is then a new item, whatever the path).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal

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
from vidmem.runners.strict_json import UnstorableValueError, to_json_text

__all__ = [
    "InputLocation",
    "RUN_JSON",
    "RUN_SCHEMA_VERSION",
    "BackendRecord",
    "RunManifest",
    "RunStatus",
    "backend_conflicts",
    "backend_dict",
    "git_revision",
    "identity_changes",
    "identity_diff",
    "read_manifest",
    "resume_hint",
    "utc_now",
]

RUN_SCHEMA_VERSION = 1
"""Version of the ``run.json`` layout; bump it (and add a migration) on any change."""

RUN_JSON = "run.json"

#: ``interrupted`` is never written by a live run: it is how a run.json that says
#: ``running`` reads once no process holds the run's lock (the writer died mid-run)
RunStatus = Literal["running", "complete", "failed", "interrupted"]


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

        def git(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["git", *args],
                cwd=pkg,
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
                env=env,
            )

        rev = git("rev-parse", "HEAD")
        if rev.returncode != 0:
            return None
        if git("ls-files", "--error-unmatch", "--", "__init__.py").returncode != 0:
            return None
        text = rev.stdout.strip()
        if len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text):
            return text
    except Exception:  # noqa: BLE001 - provenance is best effort and must never fail a run
        return None
    return None


def _plain_json(value: Any, *, where: str) -> Any:
    """Round-trip ``value`` through strict JSON (numpy -> Python, tuples -> lists)."""
    try:
        return json.loads(to_json_text(value, where=where))
    except UnstorableValueError as exc:
        raise UserInputError(exc.message, hint=exc.hint) from None


def backend_dict(value: Any) -> Any:
    """Accept a ``BackendInfo`` (anything with ``to_dict``) where a record is expected."""
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else value


class InputLocation(str):
    """A ``run_config`` path that says where inputs are, not what they are.

    The path is resolved (``~``, ``..``, symlinks, relative to the working directory)
    when made. :class:`RunManifest` records it in ``config`` and lists its key in
    ``location_keys``: it is not part of the run's identity. Use it only where the item
    keys hold the content hashes of the files read under it.

    Example:
        >>> import os
        >>> InputLocation("a/../b") == os.path.join(os.path.realpath("."), "b")
        True
    """

    __slots__ = ()

    def __new__(cls, path: str | os.PathLike[str]) -> InputLocation:
        return super().__new__(cls, str(Path(path).expanduser().resolve()))


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


class RunManifest(BaseModel):
    """The contents of ``run.json``.

    Build one with the fields that define the run; provenance fields fill themselves::

        RunManifest(benchmark="cmbench", benchmark_version="1.0",
                    config={"generator": "sim", "n_cases": 20}, seeds={"sim": 0})

    ``config`` is the run's identity: everything that changes the results should be in
    it (``benchmark``, ``benchmark_version``, ``seeds`` and ``protocol`` are compared
    too), except the keys in ``location_keys`` (:class:`InputLocation` values: where
    the inputs were found, recorded but not compared). ``config``, ``seeds`` and
    ``protocol`` are normalised to plain JSON (numpy values become numbers, tuples
    become lists) and ``config_hash`` is ``content_hash`` of the normalised config
    without the location keys (:attr:`identity_config`).

    Attributes:
        schema_version: layout version of this file (:data:`RUN_SCHEMA_VERSION`).
        vidmem_version: the vidmem that wrote the run.
        git_revision: commit of the vidmem checkout, ``None`` for an installed package.
        created_at: UTC ISO time the run was first started.
        command: the command line (``sys.argv`` by default).
        benchmark: benchmark name, e.g. ``cmbench``.
        benchmark_version: version of the benchmark's data and protocol.
        config: every setting that changes the results (JSON data).
        location_keys: keys of ``config`` that only say where inputs were found
            (:class:`InputLocation`); updated on resume, never compared. Older
            run.json files without it read as ``[]``.
        config_hash: ``content_hash(identity_config)``; filled in when empty.
        seeds: named random seeds.
        backends: backend name -> :class:`BackendRecord` (weights path and hash...).
        protocol: the protocol choices made (e.g. which judge, which thresholds).
        status: ``running`` | ``complete`` | ``failed``; ``interrupted`` when read
            (:meth:`RunDir.open`) from a ``running`` run whose writer is gone.
        counts: item counts (total, done, error...).
        finished_at: UTC ISO time the run completed or failed, else ``None``.
        calibration: analysis -> settings key -> a calibration frozen before the
            analysis scored anything (:meth:`RunDir.freeze_calibration`); like
            ``counts`` and ``backends`` it is not part of the run's identity, and older
            run.json files without it read as ``{}``.
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
    location_keys: list[str] = Field(default_factory=list)
    config_hash: str = ""
    seeds: dict[str, Any] = Field(default_factory=dict)
    backends: dict[str, BackendRecord] = Field(default_factory=dict)
    protocol: dict[str, Any] = Field(default_factory=dict)
    status: RunStatus = "running"
    counts: dict[str, int] = Field(default_factory=dict)
    finished_at: str | None = None
    calibration: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _mark_locations(cls, data: Any) -> Any:
        # InputLocation values are recognised here, before the config becomes plain JSON.
        if isinstance(data, Mapping) and isinstance(data.get("config"), Mapping):
            marked = [str(k) for k, v in data["config"].items() if isinstance(v, InputLocation)]
            if marked:
                known = list(data.get("location_keys") or [])
                data = {**data, "location_keys": known + [k for k in marked if k not in known]}
        return data

    @field_validator("config", "seeds", "protocol", "calibration", mode="before")
    @classmethod
    def _json_data(cls, v: Any, info: Any) -> Any:
        if isinstance(v, Mapping):
            return _plain_json(dict(v), where=f"run {info.field_name}")
        return v

    @field_validator("backends", mode="before")
    @classmethod
    def _backends(cls, v: Any) -> Any:
        if isinstance(v, Mapping):
            return {str(k): backend_dict(b) for k, b in v.items()}
        return v

    @field_validator("schema_version")
    @classmethod
    def _schema(cls, v: int) -> int:
        if v != RUN_SCHEMA_VERSION:
            raise ValueError(f"this vidmem reads schema_version {RUN_SCHEMA_VERSION}, found {v}")
        return v

    @property
    def identity_config(self) -> dict[str, Any]:
        """``config`` without the location keys: the part that names the run."""
        return {k: v for k, v in self.config.items() if k not in self.location_keys}

    @model_validator(mode="after")
    def _hash_config(self) -> RunManifest:
        self.location_keys = sorted(k for k in set(self.location_keys) if k in self.config)
        digest = content_hash(self.identity_config)
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


# ------------------------------------------------------------------------- comparing

_MISSING = object()


def _short(value: Any, limit: int = 60) -> str:
    text = "(absent)" if value is _MISSING else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


Change = tuple[str, str, str]
"""One differing setting: its dotted name, the old value and the new one (as short JSON)."""


def _changes(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str) -> list[Change]:
    """One change per differing key, naming the innermost differing setting."""
    out: list[Change] = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, _MISSING), new.get(key, _MISSING)
        if a is not _MISSING and b is not _MISSING and content_hash(a) == content_hash(b):
            continue
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out += _changes(a, b, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", _short(a), _short(b)))
    return out


def identity_changes(old: RunManifest, new: RunManifest) -> list[Change]:
    """What makes ``new`` a different run from ``old``: config, benchmark, seeds, protocol.

    Nested settings are named by dotted path (``scorer.budget``). The location keys of
    either manifest (where the inputs were found) are not compared.
    """
    skip = set(old.location_keys) | set(new.location_keys)
    changes = _changes({k: v for k, v in old.config.items() if k not in skip},
                       {k: v for k, v in new.config.items() if k not in skip}, "")
    for name in ("benchmark", "benchmark_version"):
        a, b = getattr(old, name), getattr(new, name)
        if a != b:
            changes.append((name, _short(a), _short(b)))
    changes += _changes(old.seeds, new.seeds, "seeds.")
    changes += _changes(old.protocol, new.protocol, "protocol.")
    return changes


def identity_diff(old: RunManifest, new: RunManifest) -> list[str]:
    """:func:`identity_changes` as ``name (old -> new)`` strings.

    Example:
        >>> a = RunManifest(benchmark="b", benchmark_version="1", command=[],
        ...                 config={"root": InputLocation("/x"), "scorer": {"k": 8}})
        >>> b = RunManifest(benchmark="b", benchmark_version="1", command=[],
        ...                 config={"root": InputLocation("/y"), "scorer": {"k": 16}})
        >>> identity_diff(a, b)
        ['scorer.k (8 -> 16)']
    """
    return [f"{name} ({a} -> {b})" for name, a, b in identity_changes(old, new)]


def resume_hint(changes: list[Change], *, what: str = "settings") -> str:
    """How to go on when a run directory holds a run whose ``what`` differ (``changes``).

    Example:
        >>> print(resume_hint([("scorer.k", "8", "16")]))
        to resume the old run, rerun with its settings (scorer.k was 8, now 16); or pass --overwrite to discard it and start over; or choose a new --out to keep both
    """
    # protocol entries follow from the settings: name the settings a user can pass again
    named = [c for c in changes if not c[0].startswith("protocol.")] or changes
    shown = "; ".join(f"{name} was {a}, now {b}" for name, a, b in named[:3])
    more = f"; and {len(named) - 3} more" if len(named) > 3 else ""
    return (f"to resume the old run, rerun with its {what} ({shown}{more}); or pass "
            "--overwrite to discard it and start over; or choose a new --out to keep both")


def backend_conflicts(
    old: Mapping[str, BackendRecord], new: Mapping[str, BackendRecord]
) -> list[str]:
    """Backends recorded in both with different weights hash, dtype or settings."""
    out = []
    for name in sorted(set(old) & set(new)):
        a, b = old[name], new[name]
        for field in ("weights_sha256", "dtype"):
            if getattr(a, field) != getattr(b, field):
                out.append(f"{name}.{field} ({getattr(a, field)!r} -> {getattr(b, field)!r})")
        if content_hash(a.settings) != content_hash(b.settings):
            out.append(f"{name}.settings ({_short(a.settings)} -> {_short(b.settings)})")
    return out
