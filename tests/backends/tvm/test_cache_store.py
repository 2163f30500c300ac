"""The kernel cache's store of weights (``backends.tvm.kernel.blobs``) and the build memo on it.

* constants round-trip exactly (dtype, shape, bytes; inline or as blobs), a blob is named by
  its bytes and written once, and readers share one memory map (no copy);
* a model's weights are on disk once (kernels and memo share the blobs), and a warm build's
  kernels and memo refer to the very memory of those maps;
* a changed weight (even changed in place, in the same array) never meets a stale memo;
* every kind of damaged file (blob, memo, metadata, library) is a miss, never a crash or
  a wrong result;
* a loaded memo carries the types inference gives (the warm build does not infer again);
* a saved build carries its blobs.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest

import passes
from backends.tvm import build, load
from backends.tvm.kernel import blobs
from backends.tvm.kernel.cache import KernelCache
from backends.tvm.kernel.runtime import ALIGNMENT, Kernel
from backends.tvm.lower.base import aligned_empty
from interpreter import evaluate
from semantics import parse, types_equal
from semantics.expr import Constant
from semantics.visitor import post_order
from typechecker import infer

B = importlib.import_module("backends.tvm.build")   # the package exports build() itself

BIG = """
def @main(%x: Tensor[(1, 16, 8, 8), float32], %w: Tensor[(16, 16, 3, 3), float32],
          %b: Tensor[(16), float32], %fc: Tensor[(40, 256), float32])
          -> Tensor[(1, 40), float32] {
  %0 = nn.relu(nn.bias_add(nn.conv2d(%x, %w, padding=[1, 1]), %b));
  %1 = nn.max_pool2d(%0, pool_size=[2, 2], strides=[2, 2]);
  nn.dense(nn.batch_flatten(%1), %fc)
}
"""


def big_params(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"w": rng.standard_normal((16, 16, 3, 3)).astype("float32"),
            "b": rng.standard_normal(16).astype("float32"),
            "fc": rng.standard_normal((40, 256)).astype("float32")}


def big_input(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 16, 8, 8)).astype("float32")


def oracle(params: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    return evaluate(passes.bind_params(parse(BIG), params), x)  # type: ignore[no-any-return]


def flushed_build(directory: Path, params: dict[str, np.ndarray], **kw: object) -> object:
    cache = KernelCache(directory)
    exe = build(BIG, params=params, executor="graph", cache=cache, jobs=1, **kw)
    cache.flush()
    return exe


# --- the store ------------------------------------------------------------------------------

ARRAYS = [np.random.default_rng(0).standard_normal((3, 4)).astype("float32"),
          np.asfortranarray(np.arange(30.0).reshape(5, 6)), np.array(3, "int8"),
          np.zeros((0, 2)), np.arange(7) % 2 == 0, np.array([np.nan, -0.0], "float16"),
          np.random.default_rng(1).standard_normal((64, 33)).astype("float32"),   # a blob
          np.asfortranarray(np.arange(2048, dtype="int64").reshape(32, 64)),      # a blob
          np.array([np.inf, -np.inf, np.nan] * 700, "float64")]                   # a blob


def test_constants_round_trip_exactly_and_blobs_are_named_by_their_bytes(tmp_path: Path
                                                                         ) -> None:
    docs = [blobs.constant_doc(tmp_path, a) for a in ARRAYS]
    for a, doc in zip(ARRAYS, docs):
        assert ("blob" in doc) is (a.nbytes >= blobs.BLOB_MIN_BYTES)
        got = blobs.constant_from_doc(tmp_path, doc)
        assert got.dtype == a.dtype and got.shape == a.shape
        assert got.flags.c_contiguous and got.flags.writeable
        assert np.ascontiguousarray(a).tobytes() == got.tobytes()
        if "blob" in doc:
            assert doc["blob"] == blobs.array_digest(a)
            path = blobs.blob_path(tmp_path, doc["blob"])
            assert path.read_bytes() == np.ascontiguousarray(a).tobytes()
            # Readers share one map: no copy, and not the array that was written.
            again = blobs.constant_from_doc(tmp_path, doc)
            assert np.shares_memory(got, again) and not np.shares_memory(got, a)
    files = sorted(tmp_path.iterdir())
    assert len(files) == 3 and all(f.suffix == blobs.SUFFIX for f in files)
    # The same bytes again (another array object, another shape): the same file, untouched.
    stamp = [f.stat().st_mtime_ns for f in files]
    doc = blobs.constant_doc(tmp_path, ARRAYS[6].copy().reshape(33, 64))
    assert doc["blob"] == docs[6]["blob"] and sorted(tmp_path.iterdir()) == files
    assert [f.stat().st_mtime_ns for f in files] == stamp


def test_missing_damaged_or_malformed_constants_are_errors(tmp_path: Path) -> None:
    a = ARRAYS[6]
    doc = blobs.constant_doc(tmp_path, a)
    path = blobs.blob_path(tmp_path, doc["blob"])
    path.write_bytes(path.read_bytes()[:-4])               # truncated
    blobs._MAPS.clear()
    with pytest.raises(blobs.BlobError):
        blobs.constant_from_doc(tmp_path, doc)
    path.unlink()
    with pytest.raises(blobs.BlobError):
        blobs.constant_from_doc(tmp_path, doc)
    for bad in [{**doc, "blob": "../../etc/passwd"}, {**doc, "dtype": "O"}, {"shape": [1]},
                {**doc, "shape": [-1]}, {"dtype": "<f4", "shape": [2], "data": "!!"},
                {"dtype": "<f4", "shape": [3], "data": "AAAAAA=="}, "not a document"]:
        with pytest.raises(blobs.BlobError):
            blobs.constant_from_doc(tmp_path, bad)
    # Written again, the blob is whole again (a damaged one is replaced, not kept).
    assert blobs.constant_doc(tmp_path, a) == doc
    assert blobs.constant_from_doc(tmp_path, doc).tobytes() == a.tobytes()


def test_a_kernel_keeps_usable_constants_without_copying_them() -> None:
    own = aligned_empty((3, 4), np.dtype("float32"))
    own[...] = np.arange(12.0, dtype="float32").reshape(3, 4)
    frozen = own.copy()
    frozen.flags.writeable = False
    fortran = np.asfortranarray(own)
    # the same values 4 bytes past a 64-byte boundary: usable by numpy, not by the fast lane
    base = aligned_empty((13,), np.dtype("float32"))
    shifted = base[1:].reshape(3, 4)
    shifted[...] = own
    kernel = Kernel("k", None, None, [], [], 0, [own, frozen, fortran, shifted], False)
    kept = kernel._constants
    assert kept[0] is own                              # usable as it is: taken over
    for c in kept[1:]:                                 # read-only / Fortran / unaligned: copied
        assert c.flags.writeable and c.flags.c_contiguous and c.tobytes() == own.tobytes()
        assert c.ctypes.data % ALIGNMENT == 0


# --- weights on disk once, loaded without a copy ---------------------------------------------

def test_weights_are_stored_once_and_a_warm_build_maps_them(tmp_path: Path) -> None:
    params = big_params(0)
    first = flushed_build(tmp_path, params)
    weight_bytes = sum(a.nbytes for a in params.values() if a.nbytes >= blobs.BLOB_MIN_BYTES)
    (memo,) = tmp_path.glob("*.module")
    assert memo.stat().st_size < weight_bytes / 4       # the memo refers to the blobs
    assert not list(tmp_path.glob("*.npz"))
    blobs._MAPS.clear()
    cache = KernelCache(tmp_path)
    second = build(BIG, params=params, executor="graph", cache=cache, jobs=1)
    assert cache.misses == 0 and cache.hits_disk > 0
    x = big_input()
    np.testing.assert_array_equal(first(x), second(x))
    memo_constants = [n.data for fn in second.module.functions.values()
                      for n in post_order(fn) if type(n) is Constant
                      and n.data.nbytes >= blobs.BLOB_MIN_BYTES]
    assert memo_constants and all(not c.flags.writeable for c in memo_constants)
    kernel_constants = [c for k in cache._memory.values() for c in k._constants
                        if c.nbytes >= blobs.BLOB_MIN_BYTES]
    # A kernel constant is a weight (the memory of its blob's map, shared with the memo's
    # constant of the same bytes) or one prepared from a weight at build time (the dense's
    # packed GEMV weight: the memo keeps the original, to compile the kernel again).
    prepared = []
    for c in kernel_constants:
        same = [m for m in memo_constants if m.tobytes() == c.tobytes()]
        if same:
            assert any(np.shares_memory(c, m) for m in same)
        else:
            prepared.append(c)
    assert len(prepared) < len(kernel_constants)
    # Each array is stored once: the blobs hold the weights and the prepared arrays.
    stored = weight_bytes + sum(c.nbytes for c in prepared)
    blob_bytes = sum(p.stat().st_size for p in tmp_path.glob(f"*{blobs.SUFFIX}"))
    assert stored <= blob_bytes < 1.1 * stored


def test_a_changed_weight_never_reuses_the_memo(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    params = big_params(1)
    x = big_input(1)
    first = flushed_build(tmp_path, params)
    np.testing.assert_allclose(first(x), oracle(params, x), rtol=1e-4, atol=1e-4)
    ran: list[int] = []
    real = B.prepare
    monkeypatch.setattr(B, "prepare", lambda *a: ran.append(1) or real(*a))
    # Changed in place, in the very arrays of the same dict: one element of the large
    # weight (its last byte's element), then the small bias.
    params["fc"][-1, -1] = np.nextafter(params["fc"][-1, -1], np.float32(np.inf)) * 7
    second = flushed_build(tmp_path, params)
    assert ran == [1]
    np.testing.assert_allclose(second(x), oracle(params, x), rtol=1e-4, atol=1e-4)
    assert not np.array_equal(second(x), first(x))
    params["b"][3] += 1
    third = flushed_build(tmp_path, params)
    assert ran == [1, 1]
    np.testing.assert_allclose(third(x), oracle(params, x), rtol=1e-4, atol=1e-4)
    # The same values again: the memo of that input serves (no pass runs).
    fourth = flushed_build(tmp_path, params)
    assert ran == [1, 1]
    np.testing.assert_array_equal(fourth(x), third(x))


def _damage_blob(directory: Path) -> None:
    largest = max(directory.glob(f"*{blobs.SUFFIX}"), key=lambda p: p.stat().st_size)
    largest.write_bytes(largest.read_bytes()[:-8])


def _delete_blob(directory: Path) -> None:
    for p in directory.glob(f"*{blobs.SUFFIX}"):
        p.unlink()


def _flip_memo(directory: Path) -> None:
    (memo,) = directory.glob("*.module")
    data = bytearray(memo.read_bytes())
    data[len(data) // 2] ^= 0x40
    memo.write_bytes(bytes(data))


def _truncate_memo(directory: Path) -> None:
    (memo,) = directory.glob("*.module")
    memo.write_bytes(memo.read_bytes()[:40])


def _garble_metadata(directory: Path) -> None:
    for p in directory.glob("*.json"):
        p.write_text(p.read_text()[:-10])


def _garble_library(directory: Path) -> None:
    for p in directory.glob("*.so"):
        p.write_bytes(b"\x7fELF garbage")


@pytest.mark.parametrize("damage", [_damage_blob, _delete_blob, _flip_memo, _truncate_memo,
                                    _garble_metadata, _garble_library],
                         ids=lambda f: f.__name__.lstrip("_"))
def test_a_damaged_cache_file_is_a_miss(tmp_path: Path, damage: object) -> None:
    params = big_params(2)
    x = big_input(2)
    want = flushed_build(tmp_path, params)(x)
    damage(tmp_path)  # type: ignore[operator]
    blobs._MAPS.clear()                        # as a new process would: no map survives
    cache = KernelCache(tmp_path)
    got = build(BIG, params=params, executor="graph", cache=cache, jobs=1)
    np.testing.assert_array_equal(got(x), want)
    assert not got.fallbacks
    cache.flush()
    # The rebuild repaired the cache: a third build loads everything again.
    blobs._MAPS.clear()
    third = KernelCache(tmp_path)
    again = build(BIG, params=params, executor="graph", cache=third, jobs=1)
    np.testing.assert_array_equal(again(x), want)
    assert third.misses == 0


def test_a_loaded_memo_has_the_types_inference_gives(tmp_path: Path) -> None:
    params = big_params(3)
    for level in (0, 3):
        cache = KernelCache(tmp_path)
        build(BIG, params=params, executor="graph", opt_level=level, cache=cache, jobs=1)
        cache.flush()
        memo = B.PrepareMemo(BIG, params, level, KernelCache(tmp_path))
        loaded = memo.load()
        assert loaded is not None and memo.kernel_keys
        inferred = infer(loaded)
        for name, fn in loaded.functions.items():
            have = list(post_order(fn))
            want = list(post_order(inferred.functions[name]))  # type: ignore[union-attr]
            assert len(have) == len(want)
            for h, w in zip(have, want):
                if hasattr(w, "checked_type") and w.checked_type is not None:
                    assert h.checked_type is not None
                    assert types_equal(h.checked_type, w.checked_type), (h, w)


def test_a_saved_build_carries_its_blobs(tmp_path: Path) -> None:
    params = big_params(4)
    exe = flushed_build(tmp_path / "cache", params)
    exe.save(tmp_path / "saved")  # type: ignore[attr-defined]
    saved = tmp_path / "saved" / "kernels"
    assert list(saved.glob(f"*{blobs.SUFFIX}"))
    blobs._MAPS.clear()
    again = load(tmp_path / "saved")
    x = big_input(4)
    np.testing.assert_array_equal(again(x), exe(x))  # type: ignore[operator]
    assert not again.fallbacks and again.kernels.compiled > 0


# --- the memo key ----------------------------------------------------------------------------

def test_the_params_digest_hashes_every_chunk_in_order(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    monkeypatch.setattr(B, "HASH_CHUNK", 64)      # many chunks: the thread pool hashes them
    rng = np.random.default_rng(5)
    params = {"a": rng.standard_normal(1000).astype("float32"),
              "b": rng.standard_normal((7, 9)).astype("float32")}
    base = B.params_digest(params)
    assert B.params_digest({k: v.copy() for k, v in params.items()}) == base
    for name, index in [("a", 0), ("a", 999), ("a", 500), ("b", (6, 8))]:
        changed = {k: v.copy() for k, v in params.items()}
        changed[name][index] += 1
        assert B.params_digest(changed) != base
    swapped = {"a": params["a"][::-1].copy(), "b": params["b"]}
    assert B.params_digest(swapped) != base
    assert B.params_digest({"a": params["a"].reshape(10, 100), "b": params["b"]}) != base
    assert B.params_digest({"a": params["b"], "b": params["a"]}) != base


def test_a_forked_child_builds_and_writes_without_its_parents_threads(tmp_path: Path) -> None:
    """The cache's writer thread and the params' hash pool are per process: in a forked
    child, a build compiles, hashes and writes its files (flush returns) instead of waiting
    forever on the parent's threads. The child runs no kernel (TVM's own thread pool is not
    the child's either); this process runs what the child wrote."""
    import os
    import signal

    params = big_params(6)
    x = big_input(6)
    parent = KernelCache(tmp_path)
    want = build(BIG, params=params, executor="graph", cache=parent, jobs=1)(x)
    B.params_digest({"p": np.zeros(B.HASH_CHUNK * 5, np.uint8)})   # the hash pool is up
    pid = os.fork()
    if pid == 0:                                  # the child: no test framework from here
        try:
            signal.alarm(60)
            parent.flush()                        # the parent's pending writes: not waited
            cache = KernelCache(tmp_path / "child")
            build(BIG, params=params, executor="graph", cache=cache, jobs=1)
            cache.flush()
            B.params_digest({"p": np.zeros(B.HASH_CHUNK * 5, np.uint8)})
            os._exit(0)
        except BaseException:  # noqa: BLE001 - any failure is the exit code
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert list((tmp_path / "child").glob("*.module"))
    blobs._MAPS.clear()
    written = KernelCache(tmp_path / "child")
    got = build(BIG, params=params, executor="graph", cache=written, jobs=1)(x)
    assert written.misses == 0 and written.hits_disk > 0
    np.testing.assert_array_equal(got, want)
