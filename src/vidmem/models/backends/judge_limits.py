"""The reply length limit a judge applies to one question.

A prompt file may name the limit its official scorer sends (``max_tokens``: Track-A's
reference question 256, Track-B's segment question 1536), which reaches every
:class:`~vidmem.models.protocols.JudgeRequest` it makes. A judge's own option
(``judge/openai`` ``max_tokens``, a local judge's ``max_new_tokens``) defaults to
:data:`PER_QUESTION`: each question gets its request's limit, else
:data:`DEFAULT_REPLY_TOKENS`. A number set explicitly is the user's decision (a
reasoning judge may need more room; a test on a tiny random model less) and applies to
every question; it is recorded with the judge's settings, so run.json shows it.
"""

from __future__ import annotations

from typing import Any

from vidmem.errors import UserInputError
from vidmem.models.protocols import JudgeRequest

__all__ = ["DEFAULT_REPLY_TOKENS", "PER_QUESTION", "check_limit_option", "reply_limit"]

#: the option value meaning "each request's own limit" (the default)
PER_QUESTION = "per_question"
#: the limit of a request whose prompt names none
DEFAULT_REPLY_TOKENS = 1024


def check_limit_option(where: str, key: str, value: Any, *, allow_none: bool) -> int | str | None:
    """The option's value checked: :data:`PER_QUESTION`, an integer >= 1, or ``None``
    where ``allow_none`` (``judge/openai``: send no limit, the server's default).

    Example:
        >>> check_limit_option("judge/openai", "max_tokens", 2048.0, allow_none=True)
        2048
        >>> check_limit_option("judge/openai", "max_tokens", "per_question", allow_none=True)
        'per_question'
    """
    if value == PER_QUESTION or (value is None and allow_none):
        return value
    good = (not isinstance(value, (bool, str)) and isinstance(value, (int, float))
            and value >= 1 and value == int(value))
    if not good:
        none = ", None (the server's default)" if allow_none else ""
        raise UserInputError(
            f"{where}: {key} must be an integer >= 1{none} or '{PER_QUESTION}' (each "
            f"question's limit from its prompt file), found {value!r}",
            hint=f"leave {key} out to use each question's own limit")
    return int(value)


def reply_limit(option: int | str | None, request: JudgeRequest) -> int | None:
    """The limit for ``request`` under the judge's ``option``.

    Example:
        >>> reply_limit(PER_QUESTION, JudgeRequest("x", "q", max_tokens=256))
        256
        >>> reply_limit(PER_QUESTION, JudgeRequest("x", "q"))
        1024
        >>> reply_limit(4096, JudgeRequest("x", "q", max_tokens=256))
        4096
    """
    if option == PER_QUESTION:
        return request.max_tokens or DEFAULT_REPLY_TOKENS
    return None if option is None else int(option)
