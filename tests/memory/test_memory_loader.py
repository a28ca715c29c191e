"""Loading policies by name or as a user's module:Class, with errors that say what to do."""

from __future__ import annotations

import textwrap

import pytest
from memory_fakes import SyntheticFilm

from vidmem.errors import UnknownNameError, UserInputError
from vidmem.memory.guard import replay
from vidmem.memory.policy import Policy, builtin_policies, load_policy
from vidmem.memory.store import Segment


def test_builtin_names_load_their_classes():
    assert builtin_policies() == sorted(["text_frame", "seg_uniform", "seg_dino_key", "seg_frame",
                                         "recency", "random"])
    policy = load_policy("recency", {"fps": 2})
    assert isinstance(policy, Policy) and policy.name == "recency" and policy.fps == 2.0


def test_unknown_names_and_bad_options_are_explained():
    with pytest.raises(UnknownNameError, match="did you mean 'text_frame'"):
        load_policy("text_fram")
    with pytest.raises(UserInputError, match=r"(?s)do not fit its constructor.*takes \(\*, fps=1.0\)"):
        load_policy("recency", {"fsp": 1})
    with pytest.raises(UserInputError, match="frame_text_embedder"):
        load_policy("text_frame")  # the embedders are required
    with pytest.raises(UserInputError, match="fps must be 1 or 2"):
        load_policy("recency", {"fps": 3})
    with pytest.raises(UserInputError, match="frame_text_embedder must be a backend with embed_texts"):
        load_policy("text_frame", {"frame_text_embedder": object(), "frame_image_embedder": 1})


def test_user_module_class_errors(tmp_path, monkeypatch):
    (tmp_path / "my_policies.py").write_text(textwrap.dedent("""
        from vidmem.memory.policy import Reference

        class Last:
            def __init__(self, k=1):
                self.k = k
            def reset(self, context):
                self.film = context.film_id
            def compose(self, instruction, segment_start, budget, store):
                pool = store.pool(1.0, before=segment_start)
                return [Reference(float(t), 1.0) for t in pool.seconds[::-1][: self.k]]
            def observe(self, segment, store):
                pass

        class Half:
            def reset(self, context):
                pass

        NOT_A_CLASS = 3
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    policy = load_policy("my_policies:Last", {"k": 2})
    assert policy.name == "my_policies:Last"
    res = replay(policy, [Segment(0, 0.0, 2.0), Segment(1, 2.0, 3.0)], SyntheticFilm(), 16)
    assert [r.source_seconds for r in res[1].references] == [1.5, 0.5]

    with pytest.raises(UserInputError, match="no module named 'nope_mod'"):
        load_policy("nope_mod:X")
    with pytest.raises(UserInputError, match="(?s)has no attribute .Lats.*it defines: Half, Last"):
        load_policy("my_policies:Lats")
    with pytest.raises(UserInputError, match="has no compose, observe method"):
        load_policy("my_policies:Half")
    with pytest.raises(UserInputError, match="is a int, not a class"):
        load_policy("my_policies:NOT_A_CLASS")
    with pytest.raises(UserInputError, match="built-in name or module:Class"):
        load_policy("my_policies:")
