"""`vidmem run mist --generator sim` end to end on three sim cases with judge/sim-cards and
rewriter/sim-grammar: every arm generated and scored, setup flat and no leak, the judge's
reveal agrees with the sim truth, the report shows the M3 chains, and a rerun computes
nothing again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vidmem.benchmarks.mist import BENCHMARK
from vidmem.benchmarks.mist.demo import truth_reveal
from vidmem.cli import main
from vidmem.sim.cards import write_card_deck

ARMS = "baseline,open_and_hold,same_sentence_resample,diagnosis_rewrite,target_withheld_rewrite"


def _run(capsys, *args: str) -> dict:
    with pytest.raises(SystemExit) as exc:
        main(["run", "mist", *args, "--json"])
    out = capsys.readouterr()
    assert exc.value.code in (0, None), out.err
    return json.loads(out.out)


@pytest.mark.slow  # 3 cases x 5 arms on the sim, judged by the card judge (~1-2 min)
def test_run_mist_on_the_sim(tmp_path, capsys):
    cards, deck, run = tmp_path / "cards", tmp_path / "deck", tmp_path / "run"
    BENCHMARK.sim_build(cards, seed=0, n_cases=3)
    write_card_deck(deck)
    args = ["--root", str(cards), "--generator", "sim", "--out", str(run), "--arms", ARMS,
            "--k", "2", "--backend-opt", f"judge/sim-cards:weights={deck}",
            "--judge-cache", str(tmp_path / "answers.sqlite")]
    s = _run(capsys, *args)
    assert s["n_cases_scored"] == 3 and s["arms"] == ARMS.split(",")
    assert s["official"] is False and s["judge"]["questions"] > 0
    setups = {s["arm"][a]["first"]["setup"] for a in s["arms"]}
    assert setups == {1.0}  # the locked first shot: one reading, the scene is set
    assert {s["arm"][a]["first"]["leak"] for a in s["arms"]} == {0.0}
    for arm in ("diagnosis_rewrite", "target_withheld_rewrite"):
        assert s["arm"][arm]["best"]["reveal"] >= s["arm"]["baseline"]["first"]["reveal"]
        assert s["deltas"][arm]["best"]["reveal"]["oracle_estimate"] is True
    # the judge's reveal against what the sim really drew, clip by clip
    rows = {r["case_id"]: r for r in map(json.loads, (run / "scores.jsonl").open())}
    agree = total = 0
    for card in BENCHMARK.load(cards).cards:
        noun = next(c.noun for c in card.containers if c.id == card.reveal)
        for arm, clips in rows[card.case_id]["arms"].items():
            for c in clips:
                # an M3 arm's try 0 is a copy of the baseline's clip (its truth stays there)
                where = "baseline" if c["try"] == 0 and "rewrite" in arm else arm
                truth = truth_reveal(run / "rollouts" / card.case_id / where /
                                     f"try_{c['try']}.mp4", noun)
                total += 1
                agree += (c["gates"]["reveal"] >= 0.5) == (truth >= 0.5)
    assert total >= 3 * 6 and agree >= 0.9 * total, (agree, total)
    html = (run / "report" / "report.html").read_text("utf-8")
    assert "M3-Agent chains" in html and "oracle" in html
    agent = json.loads((run / "rollouts" / "mist_s0_000" / "diagnosis_rewrite" /
                        "agent_run.json").read_text("utf-8"))
    assert agent["steps"][0]["try_index"] == 0 and agent["oracle"] is True
    # a rerun generates and asks nothing
    again = _run(capsys, *args, "--resume")
    assert again["execution"]["computed"] == 0
    assert again["arm"] == s["arm"]
    assert Path(run / "rollouts" / "mist_s0_000" / "progress.json").is_file()
