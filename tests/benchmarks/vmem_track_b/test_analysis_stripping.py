"""The stripping analysis on a tiny sim run (one 14-segment story, its `none` condition, in
a copy of the session's shared run): the stripped prompts are stripping.py's, the
with-text side is the stored verdicts, the stripped side agrees with the sim truth of the
regenerated clips (the sim draws a bracketed name as written and, without the text and
with no memory, something else), the difference is the hand count, resume regenerates
nothing, and a run without `none` is refused by name."""

from __future__ import annotations

import json
import shutil

import pytest

from vidmem.benchmarks.vmem_track_b import analysis_stripping_work as work
from vidmem.benchmarks.vmem_track_b.benchmark import TrackB
from vidmem.benchmarks.vmem_track_b.stories import load_stories
from vidmem.benchmarks.vmem_track_b.stripping import strip_targets
from vidmem.cli import main
from vidmem.io.hashing import content_hash

pytestmark = pytest.mark.slow  # the shared run (~40 s, once), then a few clips regenerated

MODULE = "vidmem.benchmarks.vmem_track_b.analysis_stripping"


def cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    got = capsys.readouterr()
    code = exc.value.code if isinstance(exc.value.code, int) else (0 if exc.value.code is None else 1)
    return code, got.out, got.err


@pytest.fixture(scope="module")
def sim_run(track_b_world, track_b_none_run, tmp_path_factory):
    """A copy of the session's memory-none run (conftest; the analysis reads its `none`
    condition and writes into the run)."""
    base = track_b_world.workspace(tmp_path_factory.mktemp("track_b_stripping"),
                                   run=track_b_none_run)
    return base, track_b_none_run.gold, ["--judge-cache", str(base / "answers.sqlite")]


@pytest.fixture
def analyses(monkeypatch):
    monkeypatch.setattr(TrackB, "analyses", {"stripping": MODULE})


def _segments(story):
    """Segments whose characters carry text a no-memory generator needs: a character
    transformed (its new look in brackets) or returning after >= 3 segments."""
    return sorted({seg.segment_id for seg in story.segments for c in seg.cast
                   if story.entities[c.eid].kind == "character"
                   and (c.op == "transform" or (c.gap or 0) >= 3)})


def _analyze(capsys, base, cache, *opts):
    code, out, err = cli(capsys, "analyze", "vmem_track_b", str(base / "run"), "--only",
                         "stripping", "--json", *cache, *opts)
    assert code == 0, err
    return json.loads(out)["stripping"]


def test_default_selection_and_options(sim_run, analyses, capsys):
    base, _, cache = sim_run
    res = _analyze(capsys, base, cache)  # the protocol's 30-segment gap: none in 14 segments
    assert res["selection"] == "long_gap" and res["min_gap"] == 30
    assert res["n_segments"] == 0 and res["difference"] is None
    assert res["generator"] == {"name": "sim", "options": {"fps": "4", "memory": "none"}}
    code, _, err = cli(capsys, "analyze", "vmem_track_b", str(base / "run"), "--only",
                       "stripping", "--opt", "segments=seg_099", *cache)
    assert code == 2 and "not in 1..14" in err
    code, _, err = cli(capsys, "analyze", "vmem_track_b", str(base / "run"), "--only",
                       "stripping", "--opt", "gap=3", *cache)
    assert code == 2 and "unknown --opt ['gap']" in err


