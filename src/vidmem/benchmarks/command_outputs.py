"""The outputs folder of the ``vidmem score`` command being executed.

Like :data:`vidmem.benchmarks.sim_deck.COMMAND_ROOT`: the generic command hands a
benchmark's ``scorer_config`` only the benchmark's own options, so a default that depends
on what the user brought (Track-B scores the conditions its rollouts folder holds) reads
the folder here. ``None`` outside ``vidmem score`` (``run`` generates its outputs).
"""

from __future__ import annotations

from contextvars import ContextVar
from pathlib import Path

__all__ = ["COMMAND_OUTPUTS", "command_outputs"]

#: the ``--videos`` folder (``--rollouts``, ``--continuations`` ...) of ``vidmem score``
COMMAND_OUTPUTS: ContextVar[Path | None] = ContextVar("vidmem_command_outputs", default=None)


def command_outputs() -> Path | None:
    """The outputs folder of the ``vidmem score`` command being executed, or ``None``.

    Example:
        >>> command_outputs() is None  # not inside a command
        True
    """
    return COMMAND_OUTPUTS.get()
