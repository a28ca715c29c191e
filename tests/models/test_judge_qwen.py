"""The local Qwen-VL judge on tiny random Qwen2-VL / 2.5-VL / 3-VL / 3-VL-MoE models.

Each tiny model (1 text layer of width 32, a 1-block vision tower) is built by
:func:`vidmem.models.tiny.tiny_qwen_vl` from its config and saved to a temp dir with a
byte-level tokenizer holding the Qwen special tokens, a Qwen-style chat template and
the image processor config, then loaded through the backend's public constructor
with ``weights=<dir>``: the same ``from_pretrained`` path a user takes, no network. A
random model writes garbage, so the parse/retry logic is checked with scripted
replies in place of the generation.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from vidmem.errors import MissingDependencyError, UserInputError  # noqa: E402
from vidmem.models.backends import judge_qwen  # noqa: E402
from vidmem.models.backends.judge_openai import JSON_ONLY_INSTRUCTION  # noqa: E402
from vidmem.models.backends.judge_qwen import (  # noqa: E402
    Qwen2VL7BJudge,
    Qwen3VL8BJudge,
    Qwen25VL7BJudge,
    QwenVLJudge,
)
from vidmem.models.protocols import Judge, JudgeRequest, JudgeResult  # noqa: E402
from vidmem.models.tiny import QWEN_CHAT_TEMPLATE, tiny_qwen_vl  # noqa: E402

pytestmark = pytest.mark.models

FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe")
SPECIFIC = {"qwen2_vl": Qwen2VL7BJudge, "qwen2_5_vl": Qwen25VL7BJudge, "qwen3_vl": Qwen3VL8BJudge}


# -- inputs and tiny models ------------------------------------------------------


def _images(seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.integers(0, 256, (40, 60, 3), dtype=np.uint8),
        rng.integers(0, 256, (70, 50, 3), dtype=np.uint8),
    )


def _request(**kw):
    base = {
        "item_id": "clip-7",
        "prompt": 'Is the red cube visible? Answer {"present": true|false}.',
        "images": _images(),
        "required_keys": ("present",),
    }
    base.update(kw)
    return JudgeRequest(**base)


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("qwen-tiny")
    return {kind: tiny_qwen_vl(root / kind, family=kind) for kind in FAMILIES}


# -- a real (tiny) model end to end --------------------------------------------------


@pytest.mark.parametrize("kind", FAMILIES)
def test_tiny_model_judges_without_raising_and_is_deterministic(tiny_dirs, kind):
    judge = QwenVLJudge(weights=tiny_dirs[kind], max_new_tokens=6)
    assert isinstance(judge, Judge)
    request = _request()
    first = judge.judge(request)
    second = judge.judge(request)

    assert isinstance(first, JudgeResult)
    assert first.item_id == "clip-7" and first.judge == "judge/transformers"
    assert first.status in ("ok", "unparsable")
    assert isinstance(first.raw, str)
    if first.status == "unparsable":
        assert first.attempts == 2 and first.data is None and first.error
    else:
        assert first.attempts in (1, 2) and "present" in first.data
    assert (second.status, second.raw, second.attempts) == (first.status, first.raw, first.attempts)

    stats = judge.stats()
    assert stats["requests"] == 2 and stats["errors"] == 0 and stats["retries"] == 0
    assert stats["calls"] == first.attempts + second.attempts
    assert stats["ok"] + stats["unparsable"] == 2

    info = judge.info()
    assert info.name == "judge/transformers" and info.official is False
    assert info.weights == str(tiny_dirs[kind]) and info.weights_sha256
    assert info.dtype == "float32" and info.device == "cpu"
    assert info.settings["model_type"] == kind
    assert info.settings["decoding"] == "greedy"
    assert info.settings["max_new_tokens"] == 6


def _varied_requests(n=5):
    """``n`` requests of different prompt lengths, image counts (0-2) and image sizes."""
    rng = np.random.default_rng(3)
    out = []
    for k in range(n):
        images = tuple(
            rng.integers(0, 256, (30 + 17 * k + 9 * i, 80 - 9 * k, 3), dtype=np.uint8)
            for i in range((k + 1) % 3)
        )
        prompt = f"Question {k}: is it there? " + "Look closely. " * (3 * k) + '{"present": ?}'
        out.append(_request(item_id=f"q{k}", prompt=prompt, images=images))
    return out


def _record_first_replies(judge, monkeypatch):
    """Record each request's first reply and the batch size of every ``generate`` call."""
    firsts, rows = [], []
    exchange, generate = judge._exchange, judge._generate

    def spy_exchange(request, user, first, again):
        attempt = first()
        firsts.append((request.item_id, attempt[0]))
        return exchange(request, user, lambda: attempt, again)

    def spy_generate(inputs):
        rows.append(int(inputs["input_ids"].shape[0]))
        return generate(inputs)

    monkeypatch.setattr(judge, "_exchange", spy_exchange)
    monkeypatch.setattr(judge, "_generate", spy_generate)
    return firsts, rows


