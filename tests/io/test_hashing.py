"""Content hashing: key order, array contents, and the per-process file-hash memo."""

from __future__ import annotations

import hashlib
import os

import numpy as np

from vidmem.io.hashing import content_hash, file_sha256


def test_arrays_hash_by_content_dtype_and_shape():
    a = np.arange(6, dtype=np.int32)
    assert content_hash({"x": a}) == content_hash({"x": a.copy()})
    assert content_hash({"x": a}) != content_hash({"x": a.astype(np.int64)})
    assert content_hash({"x": a}) != content_hash({"x": a.reshape(2, 3)})


def test_file_hash_is_recomputed_when_the_file_changes(tmp_path):
    f = tmp_path / "v.bin"
    f.write_bytes(b"first")
    assert file_sha256(f) == hashlib.sha256(b"first").hexdigest()
    f.write_bytes(b"second!")
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a later write, even on coarse clocks
    assert file_sha256(f) == hashlib.sha256(b"second!").hexdigest()
