"""Calibrations frozen in ``run.json``: ``calibration[analysis][key]``, never silently replaced.

An analysis that fits a threshold on control pairs (the identity analysis's Youden cuts)
freezes it in the run's manifest before it scores a single condition
(:meth:`vidmem.runners.store.RunDir.freeze_calibration`). Rules:

* **One entry per measuring settings.** ``key`` names what measured the controls
  (embedders, detector, frames...), so a second embedder gets its own entry beside the
  first.
* **Frozen.** An entry already stored under ``key`` and computed from the same controls
  (the same ``controls_sha256``) is reused as stored, even if the fitting code has
  changed since. One from other controls (more stories scored since, say) is refused
  with the fix named. Only an explicit ``replace`` (the analysis's
  ``--opt recalibrate=true``) writes over an entry.
* **Resume keeps it.** Reopening a run merges the entries, the stored ones winning
  (:func:`merge_kept`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from vidmem.errors import UserInputError
from vidmem.io.hashing import content_hash
from vidmem.runners.strict_json import to_json_text

__all__ = ["controls_sha256", "merge_kept", "with_entry"]


def controls_sha256(controls: Any) -> str:
    """The full sha256 of control data (JSON-like; key order does not matter).

    Example:
        >>> controls_sha256({"a": [0.5], "b": [0.1]}) == controls_sha256({"b": [0.1], "a": [0.5]})
        True
        >>> len(controls_sha256([0.5]))
        64
    """
    return content_hash(controls, length=64)


def merge_kept(stored: Mapping[str, Mapping[str, Any]],
               incoming: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The calibrations of a reopened run: every entry of both, the stored one winning.

    Example:
        >>> merge_kept({"identity": {"k": {"cut": 1}}},
        ...            {"identity": {"k": {"cut": 2}, "j": {"cut": 3}}, "other": {}})
        {'identity': {'k': {'cut': 1}, 'j': {'cut': 3}}, 'other': {}}
    """
    out = {a: dict(entries) for a, entries in incoming.items()}
    for analysis, entries in stored.items():
        out.setdefault(analysis, {}).update(entries)
    return out


def with_entry(calibration: Mapping[str, Mapping[str, Any]], analysis: str, key: str,
               data: Mapping[str, Any], *, controls: str, frozen_at: str, replace: bool,
               where: str, fix: str) -> tuple[dict[str, dict[str, Any]], dict[str, Any], bool]:
    """Add ``data`` under ``calibration[analysis][key]`` unless an entry is frozen there.

    Args:
        calibration: the manifest's calibration block.
        analysis, key: where the entry goes.
        data: the calibration (JSON data; NaN and inf are refused).
        controls: :func:`controls_sha256` of the control pairs it was fitted on.
        frozen_at: the time stamp of a new entry.
        replace: write over a stored entry (refit) instead of reusing or refusing it.
        where: the run, for the error message; fix: how to replace, for its hint.

    Returns:
        ``(block, entry, changed)``: the new block, the frozen entry, and whether the
        block changed (``False``: the stored entry is reused).

    Raises:
        UserInputError: an entry from other controls is stored and ``replace`` is false.

    Example:
        >>> block, e, changed = with_entry({}, "identity", "k", {"cut": 0.5}, controls="ab",
        ...                                frozen_at="t", replace=False, where="run", fix="")
        >>> e, changed
        ({'cut': 0.5, 'controls_sha256': 'ab', 'frozen_at': 't'}, True)
        >>> with_entry(block, "identity", "k", {"cut": 0.7}, controls="ab", frozen_at="u",
        ...            replace=False, where="run", fix="")[1:]
        ({'cut': 0.5, 'controls_sha256': 'ab', 'frozen_at': 't'}, False)
    """
    entries = dict(calibration.get(analysis, {}))
    old = entries.get(key)
    if old is not None and not replace and old.get("controls_sha256") == controls:
        return {a: dict(v) for a, v in calibration.items()}, dict(old), False
    if old is not None and not replace:
        raise UserInputError(
            f"{where}: the {analysis} calibration {key!r} frozen in run.json at "
            f"{old.get('frozen_at', '?')} was fitted on other control pairs (sha256 "
            f"{str(old.get('controls_sha256'))[:12]}..., the current ones {controls[:12]}...); "
            f"a frozen cut is never replaced silently",
            hint=fix)
    label = f"{where}: calibration {analysis}/{key}"
    entry = {**json.loads(to_json_text(dict(data), where=label)), "controls_sha256": controls,
             "frozen_at": frozen_at}
    return {**{a: dict(v) for a, v in calibration.items()}, analysis: {**entries, key: entry}}, \
        entry, True