def _summary(result):
    return (result.item_id, result.status, result.raw, result.attempts, result.data, result.error)


def _also_stop_at(judge, token):
    """Make ``token`` an end-of-sequence token too, so that some rows stop early."""
    config = judge.model.generation_config
    eos = config.eos_token_id
    config.eos_token_id = [*(eos if isinstance(eos, (list, tuple)) else [eos]), token]
    judge._eos_ids = judge._eos_ids | {token}


@pytest.mark.parametrize("kind", FAMILIES)
def test_batched_judge_many_equals_one_at_a_time(tiny_dirs, kind, monkeypatch):
    requests = _varied_requests(5)
    single = QwenVLJudge(weights=tiny_dirs[kind], max_new_tokens=10)
    # the 4th token the model writes for q1 ends a reply: some rows stop early, with
    # padding after their end in the batch, and others run to max_new_tokens
    user, vision, text = single._stage(requests[1])
    inputs = single._model_inputs([text], [vision])
    token = int(single._generate(inputs)[0, inputs["input_ids"].shape[1] + 3])
    _also_stop_at(single, token)
    single_firsts, single_rows = _record_first_replies(single, monkeypatch)
    expected = [single.judge(r) for r in requests]

    judge = QwenVLJudge(weights=tiny_dirs[kind], max_new_tokens=10, batch_size=3)
    _also_stop_at(judge, token)
    padding_side = judge.tokenizer.padding_side
    firsts, rows = _record_first_replies(judge, monkeypatch)
    results = judge.judge_many(requests)

    assert [r.item_id for r in results] == [f"q{k}" for k in range(5)]
    assert [_summary(r) for r in results] == [_summary(r) for r in expected]
    # the first replies themselves (text and finish reason) match row for row
    assert firsts == single_firsts
    assert firsts[1][1].finish_reason == "stop"
    assert {reply.finish_reason for _, reply in firsts} <= {"stop", "length"}
    # first asks: one generate of 3 rows, then one of 2; each follow-up alone
    again = [r.attempts - 1 for r in results]
    assert rows == [3, *[1] * sum(again[:3]), 2, *[1] * sum(again[3:])]
    assert single_rows == [1] * (5 + sum(again))
    assert judge.stats() == single.stats()
    assert judge.tokenizer.padding_side == padding_side  # set for the batch call only


def test_batched_replies_are_cut_at_their_own_end(tiny_dirs):
    """Rows that stop early lose the padding after their end token; a full row is "length"."""
    judge = QwenVLJudge(weights=tiny_dirs["qwen2_vl"], max_new_tokens=4)
    eos, pad = min(judge._eos_ids), judge._pad_id
    a, b = (judge.tokenizer.convert_tokens_to_ids(c) for c in ("a", "b"))
    output = torch.tensor(
        [[pad, 7, a, eos, pad, pad], [7, 7, a, b, a, b], [7, 7, eos, pad, pad, pad]]
    )
    replies = judge._decode_rows(output, 2)
    assert replies == [
        judge_qwen._Reply("a", "stop"),
        judge_qwen._Reply("abab", "length"),
        judge_qwen._Reply("", "stop"),
    ]


