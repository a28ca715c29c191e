"""Errors that reach the user.

Every error raised on bad input is a :class:`VidmemError`. The CLI prints its message
(no traceback unless ``--debug``) and exits with its ``exit_code``. Messages follow one
pattern so that a user can act on them: *where* (file, item, field), *what was
expected*, *what was found*, and *how to fix it*.
"""

from __future__ import annotations


class VidmemError(Exception):
    """Base class for errors caused by input, configuration or environment."""

    exit_code: int = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message}\n  fix: {hint}")


class UserInputError(VidmemError):
    """A path, argument, config value or dataset row that is not acceptable."""


class VideoError(VidmemError):
    """A video file that cannot be opened, probed or decoded as asked."""


class StoreError(VidmemError):
    """A run directory or its SQLite store that cannot be used."""


class UnknownNameError(VidmemError):
    """A benchmark, backend, generator or policy name that is not registered."""


class NotImplementedYetError(VidmemError):
    """A registered name whose implementation has not landed in this version."""


class MissingDependencyError(VidmemError):
    """An optional extra (e.g. ``models``) or model weights that are not installed."""


class JudgeUnavailableError(VidmemError):
    """A judge that gave no answer (transport failure, HTTP error, timeout) to a question.

    Never a result: the item that asked fails with it, and a resumed run asks again.
    """

    exit_code = 1


class RunFailedError(VidmemError):
    """A run that finished with items that failed (each stored with its error)."""

    exit_code = 1
