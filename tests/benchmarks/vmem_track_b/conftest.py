"""Track-B sim worlds built once per test session and shared by this folder's test files.

Rules:

* **pristine**: every folder a fixture here returns is shared by every test of the
  session. Never write into it -- no ``analyze`` (it writes ``analyses/`` and the
  report), no rescoring into it, no renaming or deleting. Copy first:
  ``track_b_world.copy(src, tmp_path / "run")`` (a ``shutil.copytree``, well under a
  second: a 14-segment run is about 2 MB). A copied run is relocated: the paths it
  stored of its own folder are rewritten to the copy's, so analysing it, editing its
  clips or deleting its progress files touch the copy only. The gold and deck paths
  stay absolute: they are shared read-only.
* **one sim world**: seed 0, 14 segments, long gap >= 8 segments, fps 4, bootstrap 200
  resamples for ``vidmem run``. Story ``k`` of a build depends only on ``(seed, k)``
  (:func:`vidmem.benchmarks.vmem_track_b.sim_build.build_track_b`), so the first story of
  the 2-story gold is the 1-story gold's story, byte for byte.
* **one judge deck and one answer cache** for every build: a clip with the same pixels,
  roster and question is judged once per session, whichever run or brought folder it is
  in (the sim generator's clips are a function of the request, so the ``none`` condition
  of every memory-``none`` build is the same 14 clips). A test that passes
  ``--judge-cache`` uses ``track_b_world.cache_copy(dst)``, never the session file, so
  what it asks and what it finds cached do not depend on which tests ran before.
* **lazy**: a run is built the first time a test asks for it, then reused.

Times below were measured building everything in this order on two cores with other
tests running beside (load about 1); a busier box takes up to twice as long, and a clip
whose answers are already cached costs about a third less.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SEED = 0
N_SEGMENTS = 14
GAP_LONG = 8
FPS = 4
BOOTSTRAP_RESAMPLES = 200
#: the memory-``none`` run's conditions: the union of what its users need (report and
#: compare: none, last_seen; stripping: none; attribution: none, seg_uniform)
NONE_RUN_CONDITIONS = ("none", "last_seen", "seg_uniform")


@dataclass(frozen=True)
class SimRun:
    """A finished ``vidmem run`` or ``vidmem score`` of Track-B on the sim (pristine: copy
    before writing).

    Attributes:
        gold: the gold it ran on (shared, read-only).
        run: the run folder (run.json, items.sqlite, rollouts/, scores.jsonl, summary.json,
            report/).
        deck: the ``judge/sim-cards`` card deck it was judged with.
        memory: the sim generator's ``memory=`` option (``brought`` for a scored
            brought-rollouts folder).
        conditions: the conditions it ran or scored.
        rollouts: where its clips are (``run/rollouts``, or the pristine brought folder
            that ``vidmem score`` read).
    """

    gold: Path
    run: Path
    deck: Path
    memory: str
    conditions: tuple[str, ...]
    rollouts: Path


def _slug(text: str) -> str:
    """A folder name for option text.

    >>> _slug("decay:20,last_seen")
    'decay_20_last_seen'
    """
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", text)


def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    """``relative path -> (size, mtime_ns)`` of every file under ``folder``."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _relocate(src: Path, dst: Path) -> None:
    """Point the absolute paths a run stored of its own folder (the clips in its score
    requests, the progress files in its generation requests, ``--out`` in run.json's
    command) from ``src`` to its copy ``dst``, as if it had been built at ``dst``.

    Why: the scorers and analyses read a clip at its stored path whenever that file
    exists, so an unrelocated copy would read -- and a resumed one write -- the pristine
    run. Item keys are left as they are (a resumed copy would recompute).
    """
    pairs = [(f'"{src}/', f'"{dst}/'), (f'"{src}"', f'"{dst}"')]
    conn = sqlite3.connect(dst / "items.sqlite")
    try:
        with conn:
            for old, new in pairs:
                for col in ("request", "response", "score"):
                    conn.execute(f"UPDATE items SET {col} = replace({col}, ?, ?)", (old, new))
    finally:
        conn.close()
    text = (dst / "run.json").read_text("utf-8")
    for old, new in pairs:
        text = text.replace(old, new)
    (dst / "run.json").write_text(text, "utf-8")