def test_bad_image_in_a_batch_fails_alone(tiny_dirs):
    requests = _varied_requests(4)
    requests[1] = _request(item_id="broken", images=(np.zeros((8, 8), np.float32),))
    requests[2] = _request(item_id="silent", prompt="   ")
    judge = QwenVLJudge(weights=tiny_dirs["qwen2_vl"], max_new_tokens=6, batch_size=3)
    results = judge.judge_many(requests)

    assert [r.item_id for r in results] == ["q0", "broken", "silent", "q3"]
    bad = results[1]
    assert bad.status == "error" and bad.attempts == 0 and bad.raw == "" and bad.data is None
    assert "item 'broken'" in bad.error and "image 0 must be uint8 (H, W, 3)" in bad.error
    assert results[2].status == "error" and "item 'silent': the prompt is empty" in results[2].error
    single = QwenVLJudge(weights=tiny_dirs["qwen2_vl"], max_new_tokens=6)
    for k in (0, 3):
        assert _summary(results[k]) == _summary(single.judge(requests[k]))


def test_batched_stats_count_each_request(tiny_dirs):
    requests = _varied_requests(5)
    requests.insert(2, _request(item_id="broken", images=(np.zeros((8, 8, 4), np.uint8),)))
    one = QwenVLJudge(weights=tiny_dirs["qwen2_5_vl"], max_new_tokens=6)
    sequential = one.judge_many(requests)
    judge = QwenVLJudge(weights=tiny_dirs["qwen2_5_vl"], max_new_tokens=6, batch_size=4)
    results = judge.judge_many(requests)

    assert [_summary(r) for r in results] == [_summary(r) for r in sequential]
    stats = judge.stats()
    assert stats == one.stats()
    answered = [r for r in results if r.item_id != "broken"]
    assert stats["requests"] == 5 and stats["retries"] == 0
    assert stats["calls"] == sum(r.attempts for r in answered)
    assert stats["format_retries"] == sum(r.attempts - 1 for r in answered)
    for status, key in (("ok", "ok"), ("unparsable", "unparsable"), ("error", "errors")):
        assert stats[key] == sum(r.status == status for r in answered)


def test_batched_generation_error_is_an_error_result_per_row(tiny_dirs, monkeypatch):
    judge = QwenVLJudge(weights=tiny_dirs["qwen2_vl"], max_new_tokens=4, batch_size=2)

    def boom(inputs):
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(judge, "_generate", boom)
    results = judge.judge_many(_varied_requests(2))
    assert [(r.item_id, r.status, r.attempts) for r in results] == [
        ("q0", "error", 1),
        ("q1", "error", 1),
    ]
    assert all(r.error == "RuntimeError: CUDA out of memory" for r in results)
    stats = judge.stats()
    assert (stats["requests"], stats["calls"], stats["errors"], stats["ok"]) == (2, 2, 2, 0)


def test_judge_many_batch_size_one_is_judge(scripted):
    judge, script = scripted('{"present": true}', "no", '{"present": false}')
    results = judge.judge_many([_request(item_id="a"), _request(item_id="b")])
    assert [(r.item_id, r.status, r.attempts) for r in results] == [("a", "ok", 1), ("b", "ok", 2)]
    assert len(script.prompts) == 3 and judge.batch_size == 1
    with pytest.raises(UserInputError, match="concurrency must be >= 1"):
        judge.judge_many([], concurrency=0)


@pytest.mark.parametrize("kind", sorted(SPECIFIC))
def test_named_variant_loads_its_family(tiny_dirs, kind):
    judge = SPECIFIC[kind](weights=tiny_dirs[kind], max_new_tokens=2)
    result = judge.judge(_request(images=_images()[:1], required_keys=()))
    assert result.judge == SPECIFIC[kind].name
    assert result.status in ("ok", "unparsable")


