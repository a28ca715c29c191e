"""The records of one :func:`~vidmem.runners.execute.execute` call, and their writer.

A :class:`WorkItem` is one unit of work, keyed by the content hash of its request; an
:class:`ExecutionSummary` counts what one call did. The recorder writes each outcome
to the :class:`~vidmem.runners.store.ItemStore` as it arrives (a ``done`` row, or an
``error`` row with the message) and keeps the tallies the summary is made from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vidmem.errors import UserInputError
from vidmem.io.hashing import content_hash
from vidmem.runners.store import ItemStore, UnstorableValueError

__all__ = ["ExecutionSummary", "WorkItem"]

_ERROR_SAMPLES = 5


@dataclass(frozen=True)
class WorkItem:
    """One unit of work.

    Attributes:
        key: content hash of the request; the item store's primary key. Items with the
            same key are computed once.
        item_id: the benchmark's id for the item (shown in errors and reports).
        kind: what the request asks for (``embed``, ``detect``, ``judge``, ``score``...).
        request: JSON data that ``fn`` needs to compute the item.

    Example:
        >>> a = WorkItem.make("case-1", "embed", {"frame": 3})
        >>> a.key == WorkItem.make("case-2", "embed", {"frame": 3}).key
        True
        >>> a.key == WorkItem.make("case-1", "detect", {"frame": 3}).key
        False
    """

    key: str
    item_id: str
    kind: str
    request: Any

    @classmethod
    def make(cls, item_id: str, kind: str, request: Any, *,
             unkeyed: Sequence[str] = ()) -> WorkItem:
        """Build an item keyed by ``content_hash({"kind": kind, "request": request})``.

        Put everything that changes the result into ``request`` (backend name and
        weights hash, thresholds...), so that equal keys really mean equal results.

        Args:
            unkeyed: fields of ``request`` left out of the key (``"generation.out_path"``
                reaches into a nested mapping): where files are, when the request also
                carries their content hashes, so that a run directory or dataset moved
                elsewhere is still served from its store.

        Example:
            >>> a = WorkItem.make("t", "score", {"video": "/a/x.mp4", "sha": "1"}, unkeyed=["video"])
            >>> a.key == WorkItem.make("t", "score", {"video": "/b/x.mp4", "sha": "1"}, unkeyed=["video"]).key
            True
        """
        return cls(
            key=content_hash({"kind": kind, "request": _without(request, unkeyed)}),
            item_id=item_id,
            kind=kind,
            request=request,
        )


def _without(request: Any, fields: Sequence[str]) -> Any:
    """A copy of ``request`` without the (dotted) ``fields``."""
    if not fields or not isinstance(request, Mapping):
        return request
    out = dict(request)
    nested: dict[str, list[str]] = {}
    for name in fields:
        head, dot, rest = name.partition(".")
        if dot:
            nested.setdefault(head, []).append(rest)
        else:
            out.pop(head, None)
    for head, rests in nested.items():
        if head in out:
            out[head] = _without(out[head], rests)
    return out


@dataclass(frozen=True)
class ExecutionSummary:
    """What one :func:`~vidmem.runners.execute.execute` call did; every item is counted once.

    Attributes:
        total: number of items given.
        cached: items not computed: already done in the store, or sharing their key
            with an item computed in this call.
        computed: items computed successfully in this call.
        errors: items whose computation raised (stored with status ``error``).
        seconds: wall-clock duration.
        error_samples: up to five ``(item_id, first line of the error)`` pairs.
        prepared: what ``warmup`` returned on the first remote worker (Ray), ``None``
            when no remote worker ran it.
    """

    total: int
    cached: int
    computed: int
    errors: int
    seconds: float
    error_samples: tuple[tuple[str, str], ...] = field(default=())
    prepared: Any = None

    @property
    def ok(self) -> bool:
        """True when no item failed."""
        return self.errors == 0

    def as_counts(self) -> dict[str, int]:
        """The integer counts, e.g. for ``RunDir.set_counts``."""
        return {
            "total": self.total,
            "cached": self.cached,
            "computed": self.computed,
            "errors": self.errors,
        }

    def __str__(self) -> str:
        text = (
            f"{self.total} items: {self.computed} computed, {self.cached} cached, "
            f"{self.errors} errors in {self.seconds:.1f} s"
        )
        if self.error_samples:
            item_id, msg = self.error_samples[0]
            text += f"; first error: item {item_id!r}: {msg}"
        return text


def check_items(items: Iterable[Any]) -> list[Any]:
    """``items`` as a list, after checking each looks like a :class:`WorkItem`."""
    out = list(items)
    for i, it in enumerate(out):
        for name in ("key", "item_id", "kind"):
            value = getattr(it, name, None)
            if not isinstance(value, str) or not value:
                raise UserInputError(
                    f"execute: item {i}: expected a non-empty string attribute '{name}', "
                    f"found {value!r} on {type(it).__name__}",
                    hint="pass WorkItem objects (WorkItem.make(item_id, kind, request))",
                )
        if not hasattr(it, "request"):
            raise UserInputError(
                f"execute: item {i} ({it.item_id!r}): expected a 'request' attribute, "
                f"found none on {type(it).__name__}",
                hint="pass WorkItem objects (WorkItem.make(item_id, kind, request))",
            )
    return out


class Recorder:
    """Writes each outcome to the store and keeps the tallies."""

    def __init__(self, store: ItemStore, multiplicity: Mapping[str, int]) -> None:
        self.store = store
        self.multiplicity = multiplicity
        self.computed = 0
        self.cached_dups = 0
        self.errors = 0
        self.samples: list[tuple[str, str]] = []

    def _error(self, item: Any, message: str) -> None:
        self.store.put(
            item.key,
            item_id=item.item_id,
            kind=item.kind,
            request=item.request,
            status="error",
            error=message,
        )
        self.errors += self.multiplicity[item.key]
        if len(self.samples) < _ERROR_SAMPLES:
            self.samples.append((item.item_id, message.splitlines()[0] if message else ""))

    def record(self, item: Any, ok: bool, payload: Any) -> None:
        if not ok:
            self._error(item, str(payload))
            return
        if not isinstance(payload, Mapping) or set(payload) != {"response", "score"}:
            found = (
                f"a dict with keys {sorted(payload)}"
                if isinstance(payload, Mapping)
                else type(payload).__name__
            )
            self._error(
                item,
                f"fn returned {found} for item {item.item_id!r}; expected a dict with "
                "exactly the keys 'response' and 'score'",
            )
            return
        try:
            self.store.put(
                item.key,
                item_id=item.item_id,
                kind=item.kind,
                request=item.request,
                response=payload["response"],
                score=payload["score"],
                status="done",
            )
        except UnstorableValueError as exc:
            # The result is the culprit; keep the run going and record why. If the
            # request itself cannot be stored, this put raises and names the item.
            self._error(item, str(exc))
            return
        self.computed += 1
        self.cached_dups += self.multiplicity[item.key] - 1