def _cli(*args: str) -> None:
    from vidmem.cli import main

    try:
        main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if code:
            raise RuntimeError(f"track-B sim fixture: `vidmem {' '.join(args[:2])}` exited "
                               f"{code} ({' '.join(args)})") from exc


class TrackBWorld:
    """Builds (once) and hands out the session's Track-B sim golds, runs and rollouts."""

    def __init__(self, root: Path) -> None:
        from vidmem.sim.cards import write_card_deck

        self.root = root
        self.deck = write_card_deck(root / "deck")
        self.cache = root / "answers.sqlite"
        self._golds: dict[int, Path] = {}
        self._runs: dict[tuple, SimRun] = {}
        self._clips: dict[tuple[str, str], Path] = {}
        self._brought: dict[tuple, Path] = {}
        self._sealed: dict[Path, dict[str, tuple[int, int]]] = {self.deck: _listing(self.deck)}

    def _seal(self, folder: Path) -> Path:
        """Remember a pristine folder's files, for :meth:`changed` at the session's end."""
        self._sealed[folder] = _listing(folder)
        return folder

    def changed(self) -> list[str]:
        """Files added, removed or rewritten in a pristine folder since it was built."""
        out = []
        for folder, before in self._sealed.items():
            now = _listing(folder)
            out += [f"{folder / name}" for name in sorted(set(before) | set(now))
                    if before.get(name) != now.get(name)]
        return out

    def gold(self, n_stories: int = 1) -> Path:
        """The gold of ``n_stories`` sim stories (seed 0, 14 segments, long gap 8); ~1 s."""
        if n_stories not in self._golds:
            from vidmem.benchmarks.vmem_track_b.sim_build import build_track_b

            gold = self.root / f"gold_{n_stories}"
            gold.mkdir()
            build_track_b(gold, seed=SEED, n_cases=n_stories, n_segments=N_SEGMENTS,
                          gap_long_threshold=GAP_LONG)
            self._golds[n_stories] = self._seal(gold)
        return self._golds[n_stories]

    def run(self, memory: str, conditions: Sequence[str], **generator_opts: str) -> SimRun:
        """``vidmem run vmem_track_b`` on the 1-story gold with the sim generator
        (``memory``, fps 4, any further ``--generator-opt`` given as keywords, e.g.
        ``duration_seconds="1.5"`` or ``ignore_references="0.5"``), ``conditions``, the
        session's deck and answer cache, 200 bootstrap resamples; ~0.7 s a clip generated
        and judged."""
        opts = tuple(sorted(generator_opts.items()))
        key = (memory, tuple(conditions), opts)
        if key not in self._runs:
            gold = self.gold(1)
            named = "_".join(f"{k}={v}" for k, v in opts)
            out = self.root / "runs" / _slug(f"{memory}_{','.join(conditions)}_{named}")
            extra = [a for k, v in opts for a in ("--generator-opt", f"{k}={v}")]
            _cli("run", "vmem_track_b", "--gold", str(gold), "--generator", "sim",
                 "--generator-opt", f"memory={memory}", "--generator-opt", f"fps={FPS}", *extra,
                 "--conditions", ",".join(conditions), "--backend-opt",
                 f"judge/sim-cards:weights={self.deck}", "--judge-cache", str(self.cache),
                 "--bootstrap-resamples", str(BOOTSTRAP_RESAMPLES), "--quiet", "--out", str(out))
            self._runs[key] = SimRun(gold, self._seal(out), self.deck, memory, tuple(conditions),
                                     out / "rollouts")
        return self._runs[key]

    def _story_clips(self, n_stories: int, index: int, memory: str) -> Path:
        """One story's 14 clips from ``SimGenerator(memory, seed=0)`` fed the name-anchored
        prompts in order, no references (as a user's own generator would be run)."""
        gold = self.gold(n_stories)
        sid = sorted(p.name.removesuffix("_name_anchored.json")
                     for p in (gold / "sut_prompts").glob("*_name_anchored.json"))[index]
        if (sid, memory) not in self._clips:
            from vidmem.generators.protocol import GenerationRequest
            from vidmem.generators.sim import SimGenerator

            prompts = json.loads((gold / "sut_prompts" / f"{sid}_name_anchored.json")
                                 .read_text("utf-8"))
            gen = SimGenerator(memory=memory, seed=SEED)
            out = self.root / "clips" / sid / _slug(memory)
            out.mkdir(parents=True)
            for p in prompts["segments"]:
                res = gen.generate(GenerationRequest(
                    f"{sid}/{p['segment_id']}", "vmem_track_b", p["prompt"],
                    str(out / f"{p['segment_id']}.mp4"), fps=float(FPS)))
                assert res.status == "ok", res.error
            self._clips[(sid, memory)] = self._seal(out)
        return self._clips[(sid, memory)]

    def brought(self, conditions: Mapping[str, str], n_stories: int = 1) -> Path:
        """A brought-rollouts folder ``<story_id>/<condition>/seg_NNN.mp4`` (+ the sim's
        ``.truth.json`` sidecars) for the first ``n_stories`` stories, ``conditions``
        mapping a condition folder name to the sim memory that drew it. No progress
        files: a scorer sees the references as unknown. Each (story, memory) is rendered
        once per session and copied under every name that asks for it."""
        key = (n_stories, tuple(sorted(conditions.items())))
        if key not in self._brought:
            out = self.root / "brought" / _slug(f"{n_stories}_" + ",".join(
                f"{c}={m}" for c, m in key[1]))
            for index in range(n_stories):
                for cond, memory in conditions.items():
                    clips = self._story_clips(n_stories, index, memory)
                    shutil.copytree(clips, out / clips.parent.name / cond)
            self._brought[key] = self._seal(out)
        return self._brought[key]

    def scored(self, conditions: Mapping[str, str], n_stories: int = 1, *,
               bootstrap_resamples: int | None = None) -> SimRun:
        """``vidmem score vmem_track_b`` of :meth:`brought` ``(conditions, n_stories)``
        on the ``n_stories`` gold, with the session's deck and answer cache
        (``bootstrap_resamples`` when given, else the protocol's 2000). With the
        rendering: ~18 s for 1 story x 3 memories, ~16 s for 2 stories x 2 memories when
        the first story's clips were rendered and judged before."""
        key = ("scored", n_stories, tuple(sorted(conditions.items())), bootstrap_resamples)
        if key not in self._runs:
            gold, rollouts = self.gold(n_stories), self.brought(conditions, n_stories)
            out = self.root / "scored" / f"{rollouts.name}_{bootstrap_resamples}"
            extra = ["--bootstrap-resamples", str(bootstrap_resamples)] \
                if bootstrap_resamples else []
            _cli("score", "vmem_track_b", "--gold", str(gold), "--rollouts", str(rollouts),
                 "--conditions", ",".join(conditions), "--backend-opt",
                 f"judge/sim-cards:weights={self.deck}", "--judge-cache", str(self.cache),
                 "--out", str(out), "--quiet", *extra)
            self._runs[key] = SimRun(gold, self._seal(out), self.deck, "brought", tuple(conditions),
                                     rollouts)
        return self._runs[key]

    @staticmethod
    def copy(src: Path, dst: Path) -> Path:
        """A writable copy of a pristine folder (or file) at ``dst``; a run folder is
        relocated too (:func:`_relocate`), so the copy reads and writes only itself."""
        dst.parent.mkdir(parents=True, exist_ok=True)
        if not Path(src).is_dir():
            shutil.copy2(src, dst)
        else:
            shutil.copytree(src, dst)
            if (dst / "run.json").is_file():
                _relocate(Path(src), dst)
        return dst

    def workspace(self, base: Path, **runs: SimRun) -> Path:
        """``base`` with a writable copy of each run at ``base/<name>`` and a snapshot of
        the judge answer cache at ``base/answers.sqlite``: the module fixture of a test
        file that analyses or rescores the shared runs."""
        for name, sim in runs.items():
            self.copy(sim.run, base / name)
        self.cache_copy(base / "answers.sqlite")
        return base

    def cache_copy(self, dst: Path) -> Path:
        """A snapshot of the session's judge answer cache at ``dst`` (new if none yet)."""
        if self.cache.is_file():
            self.copy(self.cache, dst)
        return dst


