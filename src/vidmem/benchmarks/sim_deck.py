"""The offline judge's card deck, found under the data root when a run names none.

``vidmem sim build <benchmark> --out SIM`` writes the card deck that ``judge/sim-cards``
reads as its weights to ``SIM/_cards``. A benchmark whose offline judge is
``judge/sim-cards`` passes its scorer's backend options through
:func:`with_default_deck`, so ``vidmem run <benchmark> --root SIM --generator sim`` runs as
typed, with no ``--backend-opt judge/sim-cards:weights=SIM/_cards``.

Rules:

* Only the judge ``judge/sim-cards``, and only when its options hold no ``weights``: an
  explicit ``--backend-opt judge/sim-cards:weights=DIR`` always wins. (``--model-dir``
  never reaches this judge: it has no default weights to look up there.)
* The deck is the first of the benchmark's *places* (paths relative to the root, nearest
  first; ``_cards`` for most) that is a folder.
* The path put into the options is absolute, so a worker started elsewhere reads the
  same folder, and the judge records it in ``run.json`` exactly as given weights are
  (``backends.judge.weights`` and ``weights_sha256``; the scorer's ``backend_options``).
* No root (the Python API), or no deck under it, leaves the options as they are: the
  judge then refuses to load and its error says both fixes (build the sim into the root,
  or pass the weights). It is not raised here, so a missing video or clip is still
  reported first, as before, and a run that never loads the judge needs no deck.

Not a scoring rule, so not in any ``protocol`` block (a run started before it resumes
unchanged): which deck judged a run is in ``run.json`` with its hash, as above.

The root comes from the ``vidmem run|score`` command being executed
(:func:`command_root`, set by the generic command in :data:`COMMAND_ROOT`): the command
hands a benchmark's ``scorer_config`` only its own options, and the data root is the
command's. A caller of ``scorer_config`` outside a command passes ``root=`` itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

__all__ = ["COMMAND_ROOT", "DECK_DIR", "JUDGE", "command_root", "with_default_deck"]

#: the judge whose weights are a card deck
JUDGE = "judge/sim-cards"
#: where every ``vidmem sim build`` writes the deck, under its ``--out`` root
DECK_DIR = "_cards"


def with_default_deck(options: Mapping[str, Mapping[str, Any]], judge: str,
                      root: str | Path | None,
                      places: Sequence[str] = (DECK_DIR,)) -> dict[str, dict[str, Any]]:
    """``options`` with ``judge/sim-cards``' weights defaulted to the deck under ``root``.

    Args:
        options: per backend name, its options (``--backend-opt``, ``--device`` ...).
        judge: the configured judge; any other than ``judge/sim-cards`` is left alone.
        root: the run's data root; ``None`` leaves the options as they are.
        places: where the deck may be, relative to ``root``, nearest first.

    Returns:
        A copy of ``options``, the judge's ``weights`` set (absolute) when a place under
        ``root`` is a folder; else unchanged.

    Example:
        >>> import tempfile
        >>> sim = Path(tempfile.mkdtemp())
        >>> (sim / DECK_DIR).mkdir()
        >>> with_default_deck({}, JUDGE, sim) == {JUDGE: {"weights": str(sim.resolve() / DECK_DIR)}}
        True
        >>> with_default_deck({JUDGE: {"weights": "mine"}}, JUDGE, sim)  # given wins
        {'judge/sim-cards': {'weights': 'mine'}}
        >>> with_default_deck({"judge/openai": {}}, "judge/openai", sim)
        {'judge/openai': {}}
        >>> with_default_deck({}, JUDGE, sim / "elsewhere"), with_default_deck({}, JUDGE, None)
        ({}, {})
        >>> import shutil; shutil.rmtree(sim)
    """
    out = {name: dict(opts) for name, opts in options.items()}
    if judge != JUDGE or root is None or out.get(JUDGE, {}).get("weights") is not None:
        return out
    for place in places:
        path = Path(root) / place
        if path.is_dir():
            out.setdefault(JUDGE, {})["weights"] = str(path.resolve())
            break
    return out


#: the data root of the ``vidmem run|score`` command being executed (set by the command)
COMMAND_ROOT: ContextVar[Path | None] = ContextVar("vidmem_command_root", default=None)


def command_root() -> Path | None:
    """The ``--root`` of the ``vidmem`` command being executed, or ``None`` outside one.

    Example:
        >>> command_root() is None  # not inside a command
        True
    """
    return COMMAND_ROOT.get()
