"""The offline judge's card deck by default: ``vidmem run|score`` on a sim build needs no
``--backend-opt judge/sim-cards:weights=SIM/_cards``.

Checked for the three benchmarks whose offline judge is ``judge/sim-cards`` (MIST,
Track-A, Track-B): the deck under the root is taken, an explicit weights option wins,
another judge is left alone, a root without a deck leaves the judge to refuse with its
fix; end to end, a MIST run on a sim build scores (its reveal agrees with the sim truth)
and records the deck in ``run.json`` like given weights, and the Track-A/B commands put
the deck into the run's scorer configuration, where the identity analysis reads it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vidmem.benchmarks.mist import cli as mist_cli
from vidmem.benchmarks.sim_deck import DECK_DIR, JUDGE
from vidmem.benchmarks.vmem_track_a import cli as track_a_cli
from vidmem.benchmarks.vmem_track_b import cli as track_b_cli
from vidmem.cli import main
from vidmem.errors import UserInputError
from vidmem.models.backends.judge_sim_cards import SimCardJudge
from vidmem.runners.store import RunDir

SCORER_CONFIGS = {"mist": mist_cli.scorer_config, "vmem_track_a": track_a_cli.scorer_config,
                  "vmem_track_b": track_b_cli.scorer_config}


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


def _judge_options(config) -> dict:
    return dict(config.backend_options.get(JUDGE, {}))


@pytest.mark.parametrize("name", sorted(SCORER_CONFIGS))
def test_the_deck_under_the_root_is_the_default(name, tmp_path):
    (tmp_path / DECK_DIR).mkdir()
    cfg = SCORER_CONFIGS[name](root=tmp_path)
    assert cfg.judge == JUDGE
    assert _judge_options(cfg) == {"weights": str((tmp_path / DECK_DIR).resolve())}


@pytest.mark.parametrize("name", sorted(SCORER_CONFIGS))
def test_explicit_weights_win_and_another_judge_is_left_alone(name, tmp_path):
    (tmp_path / DECK_DIR).mkdir()
    scorer_config = SCORER_CONFIGS[name]
    cfg = scorer_config(root=tmp_path, backend_opt=[f"{JUDGE}:weights=elsewhere"])
    assert _judge_options(cfg) == {"weights": "elsewhere"}
    other = scorer_config(root=tmp_path, judge="judge/openai")
    assert JUDGE not in other.backend_options


@pytest.mark.parametrize("name", sorted(SCORER_CONFIGS))
def test_no_deck_leaves_the_judge_to_refuse_with_the_fix(name, tmp_path):
    cfg = SCORER_CONFIGS[name](root=tmp_path)
    assert _judge_options(cfg) == {}
    with pytest.raises(UserInputError, match="card deck as weights") as exc:
        SimCardJudge(**_judge_options(cfg))
    assert "ROOT/_cards" in exc.value.hint and "--backend-opt judge/sim-cards:weights=" in \
        exc.value.hint


def test_track_a_finds_the_build_deck_from_each_gold_root_the_build_offers(tmp_path):
    # vidmem sim build vmem_track_a --out SIM: SIM/SimFilms/<film>/gold and SIM/_cards
    sim = tmp_path / "SIM"
    film = sim / "SimFilms" / "sim_film_001_s0"
    (film / "gold").mkdir(parents=True)
    (sim / DECK_DIR).mkdir()
    want = str((sim / DECK_DIR).resolve())
    for root in (sim, sim / "SimFilms", film):
        assert _judge_options(track_a_cli.scorer_config(root=root)) == {"weights": want}, root
    # a deck beside the gold is nearer than the build's
    (film / DECK_DIR).mkdir()
    assert _judge_options(track_a_cli.scorer_config(root=film)) == {
        "weights": str((film / DECK_DIR).resolve())}


def _truth_agrees(run: Path, cards: Path) -> tuple[int, int]:
    from vidmem.benchmarks.mist import BENCHMARK
    from vidmem.benchmarks.mist.demo import truth_reveal

    rows = {r["case_id"]: r for r in map(json.loads, (run / "scores.jsonl").open())}
    agree = total = 0
    for card in BENCHMARK.load(cards).cards:
        noun = next(c.noun for c in card.containers if c.id == card.reveal)
        for arm, clips in rows[card.case_id]["arms"].items():
            for c in clips:
                truth = truth_reveal(run / "rollouts" / card.case_id / arm / f"try_{c['try']}.mp4",
                                     noun)
                total += 1
                agree += (c["gates"]["reveal"] >= 0.5) == (truth >= 0.5)
    return agree, total


def test_mist_on_a_sim_build_runs_as_typed(tmp_path, capsys):
    from vidmem.benchmarks.mist.sim_build import build_mist
    from vidmem.sim.cards import write_card_deck

    sim = tmp_path / "SIM"
    build_mist(sim, seed=0, n_cases=1)
    base = ["run", "mist", "--root", str(sim), "--generator", "sim", "--arms",
            "baseline,open_and_hold", "--k", "1", "--judge-cache", "off", "--json"]

    # as typed: no --backend-opt; the build's deck judges, recorded like given weights
    code, out, err = _cli(capsys, *base, "--out", str(tmp_path / "run"))
    assert code == 0, err
    summary = json.loads(out)
    assert summary["n_cases_scored"] == 1
    agree, total = _truth_agrees(tmp_path / "run", sim)
    assert total == 2 and agree == total
    manifest = RunDir.open(tmp_path / "run").manifest
    judge = manifest.backends["judge"]
    assert judge.name == JUDGE and judge.weights == str((sim / DECK_DIR).resolve())
    assert manifest.config["scorer"]["backend_options"][JUDGE] == {"weights": judge.weights}

    # an explicit deck wins; the deck's bytes are a function of the sim assets, so its hash
    # is the build deck's and the numbers are the same
    mine = tmp_path / "mine"
    write_card_deck(mine)
    code, out, err = _cli(capsys, *base, "--out", str(tmp_path / "explicit"), "--backend-opt",
                          f"{JUDGE}:weights={mine}")
    assert code == 0, err
    explicit = RunDir.open(tmp_path / "explicit").manifest.backends["judge"]
    assert explicit.weights == str(mine) and explicit.weights_sha256 == judge.weights_sha256
    assert json.loads(out)["arm"] == summary["arm"]

    # a build without its deck: the judge's error with both fixes, nothing generated
    bare = tmp_path / "bare"
    shutil.copytree(sim, bare, ignore=shutil.ignore_patterns(DECK_DIR))
    code, _, err = _cli(capsys, *base, "--root", str(bare), "--out", str(tmp_path / "none"))
    assert code == 2
    assert "card deck as weights" in err and "ROOT/_cards" in err and "--backend-opt" in err
    assert not list((tmp_path / "none").rglob("*.mp4"))


@pytest.mark.parametrize("name", ["vmem_track_a", "vmem_track_b"])
def test_track_commands_put_the_build_deck_in_the_run(name, tmp_path, capsys):
    from vidmem.registry import BENCHMARKS

    sim = tmp_path / "SIM"
    BENCHMARKS.load(name).sim_build(sim, seed=0, n_cases=1)
    empty = tmp_path / "empty"
    empty.mkdir()
    gold = sim / "SimFilms" if name == "vmem_track_a" else sim  # the README's spellings
    flag = "--videos" if name == "vmem_track_a" else "--rollouts"
    code, _, err = _cli(capsys, "score", name, "--gold", str(gold), flag, str(empty),
                        "--allow-missing", "--out", str(tmp_path / "run"), "--judge-cache",
                        "off", "--quiet")
    assert code == 0, err
    run = RunDir.open(tmp_path / "run")
    scorer = run.manifest.config["scorer"]
    deck = str((sim / DECK_DIR).resolve())
    assert scorer["backend_options"][JUDGE] == {"weights": deck}
    if name == "vmem_track_b":  # the identity analysis' default deck is the run's
        from vidmem.benchmarks.vmem_track_b.analysis_identity import _settings
        from vidmem.runners.analysis_run import AnalysisOptions

        settings = _settings(run, AnalysisOptions(), dict(scorer))
        assert settings["detector"] == "sim-cards" and settings["deck"] == deck