def test_stripped_side_against_stored_verdicts_and_sim_truth(sim_run, analyses, capsys):
    base, gold, cache = sim_run
    (story,) = load_stories(gold)
    chosen = _segments(story)
    assert len(chosen) >= 3
    res = _analyze(capsys, base, cache, "--opt", "min_gap=0", "--opt",
                   "segments=" + ",".join(f"seg_{s:03d}" for s in chosen))
    targets = strip_targets(story, chosen, min_gap=0)
    assert [r["segment"] for r in res["segments"]] == [f"seg_{s:03d}" for s in chosen]
    assert [r["stripped"] for r in res["segments"]] == [t.stripped for t in targets]

    # with text: the stored `none` verdicts, read here from the raw JSON
    row = json.loads((base / "run" / "scores.jsonl").read_text("utf-8").splitlines()[0])
    stored = {s["segment_id"]: s for s in row["conditions"]["none"]["verdicts"]}
    truth = json.loads((gold / "_truth" / f"{story.story_id}.json").read_text("utf-8"))
    gold_asset = {e: v.get("asset") for e, v in truth["entities"].items()}
    hits_text = hits_strip = n = 0
    for r, t in zip(res["segments"], targets, strict=True):
        seg = stored[t.segment_id]
        for eid in t.eids:
            entry = next(x for x in seg["entries"] if x["eid"] == eid and x["role"] == "required")
            assert r["with_text"][eid] == (seg["parsed"] and entry["present"] is True)
        # the regenerated clip: made from the stripped prompt, nothing drawn from prompt text
        side = json.loads((base / "run" / "analyses" / "stripping" / story.story_id /
                           f"{r['segment']}.mp4.truth.json").read_text("utf-8"))
        assert side["prompt"] == t.stripped and side["prompt"].count("\uff08") == 0
        assert all(e["source"] != "prompt" for e in side["entities"])
        drawn = {e["name"]: e["asset"] for e in side["entities"]}
        for eid in t.eids:  # the card judge sees what the sim drew
            assert r["own_text"][eid] == (f"{story.entities[eid].name}\uff08" in t.prompt)
            shown = drawn.get(story.entities[eid].name) == gold_asset[eid]
            assert r["stripped_present"][eid] == shown, (r["segment"], eid)
            hits_text += r["with_text"][eid]
            hits_strip += r["stripped_present"][eid]
            n += 1
    # a transformed character: drawn as written with its text, lost without it
    lost = [(r["segment"], e) for r in res["segments"] for e in r["eids"]
            if r["with_text"][e] and not r["stripped_present"][e]]
    assert lost, res["segments"]
    assert all(r["own_text"][e] for r in res["segments"] for e in r["eids"]
               if (r["segment"], e) in lost)  # on the sim, only a character's own text helps
    assert res["n_entries"] == n
    assert res["presence_with_text"] == {"numerator": hits_text, "denominator": n,
                                         "value": pytest.approx(hits_text / n)}
    assert res["presence_stripped"]["numerator"] == hits_strip
    assert res["difference"]["difference"] == pytest.approx((hits_strip - hits_text) / n)
    assert res["difference"]["n_resamples"] == 200  # the run's bootstrap setting
    record = json.loads((base / "run" / "analyses" / "stripping.json").read_text("utf-8"))
    assert "strip_span" in record["protocol"] and "with_text" in record["protocol"]
    assert "Appearance stripping (analysis)" in (base / "run" / "report" / "report.md").read_text()
    print(f"stripping on the sim: {len(chosen)} segments, presence with text "
          f"{hits_text}/{n}, stripped {hits_strip}/{n}")


def test_resume_regenerates_nothing(sim_run, analyses, capsys, monkeypatch):
    base, gold, cache = sim_run
    (story,) = load_stories(gold)
    chosen = _segments(story)
    opts = ["--opt", "min_gap=0", "--opt", "segments=" + ",".join(map(str, chosen))]
    first = _analyze(capsys, base, cache, *opts)
    folder = base / "run" / "analyses" / "stripping" / story.story_id
    stamps = {p.name: p.stat().st_mtime_ns for p in folder.glob("*.mp4")}
    asked: list[str] = []
    real = work._generator

    def counting(spec, options):
        gen = real(spec, options)

        class Counted:
            def generate(self, request):
                asked.append(request.request_id)
                return gen.generate(request)
        return Counted()

    monkeypatch.setattr(work, "_generator", counting)
    again = _analyze(capsys, base, cache, *opts)
    assert asked == [] and again["execution"]["generated_or_judged"] == 0
    assert {k: v for k, v in again.items() if k != "execution"} == \
        {k: v for k, v in first.items() if k != "execution"}
    # a new selection is a new story item, but the clips made before are kept
    extra = next(s for s in range(1, 15) if s not in chosen)
    _analyze(capsys, base, cache, "--opt", "min_gap=0", "--opt",
             "segments=" + ",".join(map(str, sorted([*chosen, extra]))))
    assert asked == [f"{story.story_id}/seg_{extra:03d}"]
    assert all(folder.joinpath(k).stat().st_mtime_ns == v for k, v in stamps.items())


def test_a_run_without_none_is_refused(sim_run, analyses, capsys, tmp_path):
    base, _, cache = sim_run
    run = tmp_path / "run"
    shutil.copytree(base / "run", run)
    shutil.rmtree(run / "analyses", ignore_errors=True)  # earlier tests' results
    doc = json.loads((run / "run.json").read_text("utf-8"))
    doc["config"]["scorer"]["conditions"] = ["last_seen"]
    # a run scored without `none` (the hash leaves out the input locations)
    doc["config_hash"] = content_hash({k: v for k, v in doc["config"].items()
                                       if k not in doc.get("location_keys", [])})
    (run / "run.json").write_text(json.dumps(doc), "utf-8")
    code, _, err = cli(capsys, "analyze", "vmem_track_b", str(run), "--only", "stripping", *cache)
    assert code == 2 and "no 'none' (no-memory) condition" in err and "last_seen" in err
    assert not (run / "analyses" / "stripping.json").exists()