def test_named_variant_refuses_another_family(tiny_dirs):
    with pytest.raises(
        UserInputError, match="hold a 'qwen2_vl' model, expected model_type 'qwen3_vl'"
    ):
        Qwen3VL8BJudge(weights=tiny_dirs["qwen2_vl"])


def test_other_model_types_are_refused(tiny_dirs, tmp_path):
    import shutil

    d = tmp_path / "llava"
    shutil.copytree(tiny_dirs["qwen2_vl"], d)
    config = json.loads((d / "config.json").read_text())
    config["model_type"] = "llava"
    (d / "config.json").write_text(json.dumps(config))
    with pytest.raises(
        UserInputError, match="hold a 'llava' model, expected model_type 'qwen2_vl' or"
    ):
        QwenVLJudge(weights=d)


def test_model_inputs_match_the_official_processor(tiny_dirs, monkeypatch):
    """``_prepare`` reproduces ``Qwen2VLProcessor``/``Qwen3VLProcessor`` tensor for tensor.

    The official processor needs a torchvision video processor; the check of that
    argument is bypassed here (images only) to build it as the reference.
    """
    from transformers.processing_utils import ProcessorMixin

    original = ProcessorMixin.check_argument_for_proper_class

    def allow_no_video(self, name, arg):
        if name == "video_processor" and arg is None:
            return None
        return original(self, name, arg)

    monkeypatch.setattr(ProcessorMixin, "check_argument_for_proper_class", allow_no_video)
    for kind, cls_name in (("qwen2_vl", "Qwen2VLProcessor"), ("qwen3_vl", "Qwen3VLProcessor")):
        judge = QwenVLJudge(weights=tiny_dirs[kind], max_image_side=None)
        try:
            reference = getattr(transformers, cls_name)(
                image_processor=judge.image_processor,
                tokenizer=judge.tokenizer,
                video_processor=None,
                chat_template=judge.chat_template,
            )
        except (TypeError, ValueError, AttributeError) as exc:  # internals moved
            pytest.skip(f"cannot build the reference processor without torchvision: {exc}")
        request = _request()
        messages = [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": request.prompt},
                    {"type": "image"},
                    {"type": "image"},
                ],
            }
        ]
        text = judge._render(messages)
        expected = reference(text=[text], images=list(request.images), return_tensors="pt")
        got = judge._prepare(messages, judge._vision(request), request.item_id)
        for key in ("input_ids", "attention_mask", "mm_token_type_ids", "image_grid_thw"):
            assert torch.equal(got[key], expected[key]), (kind, key)
        assert torch.allclose(got["pixel_values"], expected["pixel_values"]), kind
        n_image_tokens = int((got["input_ids"] == judge.image_token_id).sum())
        assert n_image_tokens == int(expected["image_grid_thw"].prod(dim=1).sum()) // 4


def test_max_image_side_and_pixel_bounds(tiny_dirs):
    tall = np.zeros((300, 150, 3), np.uint8)
    judge = QwenVLJudge(weights=tiny_dirs["qwen2_vl"], max_image_side=60)
    vision = judge._vision(_request(images=(tall,)))
    # 300x150 -> 60x30 (longer side 60) -> smart_resize to multiples of 28: 56x28
    assert vision["image_grid_thw"].tolist() == [[1, 4, 2]]

    bounded = QwenVLJudge(
        weights=tiny_dirs["qwen2_vl"], max_image_side=None, max_pixels=28 * 28 * 2
    )
    vision = bounded._vision(_request(images=(tall,)))
    t, h, w = vision["image_grid_thw"][0].tolist()
    assert h * w * 14 * 14 <= 28 * 28 * 2
    settings = bounded.info().settings
    assert settings["max_pixels"] == 28 * 28 * 2 and settings["max_image_side"] is None


