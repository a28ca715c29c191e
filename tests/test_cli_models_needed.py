"""`vidmem models needed BENCH --preset P` and the "needs the X extra" status of
`vidmem list` / `vidmem doctor` (issue 26, "What each official preset needs")."""

from __future__ import annotations

import json

import pytest

from vidmem.cli import main
from vidmem.cli.preset_needs import SERVER_URL_ENV, needed
from vidmem.models import extras


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    got = capsys.readouterr()
    return exc.value.code or 0, got.out, got.err


def test_official_cmbench_needs_the_protocols_three_models(capsys):
    # the CMBench card: OWL-ViT B/32 detects, SAM 2.1 B+ segments, DINOv2-B embeds
    code, out, err = _cli(capsys, "models", "needed", "cmbench", "--preset", "official",
                          "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [(r["backend"], r["checkpoint"], r["extra"]) for r in rows] == [
        ("owlvit/base-patch32", "google/owlvit-base-patch32", "models"),
        ("sam2/base-plus", "facebook/sam2.1-hiera-base-plus", "models"),
        ("dinov2/base", "facebook/dinov2-base", "models"),
    ]
    assert all(r["params"] and r["vram"] for r in rows)


def test_offline_presets_need_no_weights():
    for bench in ("cmbench", "memory_loop", "mist", "vmem_track_a", "vmem_track_b"):
        assert [n.backend for n in needed(bench, "offline") if n.checkpoint or n.extra] == [], bench


def test_track_b_official_lists_the_retrieval_encoders_and_the_optional_face_extra(capsys):
    code, out, err = _cli(capsys, "models", "needed", "vmem_track_b")  # --preset official
    assert code == 0, err
    flat = " ".join(out.split())
    fetch = "vidmem models fetch qwen3-embedding/0.6b siglip2/base-patch16-224 dinov3/vitb16"
    assert fetch in flat
    rows = {n.backend: n for n in needed("vmem_track_b", "official")}
    assert rows["face/arcface-onnx"].extra == "faces" and rows["face/arcface-onnx"].optional
    assert rows["judge/openai"].checkpoint is None and "VIDMEM_JUDGE_URL" in flat


def test_server_url_variables_are_the_backends_own():
    from vidmem.models.backends import judge_openai, rewriter_openai

    own = {"judge/openai": judge_openai.URL_ENVS[0],
           "rewriter/openai": rewriter_openai.URL_ENVS[0]}
    assert own == SERVER_URL_ENV


def test_unknown_preset_names_the_known_ones(capsys):
    code, _, err = _cli(capsys, "models", "needed", "memory_loop", "--preset", "oficial")
    assert code != 0
    assert "did you mean 'official'" in err and "offline" in err


def _without(monkeypatch, *absent: str) -> None:
    real = extras._installed
    monkeypatch.setattr(extras, "_installed", lambda m: m not in absent and real(m))


def test_list_says_needs_the_extra_when_torch_or_onnxruntime_is_absent(capsys, monkeypatch):
    _without(monkeypatch, "torch", "onnxruntime")
    code, out, _ = _cli(capsys, "list", "backends", "--json")
    assert code == 0
    status = {r["name"]: r["status"] for r in json.loads(out)["backends"]}
    assert status["dinov2/base"] == "needs the models extra"
    assert status["face/arcface-onnx"] == "needs the faces extra"
    assert status["classic/hsv-lbp"] == "available"  # core


def test_list_says_available_when_the_extra_is_installed(capsys, monkeypatch):
    monkeypatch.setattr(extras, "_installed", lambda m: True)
    code, out, _ = _cli(capsys, "list", "backends", "--json")
    status = {r["name"]: r["status"] for r in json.loads(out)["backends"]}
    assert status["dinov2/base"] == status["face/arcface-onnx"] == "available"


def test_doctor_says_needs_the_extra(capsys, monkeypatch, tmp_path):
    for var in ("VIDMEM_JUDGE_URL", "VIDMEM_JUDGE_MODEL", "VIDMEM_MODEL_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    _without(monkeypatch, "onnxruntime")
    code, out, _ = _cli(capsys, "doctor", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)["backends"]}
    assert rows["face/arcface-onnx"]["status"] == "needs the faces extra"
    assert "pip install 'vidmem[faces]'" in rows["face/arcface-onnx"]["problem"]
    assert rows["dinov2/base"]["status"] == "available"  # torch is installed here
    from vidmem.cli.common import console

    monkeypatch.setattr(console, "_width", 250)  # one table row per line
    code, out, _ = _cli(capsys, "doctor")
    assert "needs the faces extra (missing package: onnxruntime" in out


def test_readme_table_is_what_the_command_prints():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    start = readme.index("<!-- models-needed:")
    rows = readme[start:].splitlines()[3:]
    rows = rows[:rows.index("")]
    got = [[c.strip().strip("`") for c in row.strip("|").split("|")] for row in rows]
    want = []
    for bench in ("cmbench", "memory_loop", "mist", "vmem_track_a", "vmem_track_b"):
        for n in needed(bench, "official"):
            want.append([bench, n.used_for + (" (optional)" if n.optional else ""), n.backend,
                         n.checkpoint or ("a chat server" if n.backend in SERVER_URL_ENV
                                          else "your ONNX files"),
                         n.params or "-", n.vram or "-", n.extra or "core"])
    assert got == want
