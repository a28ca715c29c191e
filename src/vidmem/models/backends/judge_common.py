"""What both judges share: reading a reply, the "JSON only" follow-up, counters, results.

``judge/openai`` (:mod:`vidmem.models.backends.judge_openai`) and the local Qwen-VL
judges (:mod:`vidmem.models.backends.judge_qwen`) differ only in how one answer is
obtained (an HTTP call with retries, or a greedy generation). The rest of a
:meth:`~vidmem.models.protocols.Judge.judge` call is :meth:`JudgeExchange._exchange`:

1. ask once; no answer at all gives ``status="error"``;
2. read the answer with :func:`read_reply`: one strict JSON object (no ``NaN``,
   ``Infinity`` or ``1e999``) holding ``request.required_keys``, each value named in
   ``request.key_types`` of an allowed JSON type; usable gives ``status="ok"``. The
   object is dug out of free text, or, for a request with ``strict_json``, the whole
   reply must be that object (:mod:`vidmem.models.json_strict`);
3. otherwise ask ONE follow-up (:func:`follow_up_messages`): the model's reply is kept
   as the assistant turn and a user turn says why it was not usable and contains
   :data:`JSON_ONLY_INSTRUCTION` (an empty reply is not replayed -- some servers refuse
   an empty assistant turn -- the instruction is then added as a last text part of the
   original user message);
4. still not usable, or no answer: ``status="unparsable"`` with the last raw text; no
   default answer is ever filled in.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from vidmem.errors import UserInputError, VidmemError
from vidmem.models.json_extract import find_json_object, missing_keys, wrong_types
from vidmem.models.json_strict import read_strict_json_object
from vidmem.models.protocols import JudgeRequest, JudgeResult

__all__ = [
    "JSON_ONLY_INSTRUCTION",
    "STAT_KEYS",
    "Attempt",
    "JudgeExchange",
    "JudgeReply",
    "follow_up_messages",
    "data_problem",
    "read_reply",
    "request_problem",
    "schema_problem",
]

#: Sentence every "JSON only" follow-up contains (tests and logs look for it).
JSON_ONLY_INSTRUCTION = (
    "Reply with only the JSON object: no prose, no Markdown code fence, no comments."
)

#: The counters of ``Judge.stats()``, in the order they are reported.
STAT_KEYS = ("requests", "calls", "retries", "format_retries", "ok", "unparsable", "errors")


@dataclass(frozen=True)
class JudgeReply:
    """One answer: the text and why it stopped (``"length"``: cut at the token limit)."""

    text: str
    finish_reason: str | None


#: One try at an answer: ``(reply or None, model calls made, what went wrong or None)``.
Attempt = tuple[JudgeReply | None, int, str | None]


def read_reply(
    reply: JudgeReply,
    required: Sequence[str],
    *,
    token_limit: str,
    key_types: Mapping[str, str | Sequence[str]] | None = None,
    answer_model: type | None = None,
    accept: Callable[[Mapping[str, Any]], str] | None = None,
    strict_json: bool = False,
) -> tuple[dict[str, Any] | None, str]:
    """Parse a reply; return ``(data, "")`` or ``(None, why it is not usable)``.

    Unusable: no JSON object (with ``strict_json``: a reply that is not, whitespace
    stripped, exactly one JSON object), an object holding a non-finite number, or an object that
    :func:`data_problem` refuses (a missing ``required`` key, a value of a JSON type
    ``key_types`` does not allow, an object ``answer_model`` does not validate in strict
    mode, or one the question's ``accept`` check refuses); nothing is coerced, and the
    data returned is the object as the model wrote it. ``token_limit`` names the setting
    that cut a ``"length"`` reply (``max_tokens``, ``max_new_tokens``) in the reason.
    """
    truncated = f" (the reply was cut at {token_limit})" if reply.finish_reason == "length" else ""
    if not reply.text.strip():
        return None, f"the reply was empty{truncated}"
    data, why = (read_strict_json_object if strict_json else find_json_object)(reply.text)
    if data is None:
        return None, f"{why}{truncated}"
    problem = data_problem(data, required, key_types=key_types, answer_model=answer_model,
                           accept=accept)
    if problem:
        return None, f"{problem}{truncated}"
    return data, ""


def data_problem(
    data: Any,
    required: Sequence[str],
    *,
    key_types: Mapping[str, str | Sequence[str]] | None = None,
    answer_model: type | None = None,
    accept: Callable[[Mapping[str, Any]], str] | None = None,
) -> str:
    """Why a parsed JSON object is not a usable answer; ``""`` when it is.

    The one rule every judge and the answer cache apply (a stored answer is checked
    again when read, so a row written under older rules is a miss, not an answer).

    Example:
        >>> data_problem({"present": True}, ("present",))
        ''
        >>> data_problem({"x": 1}, ("present",))
        "the JSON object lacks the required keys ['present']"
        >>> data_problem({"ids": []}, (), accept=lambda d: "" if d["ids"] else "no id named")
        'the answer cannot be used for this question: no id named'
    """
    if not isinstance(data, Mapping):
        return f"the answer is not a JSON object ({type(data).__name__})"
    missing = missing_keys(dict(data), required)
    if missing:
        return f"the JSON object lacks the required keys {missing}"
    wrong = wrong_types(dict(data), key_types or {})
    if wrong:
        return f"the JSON object has values of the wrong type: {'; '.join(wrong)}"
    if answer_model is not None:
        problem = schema_problem(data, answer_model)
        if problem:
            return f"the JSON object does not match the answer schema: {problem}"
    if accept is not None:
        problem = accept(data)
        if problem:
            return f"the answer cannot be used for this question: {problem}"
    return ""


def request_problem(request: JudgeRequest, data: Any) -> str:
    """:func:`data_problem` with every check ``request`` carries."""
    return data_problem(data, request.required_keys, key_types=request.key_types,
                        answer_model=request.answer_model, accept=request.accept)


def schema_problem(data: Mapping[str, Any], answer_model: type) -> str:
    """Why ``data`` fails ``answer_model`` (a pydantic model, strict mode); ``""`` if it passes.

    Example:
        >>> from pydantic import BaseModel
        >>> class Answer(BaseModel):
        ...     present: bool
        >>> schema_problem({"present": True}, Answer)
        ''
        >>> schema_problem({"present": "yes"}, Answer)
        'present: Input should be a valid boolean'
    """
    from pydantic import ValidationError

    try:
        answer_model.model_validate(dict(data), strict=True)  # type: ignore[attr-defined]
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        parts = [f"{'.'.join(str(p) for p in e['loc']) or '(object)'}: {e['msg']}"
                 for e in errors[:3]]
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        return "; ".join(parts) + more
    return ""


def follow_up_messages(
    user: dict[str, Any], reply_text: str, problem: str, required: Sequence[str]
) -> list[dict[str, Any]]:
    """The conversation of the "JSON only" follow-up (see the module docstring).

    Args:
        user: the original user message, ``{"role": "user", "content": [parts...]}``.
        reply_text: the model's first reply.
        problem: why it was not usable (from :func:`read_reply`).
        required: the keys the JSON object must hold.
    """
    follow_up = f"Your previous reply could not be used: {problem}. {JSON_ONLY_INSTRUCTION}"
    if required:
        follow_up += " It must contain the keys: " + ", ".join(required) + "."
    if reply_text.strip():
        return [
            user,
            {"role": "assistant", "content": reply_text},
            {"role": "user", "content": follow_up},
        ]
    # an empty assistant turn is refused by some servers: re-ask in one message
    return [{"role": "user", "content": [*user["content"], {"type": "text", "text": follow_up}]}]


class ManyJudging:
    """Mixin: :meth:`judge_many`, many questions in flight at once, answers in order.

    The class sets :attr:`concurrency` (how many :meth:`judge` calls run at once; 1 for
    a local model, which answers one question at a time) and provides ``name`` and
    ``judge``. Each call keeps its own deadline and retries, so a slow or failing
    question never holds up or fails the others; a question refused as bad input
    comes back as an ``error`` result naming it.
    """

    name: str
    concurrency: int = 1

    def judge(self, request: JudgeRequest) -> JudgeResult:  # provided by the judge
        raise NotImplementedError

    def judge_many(self, requests: Sequence[JudgeRequest], *,
                   concurrency: int | None = None) -> list[JudgeResult]:
        """Judge every request; result ``k`` answers request ``k``.

        Args:
            requests: the questions.
            concurrency: calls in flight at once (default: the judge's
                :attr:`concurrency`).

        Example:
            >>> class Echo(ManyJudging):
            ...     name, concurrency = "echo", 4
            ...     def judge(self, r):
            ...         return JudgeResult(r.item_id, "ok", {"p": r.prompt}, r.prompt, 1, self.name)
            >>> [r.data["p"] for r in Echo().judge_many([JudgeRequest(str(i), f"q{i}") for i in range(6)])]
            ['q0', 'q1', 'q2', 'q3', 'q4', 'q5']
        """
        todo = list(requests)
        n = int(self.concurrency if concurrency is None else concurrency)
        if n < 1:
            raise UserInputError(f"{self.name}: concurrency must be >= 1, found {n}")
        if n == 1 or len(todo) <= 1:
            return [self._judge_or_error(r) for r in todo]
        with ThreadPoolExecutor(max_workers=min(n, len(todo)),
                                thread_name_prefix="vidmem-judge") as pool:
            return list(pool.map(self._judge_or_error, todo))

    def _judge_or_error(self, request: JudgeRequest) -> JudgeResult:
        try:
            return self.judge(request)
        except VidmemError as exc:  # bad input for this question only
            hint = f" (fix: {exc.hint})" if exc.hint else ""
            return JudgeResult(item_id=str(getattr(request, "item_id", "?")), status="error",
                               data=None, raw="", attempts=0, judge=self.name,
                               error=f"{exc.message}{hint}")


class JudgeExchange(ManyJudging):
    """Mixin for a judge: counters, results and the ask / follow-up sequence.

    The class using it sets ``name``, ``_log`` (its module's logger) and
    ``_token_limit`` (the setting named when a reply is cut), and calls
    :meth:`_start_counters` from ``__init__``.
    """

    name: str
    _log: logging.Logger
    _token_limit: str

    def _start_counters(self) -> None:
        self._lock = threading.Lock()
        self._stats = dict.fromkeys(STAT_KEYS, 0)

    def _count(self, key: str, by: int = 1) -> None:
        with self._lock:
            self._stats[key] += by

    def stats(self) -> dict[str, int]:
        """Counters since construction (thread-safe snapshot).

        ``requests``: :meth:`judge` calls; ``calls``: model calls made (HTTP calls for
        ``judge/openai``, generations for a local judge); ``retries``: calls repeated
        after a transport failure (always 0 for a local judge); ``format_retries``:
        "JSON only" follow-ups; ``ok`` / ``unparsable`` / ``errors``: results by status.
        """
        with self._lock:
            return dict(self._stats)

    def _exchange(
        self,
        request: JudgeRequest,
        user: dict[str, Any],
        first: Callable[[], Attempt],
        again: Callable[[list[dict[str, Any]]], Attempt],
    ) -> JudgeResult:
        """Steps 1-4 of the module docstring; ``first()`` asks with ``[user]``,
        ``again(messages)`` asks the follow-up. Never raises for model misbehaviour."""
        required = tuple(request.required_keys)
        key_types = request.key_types
        reply, attempts, error = first()
        if reply is None:
            return self._result(request, "error", None, "", attempts, error)
        data, problem = read_reply(
            reply, required, token_limit=self._token_limit, key_types=key_types,
            answer_model=request.answer_model, accept=request.accept,
            strict_json=request.strict_json,
        )
        if data is not None:
            return self._result(request, "ok", data, reply.text, attempts, None)

        # One "JSON only" follow-up, with the model's reply kept as the assistant turn.
        self._count("format_retries")
        self._log.info(
            "%s item %s: %s; asking again for JSON only", self.name, request.item_id, problem
        )
        second, calls, error = again(follow_up_messages(user, reply.text, problem, required))
        attempts += calls
        if second is None:  # the judge failed, not the model: asked again on resume
            return self._result(
                request,
                "error",
                None,
                reply.text,
                attempts,
                f"{problem}; the JSON-only follow-up got no answer: {error}",
            )
        data, problem2 = read_reply(
            second, required, token_limit=self._token_limit, key_types=key_types,
            answer_model=request.answer_model, accept=request.accept,
            strict_json=request.strict_json,
        )
        if data is not None:
            return self._result(request, "ok", data, second.text, attempts, None)
        return self._result(
            request,
            "unparsable",
            None,
            second.text,
            attempts,
            f"{problem2} (also after the JSON-only follow-up; first reply: {problem})",
        )

    def _result(
        self,
        request: JudgeRequest,
        status: str,
        data: dict[str, Any] | None,
        raw: str,
        attempts: int,
        error: str | None,
    ) -> JudgeResult:
        self._count({"ok": "ok", "unparsable": "unparsable", "error": "errors"}[status])
        if status != "ok":
            self._log.warning("%s item %s: %s: %s", self.name, request.item_id, status, error)
        return JudgeResult(
            item_id=request.item_id,
            status=status,  # type: ignore[arg-type]
            data=data,
            raw=raw,
            attempts=attempts,
            judge=self.name,
            error=error,
        )
