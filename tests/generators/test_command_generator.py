"""The shell-command generator adapter against real child processes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from vidmem.errors import UserInputError
from vidmem.generators.command import CommandGenerator
from vidmem.generators.loading import load_generator, parse_options
from vidmem.generators.protocol import GenerationRequest, ReferenceImage
from vidmem.io.video import probe

WRITER = """
import sys, json, numpy as np
from vidmem.io.video import write_video
out, prompt = sys.argv[1], sys.argv[2]
frames = np.zeros((6, 32, 48, 3), np.uint8) + len(prompt)
write_video(out, frames, 8)
print(json.dumps({"prompt": prompt}))
"""


def _req(tmp_path: Path, **kw) -> GenerationRequest:
    base = dict(request_id="task_01", benchmark="cmbench", prompt='bring back the "red" cup',
                out_path=str(tmp_path / "out" / "task_01.mp4"))
    base.update(kw)
    return GenerationRequest(**base)


@pytest.fixture
def writer(tmp_path):
    script = tmp_path / "gen.py"
    script.write_text(WRITER)
    return script


def test_writes_video_and_keeps_prompt_as_one_argument(tmp_path, writer):
    gen = CommandGenerator(f"{sys.executable} {writer} {{out}} {{prompt}}")
    res = gen.generate(_req(tmp_path))
    assert res.status == "ok", res.error
    info = probe(res.video_path)
    assert info.n_frames == 6
    # prompt length is encoded into the pixels: the prompt arrived as one argument
    from vidmem.io.video import read_frames
    assert int(read_frames(res.video_path, [0])[0].mean().round()) == len('bring back the "red" cup')
    saved = json.loads(Path(res.video_path + ".request.json").read_text())
    assert saved["prompt"] == 'bring back the "red" cup'


def test_nonzero_exit_reports_stderr_tail(tmp_path):
    gen = CommandGenerator(f"{sys.executable} -c \"import sys; sys.stderr.write('model exploded'); sys.exit(3)\" {{out}}")
    res = gen.generate(_req(tmp_path))
    assert res.status == "error"
    assert "task_01" in res.error and "exit code 3" in res.error and "model exploded" in res.error


def test_exit_zero_without_file(tmp_path):
    gen = CommandGenerator(f"{sys.executable} -c pass {{out}}")
    res = gen.generate(_req(tmp_path))
    assert res.status == "error" and "wrote no file" in res.error


def test_garbage_output_is_not_a_video(tmp_path):
    gen = CommandGenerator(f"{sys.executable} -c \"import sys; open(sys.argv[1], 'w').write('hi')\" {{out}}")
    res = gen.generate(_req(tmp_path))
    assert res.status == "error" and "not a readable video" in res.error


def test_timeout(tmp_path):
    gen = CommandGenerator(f"{sys.executable} -c \"import time; time.sleep(5)\" {{out}}", timeout_seconds=0.3)
    res = gen.generate(_req(tmp_path))
    assert res.status == "error" and "timed out" in res.error


def test_missing_program(tmp_path):
    res = CommandGenerator("no-such-program-xyz {out}").generate(_req(tmp_path))
    assert res.status == "error" and "program not found" in res.error


def test_unknown_placeholder_rejected():
    with pytest.raises(UserInputError, match=r"\{contxt\}"):
        CommandGenerator("gen --context {contxt} --out {out}")


def test_template_without_output_rejected():
    with pytest.raises(UserInputError, match="where to write"):
        CommandGenerator("gen --prompt {prompt}")


def test_a_placeholder_without_value_expands_to_nothing(tmp_path):
    # segment 1 of a Track-B story and the `none` condition have no references, MIST's
    # setup shot no start image, and a benchmark may leave the size to the model
    gen = CommandGenerator("gen --refs {references} --start={start_image} {width}x{height} "
                           "--context {context} --out {out}")
    req = _req(tmp_path)
    assert gen.argv(req, tmp_path / "r.json") == [
        "gen", "--refs", "", "--start=", "x", "--context", "", "--out", req.out_path]


def test_references_and_numbers_are_filled(tmp_path):
    gen = CommandGenerator("gen {references} {seed} {fps} {out}")
    req = _req(tmp_path, references=(ReferenceImage("a.png", 1.0), ReferenceImage("b.png")), seed=7, fps=8.0)
    assert gen.argv(req, tmp_path / "r.json") == ["gen", "a.png,b.png", "7", "8.0", req.out_path]


def test_request_round_trips_through_dict(tmp_path):
    req = _req(tmp_path, references=(ReferenceImage("a.png", 2.5, "seg_002"),), extras={"loop": "yaw"})
    assert GenerationRequest.from_dict(req.to_dict()) == req
    with pytest.raises(UserInputError, match="unknown field"):
        GenerationRequest.from_dict({**req.to_dict(), "promt": "x"})


def test_load_generator_by_name_and_plugin(tmp_path):
    gen = load_generator("command", {"template": "gen {out}"})
    assert isinstance(gen, CommandGenerator)
    plugin = load_generator("vidmem.generators.command:CommandGenerator", {"template": "gen {out}"})
    assert plugin.info()["template"] == "gen {out}"
    with pytest.raises(UserInputError, match="cannot import"):
        load_generator("no_such_pkg.mod:Gen")
    with pytest.raises(UserInputError, match="bad options"):
        load_generator("command", {"templat": "x"})


def test_parse_options_rejects_bare_words():
    with pytest.raises(UserInputError, match="key=value"):
        parse_options(["perfect"])
