"""Track-B's defaults run (issue 26): the offline preset's default conditions are the
ones an offline run can generate, and ``vidmem score`` without ``--conditions`` scores
the card's conditions the rollouts folder holds and names the others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vidmem.benchmarks.command_outputs import COMMAND_OUTPUTS
from vidmem.benchmarks.vmem_track_b.config import DEFAULT_CONDITIONS, ScorerConfig
from vidmem.cli import main
from vidmem.registry import BENCHMARKS


def test_offline_default_conditions_are_the_four_an_offline_run_can_generate(track_b_gold,
                                                                           tmp_path):
    bench = BENCHMARKS.load("vmem_track_b")
    config = bench.scorer_config(root=track_b_gold)  # the command line's defaults
    # the card's six less the two that rank frames against text (no offline embedder)
    assert config.conditions == ("none", "seg_uniform", "seg_dino_key", "last_seen")
    rollouts = bench.rollouts(bench.load(track_b_gold), tmp_path, config=config)
    # out_path: <out>/<story>/<condition>/progress.json
    assert sorted({Path(r.request.to_dict()["out_path"]).parent.name for r in rollouts}) == sorted(
        config.conditions)  # the old default raised here: no text-image embedder


def test_official_default_conditions_are_the_cards_six():
    assert ScorerConfig.from_preset("official").conditions == DEFAULT_CONDITIONS


def test_score_without_conditions_scores_the_folders_present(track_b_world, tmp_path, capsys):
    gold = track_b_world.gold(1)
    rollouts = track_b_world.copy(track_b_world.brought({"none": "none", "last_seen": "none"}),
                                  tmp_path / "rollouts")
    with pytest.raises(SystemExit) as exc:
        main(["score", "vmem_track_b", "--gold", str(gold), "--rollouts", str(rollouts),
              "--backend-opt", f"judge/sim-cards:weights={track_b_world.deck}",
              "--judge-cache", "off", "--bootstrap-resamples", "50", "--out",
              str(tmp_path / "run")])
    out = " ".join(capsys.readouterr().out.split())
    assert exc.value.code in (0, None), out
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["conditions"] == ["none", "last_seen"]
    assert summary["absent_conditions"] == ["text_frame", "seg_uniform", "seg_dino_key",
                                            "seg_frame"]
    assert ("not scored, no story's rollouts folder has them: text_frame, seg_uniform, "
            "seg_dino_key, seg_frame") in out
    report = " ".join((tmp_path / "run" / "report" / "report.md").read_text().split())
    assert ("Not scored, no story's rollouts folder has them: text_frame, seg_uniform, "
            "seg_dino_key, seg_frame.") in report


def test_given_conditions_are_not_narrowed(track_b_gold, tmp_path):
    (tmp_path / "0001_sim_s0" / "none").mkdir(parents=True)
    bench = BENCHMARKS.load("vmem_track_b")
    token = COMMAND_OUTPUTS.set(tmp_path)
    try:
        given = bench.scorer_config(root=track_b_gold, conditions="none,seg_uniform")
        default = bench.scorer_config(root=track_b_gold)
    finally:
        COMMAND_OUTPUTS.reset(token)
    assert given.conditions == ("none", "seg_uniform") and given.absent_conditions == ()
    assert default.conditions == ("none",)
    assert default.absent_conditions == DEFAULT_CONDITIONS[1:]


def test_a_config_without_absent_conditions_keeps_its_content_key():
    data = ScorerConfig.from_preset("offline").to_dict()
    assert "absent_conditions" not in data  # stored items of earlier runs stay hits
    assert ScorerConfig.from_dict(data) == ScorerConfig.from_preset("offline")
