"""The run manifest (``run.json``): what a run is, who made it, and how it went.

:class:`RunManifest` holds the run's identity (benchmark, config, seeds, protocol),
its provenance (vidmem version, git revision, command line, backends) and its state
(status, counts). :func:`read_manifest` reads and validates one from disk, and
:func:`identity_diff` / :func:`backend_conflicts` say why two manifests do not
describe the same run.
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
    "RUN_JSON",
    "RUN_SCHEMA_VERSION",
    "BackendRecord",
    "RunManifest",
    "RunStatus",
    "backend_conflicts",
    "backend_dict",
    "git_revision",
    "identity_diff",
    "read_manifest",
    "utc_now",
]

RUN_SCHEMA_VERSION = 1
"""Version of the ``run.json`` layout; bump it (and add a migration) on any change."""

RUN_JSON = "run.json"

RunStatus = Literal["running", "complete", "failed"]


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
    config_hash: str = ""
    seeds: dict[str, Any] = Field(default_factory=dict)
    backends: dict[str, BackendRecord] = Field(default_factory=dict)
    protocol: dict[str, Any] = Field(default_factory=dict)
    status: RunStatus = "running"
    counts: dict[str, int] = Field(default_factory=dict)
    finished_at: str | None = None
    calibration: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)

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


# ------------------------------------------------------------------------- comparing

_MISSING = object()


def _short(value: Any, limit: int = 60) -> str:
    text = "(absent)" if value is _MISSING else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _diff_mapping(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str) -> list[str]:
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key, _MISSING), new.get(key, _MISSING)
        if a is _MISSING or b is _MISSING or content_hash(a) != content_hash(b):
            out.append(f"{prefix}{key} ({_short(a)} -> {_short(b)})")
    return out


def identity_diff(old: RunManifest, new: RunManifest) -> list[str]:
    """What makes ``new`` a different run from ``old``: config, benchmark, seeds, protocol."""
    diffs = _diff_mapping(old.config, new.config, "")
    for name in ("benchmark", "benchmark_version"):
        a, b = getattr(old, name), getattr(new, name)
        if a != b:
            diffs.append(f"{name} ({_short(a)} -> {_short(b)})")
    diffs += _diff_mapping(old.seeds, new.seeds, "seeds.")
    diffs += _diff_mapping(old.protocol, new.protocol, "protocol.")
    return diffs


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