def test_chat_template_from_jinja_file_and_missing(tmp_path):
    d = tiny_qwen_vl(tmp_path / "jinja", "qwen2_vl", chat_template_file="chat_template.jinja")
    judge = QwenVLJudge(weights=d, max_new_tokens=2)
    assert judge.chat_template == QWEN_CHAT_TEMPLATE
    assert judge.judge(_request()).status in ("ok", "unparsable")

    bare = tiny_qwen_vl(tmp_path / "bare", "qwen2_vl", chat_template_file=None)
    with pytest.raises(MissingDependencyError, match="no chat template"):
        QwenVLJudge(weights=bare)


# -- parse / retry logic with scripted generations -----------------------------------


class Script:
    """Stands in for ``_run_model``: replays texts (or raises exceptions), records inputs."""

    def __init__(self, judge, *items):
        self.items = list(items)
        self.prompts: list[str] = []
        self.tokenizer = judge.tokenizer

    def __call__(self, inputs):
        self.prompts.append(self.tokenizer.decode(inputs["input_ids"][0].tolist()))
        item = self.items.pop(0)
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, tuple):
            return judge_qwen._Reply(*item)
        return judge_qwen._Reply(item, "stop")


@pytest.fixture
def scripted(tiny_dirs, monkeypatch):
    def make(*items, **kw):
        judge = QwenVLJudge(weights=tiny_dirs["qwen2_vl"], **kw)
        script = Script(judge, *items)
        monkeypatch.setattr(judge, "_run_model", script)
        return judge, script

    return make


def test_valid_json_first_time(scripted):
    judge, script = scripted('{"present": true, "why": "top left"}')
    result = judge.judge(_request())
    assert result.status == "ok" and result.attempts == 1 and result.error is None
    assert result.data == {"present": True, "why": "top left"}
    assert result.raw == '{"present": true, "why": "top left"}'
    assert judge.stats() == {
        "requests": 1,
        "calls": 1,
        "retries": 0,
        "format_retries": 0,
        "ok": 1,
        "unparsable": 0,
        "errors": 0,
    }
    # one user turn: prompt text first, then the two images
    prompt = script.prompts[0]
    assert prompt.count("<|im_start|>user") == 1
    assert prompt.index("Is the red cube visible?") < prompt.index("<|vision_start|>")
    assert prompt.count("<|vision_start|>") == 2
    assert prompt.endswith("<|im_start|>assistant\n")


def test_json_in_prose(scripted):
    judge, _ = scripted('Sure! Here it is:\n```json\n{"present": false}\n```\nHope this helps.')
    result = judge.judge(_request())
    assert result.status == "ok" and result.data == {"present": False} and result.attempts == 1


def test_broken_then_valid_replays_the_first_reply(scripted):
    judge, script = scripted("I think the cube is there.", '{"present": true}')
    result = judge.judge(_request())
    assert result.status == "ok" and result.attempts == 2 and result.data == {"present": True}
    assert result.raw == '{"present": true}'
    stats = judge.stats()
    assert stats["format_retries"] == 1 and stats["calls"] == 2 and stats["ok"] == 1
    follow_up = script.prompts[1]
    assert follow_up.count("<|vision_start|>") == 2  # the images are shown again
    assert "<|im_start|>assistant\nI think the cube is there.<|im_end|>" in follow_up
    assert JSON_ONLY_INSTRUCTION in follow_up
    assert "no JSON object found in the reply" in follow_up
    assert "It must contain the keys: present." in follow_up


def test_missing_required_key_counts_as_unusable(scripted):
    judge, script = scripted('{"visible": true}', '{"present": true}')
    result = judge.judge(_request())
    assert result.status == "ok" and result.attempts == 2
    assert "lacks the required keys ['present']" in script.prompts[1]


def test_broken_twice_is_unparsable_never_a_default(scripted):
    judge, _ = scripted("maybe?", "still no json {")
    result = judge.judge(_request())
    assert result.status == "unparsable" and result.data is None and result.attempts == 2
    assert result.raw == "still no json {"
    assert "also after the JSON-only follow-up" in result.error
    assert judge.stats()["unparsable"] == 1 and judge.stats()["format_retries"] == 1