def attribution_truth(run: Path, story: Any, unit: Mapping[str, Any]
                      ) -> tuple[str | None, str | None]:
    """What the sim truth says caused an attribution unit, and the truth ``source`` of the
    entity in the unit's clip (cause ``None``: the truth drew it right, a judge miss).

    A render is ``carried`` when the clip drew a leak; a miss is ``introduction`` without a
    previous appearance, ``writing`` when the previous appearance was already drawn wrong,
    ``no_memory`` / ``selection`` for an impostor (nothing remembered, no reference showed
    it; ``none`` hands over no references), else ``synthesis`` (a reference showed the name
    and the clip drew it wrong: ``reference_ignored``)."""
    def entities(clip: Path) -> dict[str, dict]:
        truth = json.loads(clip.with_name(clip.name + ".truth.json").read_text("utf-8"))
        return {e["name"]: e for e in truth["entities"]}

    folder = Path(run) / "rollouts" / unit["story_id"] / unit["condition"]
    name = story.entities[unit["eid"]].name
    here = entities(folder / f"seg_{unit['segment_id']:03d}.mp4")
    source = here.get(name, {}).get("source")
    if unit["failure"] == "render":
        return ("carried" if source == "leak" else "not_carried"), source
    if unit["previous"] is None:
        return "introduction", source
    prev = entities(folder / f"seg_{unit['previous']:03d}.mp4")
    if prev.get(name, {}).get("appearance_correct") is not True:
        return "writing", source
    e = here.get(name)
    if e is None or e["appearance_correct"] is True:
        return None, source
    if source == "impostor":
        return ("no_memory" if unit["condition"] == "none" else "selection"), source
    return "synthesis", source


