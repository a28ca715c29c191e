"""Batched first asks for the local Qwen-VL judges: :meth:`QwenVLBatching.judge_many`.

:class:`QwenVLBatching` is mixed into :class:`vidmem.models.backends.judge_qwen.QwenVLJudge`.
``judge_many`` takes the requests ``batch_size`` at a time: the first ask of every
request of a slice is ONE greedy ``generate`` call over the left-padded prompts, then
each request goes through the usual :meth:`~vidmem.models.backends.judge_common.JudgeExchange._exchange`
sequence with that precomputed reply; the rare "JSON only" follow-ups are generated one
at a time, as :meth:`~vidmem.models.backends.judge_qwen.QwenVLJudge.judge` does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from vidmem.errors import UserInputError, VidmemError
from vidmem.models.backends.base import batched
from vidmem.models.backends.judge_common import Attempt, JudgeReply
from vidmem.models.backends.judge_limits import reply_limit
from vidmem.models.protocols import JudgeRequest, JudgeResult

__all__ = ["QwenVLBatching", "refused"]

log = logging.getLogger(__name__)

#: What :meth:`QwenVLBatching._stage` returns: the user turn, the preprocessed images and
#: the expanded prompt text of a request's first ask.
Staged = tuple[dict[str, Any], Any, str]


def refused(judge_name: str, request: JudgeRequest, exc: VidmemError) -> JudgeResult:
    """The ``error`` result of a request refused as bad input (as ``ManyJudging`` gives it)."""
    hint = f" (fix: {exc.hint})" if exc.hint else ""
    return JudgeResult(
        item_id=str(getattr(request, "item_id", "?")),
        status="error",
        data=None,
        raw="",
        attempts=0,
        judge=judge_name,
        error=f"{exc.message}{hint}",
    )


class QwenVLBatching:
    """Mixin: :meth:`judge_many` with the first asks of ``batch_size`` requests batched.

    The judge provides the model (``_generate``), the inputs (``_stage``,
    ``_model_inputs``), the single-request path (``_call``, ``_follow_up``, ``judge``)
    and the counters of :class:`~vidmem.models.backends.judge_common.JudgeExchange`.
    """

    name: str
    batch_size: int
    tokenizer: Any
    max_new_tokens: int | str
    _eos_ids: set[int]
    _judge_or_error: Callable[[JudgeRequest], JudgeResult]
    _stage: Callable[[JudgeRequest], Staged]
    _model_inputs: Callable[..., dict[str, Any]]
    _generate: Callable[[dict[str, Any]], Any]
    _call: Callable[[dict[str, Any]], Attempt]
    _limit: Callable[[dict[str, Any]], int]
    _follow_up: Callable[..., Callable[[list[dict[str, Any]]], Attempt]]
    _exchange: Callable[..., JudgeResult]
    _count: Callable[..., None]
    _release_memory: Callable[[], None]

    def judge_many(
        self, requests: Sequence[JudgeRequest], *, concurrency: int | None = None
    ) -> list[JudgeResult]:
        """Judge every request; result ``k`` answers request ``k``.

        The requests are taken ``batch_size`` at a time (the constructor's argument;
        default 1, which judges them one after another exactly as :meth:`judge`).
        Within a slice, the first ask of every request is one greedy ``generate`` call
        over the prompts left-padded to the longest (the tokenizer pads, with
        ``padding_side="left"`` for that call only, and the attention mask hides the
        padding); each reply is cut where the prompts end and at its first
        end-of-sequence token (``finish_reason="length"`` when it ran to its
        request's token limit without one; the batch generates up to the largest limit
        of its rows and cuts each row at its own, which greedy decoding makes the same
        as generating it alone with that limit). Each request then follows the usual sequence
        with that reply; the "JSON only" follow-ups, rare with a real judge, are
        generated one at a time. In float32 the batched greedy answers equal the
        one-at-a-time ones (the tests check it on tiny models); in bfloat16/float16
        on a GPU, padded batches may round differently and flip a near-tie token.

        A request refused as bad input (an empty prompt, a malformed image) comes back
        as an ``error`` result naming it and is left out of its slice's batch; the
        others are judged as usual. An exception in a batched generation (CUDA out of
        memory...) gives every request of that batch ``status="error"`` with the
        message, as it would one request. Counters are those of one-at-a-time
        judging: a batch of ``k`` first asks counts ``k`` ``calls``.

        Args:
            requests: the questions.
            concurrency: accepted for the :class:`~vidmem.models.protocols.Judge`
                protocol (must be >= 1); the local model runs one ``generate`` call at a
                time, ``batch_size`` sets how many questions share it.
        """
        todo = list(requests)
        if concurrency is not None and int(concurrency) < 1:
            raise UserInputError(f"{self.name}: concurrency must be >= 1, found {concurrency}")
        rows = self.batch_size
        if rows > 1 and self.tokenizer.pad_token_id is None:
            log.warning(
                "%s: the tokenizer has no padding token; judging one request at a "
                "time instead of batch_size=%d",
                self.name,
                rows,
            )
            rows = 1
        if rows == 1 or len(todo) <= 1:
            return [self._judge_or_error(r) for r in todo]
        results: list[JudgeResult] = []
        for chunk in batched(todo, rows):
            results.extend(self._judge_batch(chunk))
        return results

    def _judge_batch(self, requests: Sequence[JudgeRequest]) -> list[JudgeResult]:
        """One slice: stage each request, batch the first asks, then finish each in order."""
        results: list[JudgeResult | None] = [None] * len(requests)
        staged: list[tuple[int, Staged]] = []
        for k, request in enumerate(requests):
            try:
                staged.append((k, self._stage(request)))
            except VidmemError as exc:  # bad input for this question only
                results[k] = refused(self.name, request, exc)
        limits = [reply_limit(self.max_new_tokens, requests[k]) for k, _ in staged]
        firsts = self._call_batch(
            [text for _, (_, _, text) in staged], [vision for _, (_, vision, _) in staged],
            limits,
        )
        for (k, (user, vision, _)), attempt, limit in zip(staged, firsts, limits, strict=True):
            request = requests[k]
            self._count("requests")
            results[k] = self._exchange(
                request, user, lambda a=attempt: a,
                self._follow_up(vision, request.item_id, limit)
            )
        return [r for r in results if r is not None]

    def _call_batch(self, texts: list[str], visions: list[dict[str, Any] | None],
                    limits: list[int]) -> list[Attempt]:
        """The first asks of a slice: one ``(reply, 1, None)`` or ``(None, 1, error)`` per row."""
        if len(texts) <= 1:  # nothing to pad: exactly the single-request path
            return [self._call({**self._model_inputs(texts, visions), "max_new_tokens": limit})
                    for limit in limits]
        self._count("calls", len(texts))
        try:
            inputs = {**self._model_inputs(texts, visions), "max_new_tokens": max(limits)}
            replies = self._run_batch(inputs, limits)
        except Exception as exc:  # CUDA OOM, kernel errors...: answers that never came
            self._release_memory()
            error = f"{type(exc).__name__}: {exc}"
            return [(None, 1, error) for _ in texts]
        return [(reply, 1, None) for reply in replies]

    def _run_batch(self, inputs: dict[str, Any], limits: list[int]) -> list[JudgeReply]:
        """One greedy ``generate`` over a padded batch; one reply per row."""
        output = self._generate(inputs)
        return self._decode_rows(output, int(inputs["input_ids"].shape[1]), limits)

    def _decode_rows(self, output: Any, prompt_len: int,
                     limits: list[int] | None = None) -> list[JudgeReply]:
        """Cut each generated row after its prompt, at its token limit (``limits``, one
        per row; default the judge's) and at its first end-of-sequence token.

        With left padding every prompt ends at column ``prompt_len``; a row that ends
        before the longest one is filled with padding after its end-of-sequence token,
        which is dropped here.
        """
        rows = output[:, prompt_len:].tolist()
        if limits is None:
            limits = [self._limit({})] * len(rows)
        replies = []
        for row, limit in zip(rows, limits, strict=True):
            row = row[:limit]
            end = next((k + 1 for k, token in enumerate(row) if token in self._eos_ids), None)
            new = row if end is None else row[:end]
            cut = end is None and len(new) >= limit
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            replies.append(
                JudgeReply(text if isinstance(text, str) else "", "length" if cut else "stop")
            )
        return replies