def test_non_finite_numbers_are_unparsable(scripted):
    bad = '{"present": true, "confidence": NaN}'
    judge, script = scripted(bad, '{"present": true, "confidence": 1e999}')
    result = judge.judge(_request())
    assert result.status == "unparsable" and result.data is None and result.attempts == 2
    assert result.raw == '{"present": true, "confidence": 1e999}'
    assert "non-finite number" in result.error
    assert "non-finite number" in script.prompts[1]


def test_wrong_value_type_is_unparsable_never_coerced(scripted):
    judge, script = scripted('{"present": "true"}', '{"present": "yes"}')
    result = judge.judge(_request(key_types={"present": "boolean"}))
    assert result.status == "unparsable" and result.data is None and result.attempts == 2
    assert "'present' is a string, expected boolean" in result.error
    assert "'present' is a string, expected boolean" in script.prompts[1]
    judge, _ = scripted('{"present": "true"}', '{"present": false}')
    result = judge.judge(_request(key_types={"present": "boolean"}))
    assert result.status == "ok" and result.data == {"present": False}


def test_empty_first_reply_is_not_replayed(scripted):
    judge, script = scripted("", '{"present": false}')
    result = judge.judge(_request())
    assert result.status == "ok" and result.attempts == 2
    follow_up = script.prompts[1]
    assert follow_up.count("<|im_start|>user") == 1
    assert "<|im_start|>assistant\n<|im_end|>" not in follow_up
    assert "the reply was empty" in follow_up and JSON_ONLY_INSTRUCTION in follow_up


def test_truncated_reply_says_so(scripted):
    judge, _ = scripted(('{"present": tr', "length"), ('{"present": tr', "length"))
    result = judge.judge(_request())
    assert result.status == "unparsable"
    assert "cut at max_new_tokens" in result.error


def test_generation_error_is_an_error_result(scripted):
    judge, _ = scripted(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    result = judge.judge(_request())
    assert result.status == "error" and result.attempts == 1 and result.raw == ""
    assert result.data is None
    assert result.error == "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert judge.stats()["errors"] == 1 and judge.stats()["calls"] == 1


def test_error_in_follow_up_keeps_the_first_reply(scripted):
    judge, _ = scripted("no json", RuntimeError("boom"))
    result = judge.judge(_request())
    assert result.status == "error" and result.attempts == 2
    assert result.raw == "no json"
    assert "the JSON-only follow-up got no answer: RuntimeError: boom" in result.error


def test_request_without_images(scripted):
    judge, script = scripted('{"a": 1}')
    result = judge.judge(_request(images=(), required_keys=("a",)))
    assert result.status == "ok" and "<|vision_start|>" not in script.prompts[0]


# -- misconfiguration raises, with a clear message -----------------------------------


def test_missing_weights_dir(tmp_path):
    with pytest.raises(MissingDependencyError, match=r"weights '.*nowhere' not found"):
        QwenVLJudge(weights=tmp_path / "nowhere")


def test_generic_backend_needs_weights():
    with pytest.raises(MissingDependencyError, match="no weights given"):
        QwenVLJudge()


def test_hub_id_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("VIDMEM_MODEL_DIR", raising=False)
    with pytest.raises(MissingDependencyError, match="Qwen/Qwen2.5-VL-7B-Instruct' not found"):
        Qwen25VL7BJudge()


def test_hub_style_processor_config(tiny_dirs, tmp_path):
    """Qwen2-VL's hub file gives the bounds as top-level ``min_pixels``/``max_pixels``."""
    import shutil

    d = tmp_path / "hubstyle"
    shutil.copytree(tiny_dirs["qwen2_vl"], d)
    config = json.loads((d / "preprocessor_config.json").read_text())
    config.pop("size")
    config.update(min_pixels=3136, max_pixels=12845056)
    (d / "preprocessor_config.json").write_text(json.dumps(config))
    settings = QwenVLJudge(weights=d).info().settings
    assert (settings["min_pixels"], settings["max_pixels"]) == (3136, 12845056)
    settings = QwenVLJudge(weights=d, max_pixels=200_000).info().settings
    assert (settings["min_pixels"], settings["max_pixels"]) == (3136, 200_000)


def test_weights_dir_without_processor_config(tiny_dirs, tmp_path):
    import shutil

    d = tmp_path / "noproc"
    shutil.copytree(tiny_dirs["qwen2_vl"], d)
    (d / "preprocessor_config.json").unlink()
    with pytest.raises(MissingDependencyError, match="no preprocessor_config.json"):
        QwenVLJudge(weights=d)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_new_tokens": 0}, "max_new_tokens must be an integer >= 1"),
        ({"max_image_side": 2.5}, "max_image_side must be an integer >= 1 or None"),
        ({"min_pixels": 5000, "max_pixels": 100}, "min_pixels .* is larger than max_pixels"),
        ({"repetition_penalty": 0}, "repetition_penalty must be a number > 0"),
    ],
)
def test_bad_settings(tiny_dirs, kwargs, match):
    with pytest.raises(UserInputError, match=match):
        QwenVLJudge(weights=tiny_dirs["qwen2_vl"], **kwargs)


