"""``vidmem judge-agreement``: put a sample of a run's judge questions to a second judge.

The run stores no images, only its score requests (plain data naming the videos and
carrying the scorer configuration), so the questions are rebuilt by *replaying* the
scoring: the run's done score items are put in a seeded order
(``numpy.random.default_rng(seed).permutation`` of the items sorted by id), each is
scored again with the benchmark's own backends whose judges are wrapped in a recorder
around the answer cache (so the first judge normally answers from the cache, asking
nothing), until at least ``sample`` questions are collected. Whole items are taken --
a cluster sample -- because one item's questions are not independent; the intervals
resample items (:func:`vidmem.stats.agreement.field_agreement`). The same questions
then go to the second judge (also answer-cached), and every answer field's raw
agreement and Cohen's kappa (or mean absolute difference and Pearson r) is written to
``RUN/judge_agreement/<judge name, '/' as '-'>.json``.

Knows no benchmark by name: everything comes from the run's ``run.json`` and store.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vidmem.errors import UserInputError, VidmemError
from vidmem.io.jsonl import write_text_atomic
from vidmem.models.protocols import JudgeRequest, JudgeResult
from vidmem.registry import BACKENDS, BENCHMARKS
from vidmem.runners.judge_cache import AnswerCache, CachedJudge, judge_identity
from vidmem.runners.store import RunDir, StoredItem
from vidmem.stats.agreement import field_agreement

__all__ = ["AGREEMENT_DIR", "PROTOCOL", "judge_agreement"]

AGREEMENT_DIR = "judge_agreement"
PROTOCOL = ("cluster sample of whole items; percentile bootstrap over items; "
            "Cohen's kappa from scikit-learn")
_EXAMPLES = 3  # non-ok answers quoted in the record


class _Recorder:
    """A judge that passes every question to ``inner`` and logs (item, request, result)."""

    def __init__(self, inner: Any, replay: _Replay) -> None:
        self.inner = inner
        self._replay = replay

    def __getattr__(self, name: str) -> Any:
        if name in ("inner", "_replay"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def info(self) -> Any:
        return self.inner.info()

    def judge(self, request: JudgeRequest) -> JudgeResult:
        return self.judge_many([request])[0]

    def judge_many(self, requests: Sequence[JudgeRequest], *,
                   concurrency: int | None = None) -> list[JudgeResult]:
        results = self.inner.judge_many(list(requests), concurrency=concurrency)
        with self._replay.lock:
            self._replay.asked += [(self._replay.item, q, r)
                                   for q, r in zip(requests, results, strict=True)]
        return results


class _Replay:
    """Scores stored items again, recording every judge question they ask."""

    def __init__(self, bench: Any, cache: AnswerCache | None) -> None:
        self.bench, self.cache = bench, cache
        self.lock = threading.Lock()
        self.item = ""
        self.asked: list[tuple[str, JudgeRequest, JudgeResult]] = []
        self.recorders: list[_Recorder] = []
        self._backends: dict[str, Any] = {}

    def _wrap(self, judge: Any) -> _Recorder:
        self.recorders.append(_Recorder(
            judge if self.cache is None else CachedJudge(judge, self.cache), self))
        return self.recorders[-1]

    def backends(self, scorer: Mapping[str, Any]) -> Any:
        key = json.dumps(scorer, sort_keys=True)
        if key not in self._backends:
            bench = self.bench
            loaded = bench.load_backends(bench.config_from_dict(scorer))
            self._backends[key] = bench.with_judges(loaded, self._wrap)
        return self._backends[key]

    def score(self, run: RunDir, stored: StoredItem) -> None:
        request = stored.request
        scorer = request.get("scorer") if isinstance(request, Mapping) else None
        if not isinstance(scorer, Mapping):
            raise UserInputError(
                f"{run.path}: {self.bench.item_word} '{stored.item_id}': its stored request "
                "holds no scorer configuration under 'scorer', so it cannot be replayed",
                hint="rescore the run with this vidmem (vidmem score ... --out RUN)")
        backends = self.backends(scorer)
        self.item = stored.item_id
        try:
            self.bench.score_item(request, backends)
        except Exception as exc:  # any failure names the item and the way out
            raise _replay_error(run, self.bench, stored, exc) from exc

    def close(self) -> None:
        """Drop the loaded backends (and the first judge's models with them)."""
        self._backends.clear()
        self.recorders.clear()

    def first_judges(self) -> list[dict[str, Any]]:
        infos = {json.dumps(r.info().to_dict(), sort_keys=True, default=str): r.info().to_dict()
                 for r in self.recorders}
        return list(infos.values())

    def answer_counts(self) -> dict[str, int]:
        if self.cache is None:
            return {"from_cache": 0, "asked": len(self.asked)}
        counts = {"from_cache": 0, "asked": 0}
        for recorder in self.recorders:
            for name, n in recorder.inner.answer_counts().items():
                if name in counts:
                    counts[name] += n
        return counts


def _missing_paths(value: Any) -> list[str]:
    """Absolute file paths named anywhere in a request that do not exist."""
    if isinstance(value, Mapping):
        return [p for v in value.values() for p in _missing_paths(v)]
    if isinstance(value, list | tuple):
        return [p for v in value for p in _missing_paths(v)]
    if isinstance(value, str) and os.path.isabs(value) and Path(value).suffix \
            and not Path(value).exists():
        return [value]
    return []


def _replay_error(run: RunDir, bench: Any, stored: StoredItem, exc: Exception) -> UserInputError:
    what = exc.message if isinstance(exc, VidmemError) else f"{type(exc).__name__}: {exc}"
    where = f"{run.path}: replaying the scoring of {bench.item_word} '{stored.item_id}' failed"
    missing = _missing_paths(stored.request)
    if missing:
        hint = (f"the replay re-reads the files the run's requests name, and "
                f"{', '.join(missing)} is gone: put it back where the run found it "
                "(or rescore the run with vidmem score and check that run instead)")
    else:
        hint = (exc.hint if isinstance(exc, VidmemError) and exc.hint else
                "fix what the error names and rerun; --debug shows the traceback")
    return UserInputError(f"{where}: {what.splitlines()[0] if what else type(exc).__name__}",
                          hint=hint)


def _done_items(run: RunDir) -> list[StoredItem]:
    """The latest done score item of every item id, sorted by id."""
    latest: dict[str, StoredItem] = {}
    store = run.items()
    try:
        for s in store.iter_items(kind="score", status="done"):
            if s.item_id not in latest or s.updated_at > latest[s.item_id].updated_at:
                latest[s.item_id] = s
    finally:
        store.close()
    return [latest[k] for k in sorted(latest)]


def _not_ok(asked: Sequence[tuple[str, JudgeRequest, JudgeResult]]) -> list[dict[str, Any]]:
    return [{"item_id": item, "question": q.item_id, "status": r.status, "error": r.error}
            for item, q, r in asked if r.status != "ok"]


_write_atomic = write_text_atomic


def judge_agreement(
    run_dir: str | Path,
    second_judge: str,
    second_options: Mapping[str, Any] | None = None,
    *,
    sample: int = 200,
    seed: int = 0,
    judge_cache: str | Path | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> tuple[dict[str, Any], Path]:
    """Ask a seeded cluster sample of a run's judge questions to ``second_judge``.

    Args:
        run_dir: a run directory of a benchmark that asks a judge.
        second_judge: the second judge's backend registry name (``judge/openai``).
        second_options: keyword options for that backend.
        sample: questions wanted; whole items are added until at least this many.
        seed: orders the items and seeds the bootstrap.
        judge_cache: the answer cache file for both judges (``None``: no cache, so the
            first judge is asked every question again).
        confidence: interval level in (0, 1).
        n_resamples: bootstrap draws.

    Returns:
        ``(record, path)``: the record written (see the module docstring) and its path.

    Raises:
        UserInputError: the benchmark asks no judge; the run has no scored item; the
            second judge is not a judge, or with the cache on is the first judge itself;
            an item's replay fails (named, e.g. a video that is gone); nothing was asked.
        StoreError: the run directory or the cache cannot be read or written.
    """
    if sample < 1:
        raise UserInputError(f"--sample must be at least 1, found {sample}")
    run = RunDir.open(run_dir)
    bench = BENCHMARKS.load(run.manifest.benchmark)
    if not bench.asks_judge:
        raise UserInputError(
            f"{run.path}: benchmark {bench.name} asks no judge, so there is nothing to compare",
            hint="pass a run of a benchmark that asks a VLM judge (vidmem list benchmarks)")
    entry = BACKENDS.get(second_judge)
    if entry.meta.get("role") != "judge":
        judges = [e.name for e in BACKENDS.entries() if e.meta.get("role") == "judge"]
        raise UserInputError(f"--second-judge {second_judge}: expected a judge backend, found "
                             f"role {entry.meta.get('role')!r}", hint=f"judges: {', '.join(judges)}")
    items = _done_items(run)
    if not items:
        raise UserInputError(
            f"{run.path}: the run has no scored {bench.item_word} (status "
            f"'{run.manifest.status}')",
            hint="finish the run first (rerun its command with --resume), then check it")
    cache_path = None if judge_cache is None else Path(judge_cache).expanduser().resolve()
    cache = None if cache_path is None else AnswerCache(cache_path)

    replay = _Replay(bench, cache)
    sampled: list[str] = []
    for index in np.random.default_rng(seed).permutation(len(items)):
        replay.score(run, items[int(index)])
        sampled.append(items[int(index)].item_id)
        if len(replay.asked) >= sample:
            break
    if not replay.asked:
        raise UserInputError(
            f"{run.path}: replayed {len(sampled)} {bench.item_word}(s) and the judge was asked "
            "nothing",
            hint=f"{bench.name}'s with_judges must wrap every judge its load_backends returns")
    first_judges, first_answers = replay.first_judges(), replay.answer_counts()
    asked = list(replay.asked)
    replay.close()  # let the first judge's models go before the second one loads

    try:
        second = BACKENDS.load(second_judge)(**dict(second_options or {}))
    except TypeError as exc:  # an option the backend does not take
        raise UserInputError(f"--second-judge {second_judge}: {exc}",
                             hint="check the --second-judge-opt keys against the backend's "
                             "documented options") from exc
    second_info = second.info().to_dict()
    if cache is not None and any(judge_identity(second_info) == judge_identity(f)
                                 for f in first_judges):
        raise UserInputError(
            f"--second-judge {second_judge}: answers as the first judge does (same model and "
            "settings), so with the answer cache on it would only repeat the first judge's "
            "cached answers",
            hint="name another judge or model, or pass --judge-cache off to ask the same "
            "judge again (a repeatability check)")
    judge = second if cache is None else CachedJudge(second, cache)
    answers = judge.judge_many([q for _, q, _ in asked])
    second_asked = [(item, q, r) for (item, q, _), r in zip(asked, answers, strict=True)]
    second_answers = ({k: n for k, n in judge.answer_counts().items() if k in ("from_cache", "asked")}
                      if isinstance(judge, CachedJudge) else {"from_cache": 0, "asked": len(asked)})

    both = [k for k in range(len(asked))
            if asked[k][2].status == "ok" and second_asked[k][2].status == "ok"]
    fields = field_agreement(
        [asked[k][2].data or {} for k in both], [second_asked[k][2].data or {} for k in both],
        clusters=[asked[k][0] for k in both], confidence=confidence,
        n_resamples=n_resamples, seed=seed) if both else []
    first_bad, second_bad = _not_ok(asked), _not_ok(second_asked)
    record: dict[str, Any] = {
        "run": str(run.path.resolve()),
        "benchmark": bench.name,
        "first_judges": first_judges,
        "second_judge": second_info,
        "sample": sample,
        "seed": seed,
        "items": sampled,
        "n_items": len(sampled),
        "items_in_run": len(items),
        "questions": len(asked),
        "sample_reached": len(asked) >= sample,
        "pairs": len(both),
        "first_not_ok": len(first_bad),
        "second_not_ok": len(second_bad),
        "not_ok_examples": {"first": first_bad[:_EXAMPLES], "second": second_bad[:_EXAMPLES]},
        "first_judge_answers": first_answers,
        "second_judge_answers": second_answers,
        "judge_cache": None if cache_path is None else str(cache_path),
        "confidence": confidence,
        "n_resamples": n_resamples,
        "fields": [f.to_dict() for f in fields],
        "protocol": PROTOCOL,
    }
    path = run.path / AGREEMENT_DIR / f"{second_judge.replace('/', '-')}.json"
    _write_atomic(path, json.dumps(record, indent=2, default=str) + "\n")
    return record, path
