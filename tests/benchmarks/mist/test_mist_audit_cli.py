"""`vidmem audit mist`: a clean sim card deck passes (exit 0), a planted gap leak and a
leak in an answer-free arm fail (exit 1, named by case and field), --json is the audit."""

from __future__ import annotations

import json

import pytest

from vidmem.benchmarks.mist.sim_build import plan_card
from vidmem.cli import main


def _write(root, rows):
    root.mkdir(parents=True, exist_ok=True)
    (root / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return root


def _audit(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(["audit", "mist", *args])
    return exc.value.code, capsys.readouterr().out


def test_clean_cards_pass_and_leaks_fail(tmp_path, capsys):
    rows = [plan_card(0, i) for i in range(3)]
    clean = _write(tmp_path / "clean", rows)
    code, out = _audit(capsys, "--root", str(clean), "--json")
    assert code in (0, None)
    data = json.loads(out)
    assert data["ok"] and len(data["cards"]) == 3
    verdicts = {(r["arm"], r["shot"]): r["verdict"] for r in data["cards"][0]["rows"]}
    assert verdicts[("answer_only", "reveal")] == "names_target"
    assert verdicts[("baseline", "gap")] == "clean"

    leaky = [dict(r) for r in rows]
    leaky[1] = json.loads(json.dumps(rows[1]))
    leaky[1]["shots"][1]["prompt"] += " Inside waits " + rows[1]["target"]["text"] + "."
    leaky[2] = json.loads(json.dumps(rows[2]))
    leaky[2]["reveal_prompts"]["open_and_hold"] += " It holds " + rows[2]["target"]["text"] + "."
    code, out = _audit(capsys, "--root", str(_write(tmp_path / "leak", leaky)))
    assert code == 1
    assert f"{rows[1]['case_id']}: field 'shots.gap'" in out
    assert f"{rows[2]['case_id']}: field 'reveal_prompts.open_and_hold'" in out


def test_a_benchmark_without_an_audit_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["audit", "cmbench", "--root", str(tmp_path)])
    assert exc.value.code != 0
    assert "no prompt-channel audit" in capsys.readouterr().err
