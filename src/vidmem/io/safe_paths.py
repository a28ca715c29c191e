"""Paths built from dataset values: one safe-id rule, one "stays inside" check, one link rule.

Every id that a benchmark turns into a file or folder name (a CMBench task, a memory-loop
or MIST case, a Track-A film, a Track-B story) is checked at validation against the same
rule, :func:`id_problem`; every file a run writes from such an id is checked to stay
under its folder with :func:`inside`; and every dataset file is refused when it leads,
through a symbolic link, outside its dataset root (:func:`link_escape`).

Why one rule: ``../../etc/evil`` as a case id once made ``vidmem run`` write clips outside
the run directory. A safe id is letters, digits, ``.``, ``_`` and ``-``, not starting
with ``.`` (so never ``.``, ``..`` or a hidden file), at most :data:`MAX_ID_LENGTH`
characters: no separator, no control character, no space, the same on every system.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from vidmem.errors import UserInputError

__all__ = ["HF_REPO_PREFIXES", "MAX_ID_LENGTH", "SAFE_ID", "SAFE_ID_RULE", "allowed_link_targets",
           "check_id", "hf_cache_repo", "id_problem", "inside", "link_escape"]

#: A file name has at most 255 bytes on common file systems; an id also carries a suffix
#: (``.mp4``, ``.partial-<random>``, ``.last.png``), so it gets half of that.
MAX_ID_LENGTH = 128
#: letters, digits, ``.``, ``_``, ``-``; the first character is a letter or a digit
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: the rule in words, for messages and hints
SAFE_ID_RULE = ("letters, digits, '.', '_' and '-', starting with a letter or a digit, at "
                f"most {MAX_ID_LENGTH} characters")

#: Name prefixes of the per-repository folders of a Hugging Face hub cache.
HF_REPO_PREFIXES = ("models--", "datasets--")


def id_problem(value: object) -> str | None:
    """Why ``value`` cannot name a file or folder, or ``None`` when it is a safe id.

    Example:
        >>> id_problem("syn_001_reappear_01") is None
        True
        >>> id_problem("../../etc/evil")
        "'../../etc/evil' contains a path separator"
        >>> [id_problem(v) for v in ("..", ".hidden", "a b", "x\\ty", "")]  # doctest: +ELLIPSIS
        ["'..' starts with '.'...", "'.hidden' starts with '.'...", "'a b' contains ' '...", ...]
    """
    if not isinstance(value, str):
        return f"expected a string, found {type(value).__name__}"
    shown = repr(value) if len(value) <= 60 else f"{value[:60]!r}... ({len(value)} characters)"
    if not value:
        return "is empty"
    if len(value) > MAX_ID_LENGTH:
        return f"{shown} is longer than {MAX_ID_LENGTH} characters"
    if SAFE_ID.fullmatch(value):
        return None
    if "/" in value or "\\" in value:
        return f"{shown} contains a path separator"
    if value.startswith("."):
        return f"{shown} starts with '.' (it would be '.', '..' or a hidden file)"
    bad = next(ch for ch in value if not SAFE_ID.fullmatch("a" + ch))
    what = "a control character" if not bad.isprintable() else repr(bad)
    where = "starts with" if value[0] == bad else "contains"
    return f"{shown} {where} {what}"


def check_id(value: object, what: str) -> str:
    """``value`` when it is a safe id (:func:`id_problem`); otherwise raise.

    Raises:
        UserInputError: naming ``what`` (e.g. ``"MIST case_id"``) and the rule.
    """
    problem = id_problem(value)
    if problem is not None:
        raise UserInputError(f"{what} is not a safe file name: {problem} (it names a file "
                             "or folder of the run)",
                             hint=f"use {SAFE_ID_RULE}")
    return value  # type: ignore[return-value]


def inside(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> Path:
    """``path`` when it lies under ``root`` (after ``..`` and symbolic links); else raise.

    Checked before a run writes a file it names from dataset values, so that no id, no
    edited stored request and no symbolic link inside the run directory can make it
    write elsewhere.

    Example:
        >>> str(inside("/tmp/run", "/tmp/run/rollouts/c1/seg_001.mp4"))
        '/tmp/run/rollouts/c1/seg_001.mp4'
        >>> inside("/tmp/run", "/tmp/run/../../etc/evil.mp4")
        Traceback (most recent call last):
        ...
        vidmem.errors.UserInputError: refusing to write /tmp/run/../../etc/evil.mp4: it \
resolves to /etc/evil.mp4, outside /tmp/run
        fix: ...

    Returns:
        ``path`` as a :class:`~pathlib.Path`, unchanged.

    Raises:
        UserInputError: ``path`` resolves outside ``root``.
    """
    base, target = Path(root).resolve(), Path(path)
    real = target.resolve()
    if real == base or not real.is_relative_to(base):
        raise UserInputError(
            f"refusing to write {target}: it resolves to {real}, outside {Path(root)}",
            hint="ids that name files must be safe file names (validate the dataset), and no "
                 "folder of the run may be a symbolic link to elsewhere")
    return target


def hf_cache_repo(folder: Path) -> Path | None:
    """The Hugging Face cache repository folder that holds ``folder``, if any.

    A hub snapshot lives at ``<cache>/models--org--name/snapshots/<revision>/`` (or
    ``datasets--...``); its files are symbolic links to ``../../blobs/<hash>``. For
    ``folder`` at or below such a snapshot this returns the ``models--...`` /
    ``datasets--...`` folder, else ``None``.

    Example:
        >>> hf_cache_repo(Path("/c/datasets--o--n/snapshots/abc/sub")).as_posix()
        '/c/datasets--o--n'
        >>> hf_cache_repo(Path("/data/cmbench")) is None
        True
    """
    for p in (folder, *folder.parents):
        if p.parent.name == "snapshots" and p.parent.parent.name.startswith(HF_REPO_PREFIXES):
            return p.parent.parent
    return None


def allowed_link_targets(root: Path) -> tuple[Path, ...]:
    """Where a dataset file under ``root`` may resolve to (all resolved paths).

    Inside ``root`` itself; and when ``root`` is (inside) a Hugging Face snapshot,
    anywhere in that snapshot's cache repository folder (see :func:`hf_cache_repo`), so
    the snapshot's links into ``blobs/`` are accepted but links to another repository
    or elsewhere are not.
    """
    resolved = root.resolve()
    bases = [resolved]
    for candidate in (root.absolute(), resolved):
        repo = hf_cache_repo(candidate)
        if repo is not None:
            bases.append(repo.resolve())
    return tuple(dict.fromkeys(bases))


def link_escape(root: Path, path: Path, bases: tuple[Path, ...] | None = None) -> Path | None:
    """Where ``path`` really lies when that is outside the dataset ``root``, else ``None``.

    The rule of every dataset file: it may be a symbolic link (or lie under one) only when
    it resolves inside ``root`` or, for a Hugging Face snapshot, inside its own cache
    repository (:func:`allowed_link_targets`). The caller words the error.

    Args:
        root: the dataset root.
        path: a file under it (as the dataset names it).
        bases: :func:`allowed_link_targets` of ``root``, when the caller checks many files.

    Raises:
        OSError, ValueError: the path cannot be resolved (a link loop, a NUL byte).
    """
    real = path.resolve()
    if bases is None:
        bases = allowed_link_targets(root)
    return None if any(real.is_relative_to(b) for b in bases) else real