@pytest.fixture(scope="session")
def sim_attribution_truth():
    """:func:`attribution_truth`, for the attribution tests."""
    return attribution_truth


@pytest.fixture(scope="session")
def track_b_world(tmp_path_factory) -> Iterator[TrackBWorld]:
    """The session's builder: ``gold(n)``, ``run(memory, conditions)``, ``brought(...)``,
    ``copy``, ``cache_copy``, ``deck``. Costs nothing until asked. At the session's end
    it fails if any file of a pristine folder was added, removed or rewritten."""
    world = TrackBWorld(tmp_path_factory.mktemp("track_b_world"))
    yield world
    changed = world.changed()
    assert not changed, ("a test wrote into the shared Track-B sim folders (copy them first: "
                         f"track_b_world.copy / workspace): {changed[:10]}")


@pytest.fixture(scope="session")
def track_b_gold(track_b_world) -> Path:
    """The 1-story sim gold (story ``0001_sim_s0``, 14 segments, long gap 8); ~1 s.
    Read-only."""
    return track_b_world.gold(1)


@pytest.fixture(scope="session")
def track_b_none_run(track_b_world) -> SimRun:
    """``vidmem run`` memory=none on the 1-story gold, conditions none, last_seen and
    seg_uniform (42 clips); ~30 s. Pristine: copy before analysing or rescoring."""
    return track_b_world.run("none", NONE_RUN_CONDITIONS)


@pytest.fixture(scope="session")
def track_b_leaky_run(track_b_world) -> SimRun:
    """``vidmem run`` memory=leaky:0.5 (forbidden things leak in), conditions none and
    last_seen (28 clips; its `none` clips match the memory-none run's, so their answers
    come from the cache when that run was built first); ~12 s. Pristine: copy first."""
    return track_b_world.run("leaky:0.5", ("none", "last_seen"))


@pytest.fixture(scope="session")
def track_b_short_run(track_b_world) -> SimRun:
    """``vidmem run`` memory=none with 1.5 s clips (6 frames each: cheap to measure per
    frame), conditions none and last_seen (28 clips); ~10 s. Pristine: copy first."""
    return track_b_world.run("none", ("none", "last_seen"), duration_seconds="1.5")