def test_bad_requests_raise(scripted):
    judge, _ = scripted()
    with pytest.raises(UserInputError, match="the prompt is empty"):
        judge.judge(_request(prompt="  "))
    with pytest.raises(UserInputError, match=r"image 0 must be uint8 \(H, W, 3\)"):
        judge.judge(_request(images=(np.zeros((8, 8), np.float32),)))
    with pytest.raises(UserInputError, match="image placeholder"):
        judge.judge(_request(prompt="look at <|image_pad|> this", images=()))
    assert judge.stats()["requests"] == 0


# -- the token limit of each question (issue 24 item 9) -------------------------------


def _spy_limits(judge, monkeypatch):
    seen, generate = [], judge._generate

    def spy(inputs):
        seen.append(inputs.get("max_new_tokens"))
        return generate(inputs)

    monkeypatch.setattr(judge, "_generate", spy)
    return seen


def test_each_question_gets_its_own_token_limit(tiny_dirs, monkeypatch):
    """The request's max_tokens (its prompt file's) bounds the first ask and the follow-up;
    batched, the batch generates to the largest limit and cuts each row at its own."""
    short = _request(item_id="s", max_tokens=3)
    long = _request(item_id="l", max_tokens=5)
    single = QwenVLJudge(weights=tiny_dirs["qwen2_vl"])
    assert single.info().settings["max_new_tokens"] == "per_question"
    firsts, _ = _record_first_replies(single, monkeypatch)
    seen = _spy_limits(single, monkeypatch)
    expected = [single.judge(short), single.judge(long)]
    # a random tiny model writes no JSON: each question is asked twice, at its own limit
    assert seen == [3, 3, 5, 5]
    (_, a), (_, b) = firsts
    assert b.text.startswith(a.text) and len(a.text) < len(b.text)  # greedy: a prefix

    batched = QwenVLJudge(weights=tiny_dirs["qwen2_vl"], batch_size=2)
    seen = _spy_limits(batched, monkeypatch)
    results = batched.judge_many([short, long])
    assert seen == [5, 3, 5]  # one batch to the largest limit, then each follow-up
    assert [_summary(r) for r in results] == [_summary(r) for r in expected]


def test_an_explicit_max_new_tokens_applies_to_every_question(tiny_dirs, monkeypatch):
    judge = QwenVLJudge(weights=tiny_dirs["qwen2_vl"], max_new_tokens=4)
    seen = _spy_limits(judge, monkeypatch)
    judge.judge(_request(max_tokens=3))
    judge.judge(_request())
    assert seen == [4, 4, 4, 4]
