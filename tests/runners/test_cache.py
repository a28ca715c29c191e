"""ArrayCache: content-addressed arrays on disk."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest
import runners_helpers as helpers

from vidmem.errors import StoreError, UserInputError
from vidmem.io.hashing import content_hash
from vidmem.runners.cache import ArrayCache, default_cache_dir


def test_get_or_compute_only_computes_misses(tmp_path):
    cache = ArrayCache(tmp_path / "c", namespace="toy-embedder")
    inputs = {content_hash({"crop": i}): np.full(4, i, dtype=np.float32) for i in range(5)}
    keys = list(inputs)
    calls: list[list[str]] = []

    def embed(missing):
        calls.append(list(missing))
        return np.stack([inputs[k] * 2 for k in missing])

    cache.put(keys[1], inputs[keys[1]] * 2)
    first = cache.get_or_compute([keys[0], keys[1], keys[2], keys[0]], embed)
    assert calls == [[keys[0], keys[2]]]  # one batched call, misses only, each once
    assert [a.tolist() for a in first] == [[0.0] * 4, [2.0] * 4, [4.0] * 4, [0.0] * 4]
    assert cache.stats() == {"hits": 1, "misses": 2}

    cache.reset_stats()
    again = cache.get_or_compute(keys[:3], embed)
    assert len(calls) == 1  # all hits: compute_fn not called
    assert cache.stats() == {"hits": 3, "misses": 0}
    for a, b in zip(again, first[:3], strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == np.float32

    # a new cache object on the same folder (another process) sees the same arrays
    other = ArrayCache(tmp_path / "c", namespace="toy-embedder")
    other.get_or_compute(keys, embed)
    assert calls[-1] == keys[3:]
    assert other.stats() == {"hits": 3, "misses": 2}


def test_get_put_roundtrip_keeps_dtype_and_shape(tmp_path):
    cache = ArrayCache(tmp_path)
    assert cache.get("abc") is None
    mask = np.zeros((3, 5), dtype=bool)
    mask[1, 2] = True
    cache.put("abc", mask)
    got = cache.get("abc")
    assert got.dtype == bool and got.shape == (3, 5) and got[1, 2]
    assert "abc" in cache and "abd" not in cache
    assert (tmp_path / "ab" / "abc.npy").is_file()
    assert not [p for p in tmp_path.rglob("*.tmp")]
    assert cache.stats() == {"hits": 1, "misses": 1}


def test_default_location_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv("VIDMEM_CACHE_DIR", str(tmp_path / "env-cache"))
    assert default_cache_dir() == tmp_path / "env-cache"
    assert ArrayCache().root == tmp_path / "env-cache" / "arrays"
    monkeypatch.delenv("VIDMEM_CACHE_DIR")
    assert default_cache_dir() == Path.home() / ".cache" / "vidmem"


def test_bad_inputs(tmp_path):
    cache = ArrayCache(tmp_path)
    with pytest.raises(UserInputError, match="expected a key"):
        cache.put("../escape", np.zeros(2))
    with pytest.raises(UserInputError, match="expected a namespace"):
        ArrayCache(tmp_path, namespace="a/b")
    with pytest.raises(UserInputError, match="dtype object"):
        cache.put("obj", np.array([{}, 1], dtype=object))
    with pytest.raises(StoreError, match=r"key bad: expected finite values, found 1 NaN/inf"):
        cache.put("bad", np.array([1.0, np.nan]))
    assert "bad" not in cache
    cache.put("ok-nan", np.array([np.nan]), allow_nonfinite=True)
    with pytest.raises(UserInputError, match="returned 1 arrays for 2 missing keys"):
        cache.get_or_compute(["x1", "x2"], lambda ks: [np.zeros(2)])
    with pytest.raises(StoreError, match="key y2: expected finite"):
        cache.get_or_compute(["y1", "y2"], lambda ks: np.array([[1.0], [np.inf]]))
    assert "y1" not in cache  # nothing from a bad batch is stored
    (tmp_path / "afile").write_text("x")
    with pytest.raises(StoreError, match="found a file"):
        ArrayCache(tmp_path / "afile")


def test_damaged_file_is_a_miss_and_is_recomputed(tmp_path):
    cache = ArrayCache(tmp_path)
    cache.put("dmg", np.arange(3))
    (tmp_path / "dm" / "dmg.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.warns(RuntimeWarning, match="unreadable cached array"):
        out = cache.get_or_compute(["dmg"], lambda ks: [np.arange(3) + 1])
    assert out[0].tolist() == [1, 2, 3]
    assert cache.get("dmg").tolist() == [1, 2, 3]


def test_concurrent_processes_share_the_cache(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=helpers.fill_cache, args=(str(tmp_path), w, 30)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    cache = ArrayCache(tmp_path)
    for i in range(30):
        np.testing.assert_array_equal(cache.get(f"key{i:03d}"), np.full(8, i, dtype=np.float32))
    assert not [p for p in tmp_path.rglob("*.tmp")]
    assert sorted(os.listdir(tmp_path))[:1] == ["ke"]
