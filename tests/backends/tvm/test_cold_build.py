"""What makes a cold build fast (issue 35, ResNet-18 <= 5 s): mechanisms only, no timings.

* twins (the same layer with other weights: other cache keys, the same scheduled TIR) are
  compiled once: the second takes the first one's library, whose assembly is the one it
  would have got, and computes what a kernel compiled on its own computes;
* a twin is found only for an equal function (buffer alignment, shapes, target);
* ``compile_many`` keeps candidate twins next to each other;
* a kernel keeps its constants 64-byte aligned and its fast lane's TVM tensors are that
  very memory (no second copy of a model's weights);
* forked workers and new-interpreter workers write the in-process entries byte for byte;
* the default parallelism follows the kernel count, the CPUs and the load average.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tvm

import passes
from backends.tvm.kernel import compile as KC
from backends.tvm.kernel import workers as K
from backends.tvm.kernel.assembly import kernel_assembly
from backends.tvm.kernel.cache import KernelCache, kernel_key
from backends.tvm.kernel.compile import TWINS, compile_function
from backends.tvm.kernel.runtime import ALIGNMENT, _owned_constant
from backends.tvm.kernel.workers import compile_many
from backends.tvm.target import normalize_target
from passes.fuse_ops import is_primitive
from semantics import parse
from semantics.expr import Constant, Function
from semantics.module import IRModule
from semantics.types import Type
from semantics.visitor import post_order
from typechecker import infer

# Two convolution layers of one shape, with other weights (bound as constants): other keys,
# the same code. A third of another shape is no twin of theirs.
LAYERS = """
def @main(%x: Tensor[(1, 4, 9, 9), float32], %w1: Tensor[(4, 4, 3, 3), float32],
          %w2: Tensor[(4, 4, 3, 3), float32], %w3: Tensor[(2, 4, 3, 3), float32])
          -> Tensor[(1, 2, 9, 9), float32] {
  %0 = nn.relu(nn.conv2d(%x, %w1, padding=[1, 1]));
  %1 = nn.relu(nn.conv2d(%0, %w2, padding=[1, 1]));
  nn.relu(nn.conv2d(%1, %w3, padding=[1, 1]))
}
"""


def _weights(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"w1": rng.standard_normal((4, 4, 3, 3)).astype("float32"),
            "w2": rng.standard_normal((4, 4, 3, 3)).astype("float32"),
            "w3": rng.standard_normal((2, 4, 3, 3)).astype("float32")}


def _requests(seed: int = 0) -> list[tuple[Function, list[Type]]]:
    typed = infer(parse(LAYERS))
    assert isinstance(typed, IRModule)
    mod = passes.bind_params(typed, _weights(seed))
    fused = passes.fuse_ops(infer(mod), fuse_opt_level=2)
    seen: dict[int, Function] = {}
    for fn in fused.functions.values():
        for node in post_order(fn):
            if is_primitive(node):
                seen[id(node)] = node  # type: ignore[assignment]
    weights = _weights(seed)

    def layer(f: Function) -> int:          # which weight the kernel holds: w1, w2 or w3
        (data,) = [n.data for n in post_order(f.body) if isinstance(n, Constant)]
        return next(i for i, name in enumerate(["w1", "w2", "w3"])
                    if data.shape == weights[name].shape
                    and np.array_equal(data, weights[name]))

    return [(f, [p.type_annotation or p.checked_type for p in f.params])  # type: ignore[misc]
            for f in sorted(seen.values(), key=layer)]


def _reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``relu(conv2d(x, w, padding 1))`` in float64."""
    n, c, h, wd = x.shape
    p = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd))
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", p[:, :, i:i + h, j:j + wd],
                             w[:, :, i, j].astype(np.float64))
    return np.maximum(out, 0)


def _count_compiles(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    orig = tvm.compile

    def counting(mod: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(mod)
        return orig(mod, *args, **kwargs)

    monkeypatch.setattr(tvm, "compile", counting)
    return calls


def test_a_twin_takes_the_first_ones_library_and_computes_its_own_layer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reqs = _requests()
    spec = normalize_target(None)
    keys = [kernel_key(f, t, spec) for f, t in reqs]
    assert len(set(keys)) == len(keys) == 3          # other weights: other kernels
    TWINS.clear()
    calls = _count_compiles(monkeypatch)
    cache = KernelCache(tmp_path / "twins")
    assert compile_many(reqs, cache=cache, jobs=1) == 3
    assert len(calls) == 2                           # the second layer took the first's code
    kernels = [cache.get(k) for k in keys]
    assert kernels[0] is not None and kernels[1] is not None and kernels[2] is not None
    assert kernels[0].name == kernels[1].name != kernels[2].name
    x = np.random.default_rng(1).standard_normal((1, 4, 9, 9)).astype("float32")
    w = _weights(0)
    h1 = kernels[0](x)
    assert isinstance(h1, np.ndarray)
    h2 = kernels[1](h1)
    assert isinstance(h2, np.ndarray)
    np.testing.assert_allclose(h1, _reference(x, w["w1"]), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(h2, _reference(h1, w["w2"]), rtol=1e-4, atol=1e-4)
    # The twin's entry loads in a new cache (a new process) and computes the same.
    cache.flush()
    again = KernelCache(tmp_path / "twins").get(keys[1])
    assert again is not None
    np.testing.assert_array_equal(again(h1), h2)
    # Compiled on its own (no twin to take), the second layer computes the same bits.
    TWINS.clear()
    alone = compile_function(*reqs[1], cache=KernelCache(tmp_path / "alone"))
    assert alone.name == kernels[1].name          # the symbol is named after the code
    np.testing.assert_array_equal(alone(h1), h2)


def _asm(func: Function, types: list[Type]) -> str:
    text = kernel_assembly(func, types)
    return re.sub(r"relay_kernel_[0-9a-f]+", "KERNEL", text)


def test_twins_have_the_same_assembly_but_for_the_symbol() -> None:
    (f1, t1), (f2, t2), (f3, t3) = _requests(seed=3)
    assert _asm(f1, t1) == _asm(f2, t2)
    assert _asm(f1, t1) != _asm(f3, t3)


def test_a_twin_is_found_only_for_an_equal_function() -> None:
    from tvm import te

    def probe(n: int, relax: bool, spec: Any, needs_alignment: bool = False) -> Any:
        a = te.placeholder((n,), "float32", name="a")
        b = te.compute((n,), lambda i: a[i] * 2.0, name="b")
        prim = te.create_prim_func([a, b])
        if relax:
            prim = KC._relax_alignment_in_place(prim)
        mod = tvm.IRModule({"f": prim.with_attr("global_symbol", f"k{n}{relax}")})
        return KC._named_by_code(mod, "given", spec, needs_alignment)

    spec = normalize_target(None)
    twins = KC._Twins()
    _, name, first = probe(16, True, spec)
    assert first is not None and name.startswith("relay_kernel_") and name != "given"
    twins.remember(first, name, b"library")
    _, again, equal = probe(16, True, spec)            # another symbol before: same code
    assert again == name
    found = twins.find(equal)
    assert found is not None and found.name == name and found.library == b"library"
    assert twins.find(probe(17, True, spec)[2]) is None          # another shape
    assert twins.find(probe(16, False, spec)[2]) is None         # 64-byte aligned buffers
    assert twins.find(probe(16, True, spec, True)[2]) is None    # the alignment flag
    other = normalize_target({"lanes": 16 if spec.lanes != 16 else 8})
    assert twins.find(probe(16, True, other)[2]) is None         # another target
    assert twins.find(None) is None


def test_candidate_twins_are_queued_together() -> None:
    (f1, t1), (f2, t2), (f3, t3) = _requests()
    work: list[tuple[str, tuple[Function, Sequence[Type]]]] = [
        ("a", (f1, t1)), ("c", (f3, t3)), ("b", (f2, t2))]
    groups = K._twins_together(work)
    assert [[k for k, _ in g] for g in groups] == [["a", "b"], ["c"]]
    costs = [K._cost(g[0][1][0]) for g in groups]
    assert costs == sorted(costs, reverse=True)
    assert K._twin_signature(f1, t1) == K._twin_signature(f2, t2)
    assert K._twin_signature(f1, t1) != K._twin_signature(f3, t3)


def test_constants_stay_aligned_and_the_fast_lane_shares_their_memory(tmp_path: Path) -> None:
    TWINS.clear()
    func, types = _requests()[2]
    kernel = compile_function(func, types, cache=KernelCache(tmp_path))
    consts = kernel._constants
    assert consts and kernel._fast_consts is not None
    for c, t in zip(consts, kernel._fast_consts):
        assert c.ctypes.data % ALIGNMENT == 0
        assert np.from_dlpack(t).ctypes.data == c.ctypes.data   # the TVM tensor: this memory


@pytest.mark.parametrize("aligned", [False, True])
def test_an_owned_constant_is_kept_only_when_writable_and_aligned(aligned: bool) -> None:
    raw = np.arange(64 * 4 + 1, dtype=np.float32)
    start = (-raw.ctypes.data // 4) % (ALIGNMENT // 4)
    good = raw[start:start + 64]
    assert good.ctypes.data % ALIGNMENT == 0
    assert _owned_constant(good, aligned) is good
    shifted = raw[start + 1:start + 65]
    frozen = good.copy()
    frozen.flags.writeable = False
    for c in (shifted, frozen, np.asfortranarray(good.reshape(8, 8))):
        kept = _owned_constant(c, aligned)
        assert kept is not c and kept.ctypes.data % ALIGNMENT == 0
        assert kept.flags.c_contiguous and kept.flags.writeable
        np.testing.assert_array_equal(kept, c)


@pytest.mark.parametrize("fork", ["1", "0"])
def test_forked_and_new_interpreter_workers_write_the_in_process_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fork: str) -> None:
    monkeypatch.setenv("RELAY_TVM_FORK", fork)
    K.shutdown_workers()
    TWINS.clear()
    reqs = _requests(seed=5)
    here = KernelCache(tmp_path / "here")
    assert compile_many(reqs, cache=here, jobs=1) == 3
    TWINS.clear()
    there = KernelCache(tmp_path / "there")
    assert compile_many(reqs, cache=there, jobs=3) == 3
    (worker, _) = K._workers(2)
    assert isinstance(worker.proc, K._Forked) == (fork == "1" and K.FORK)
    here.flush()
    there.flush()

    def files(d: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.is_file()}

    assert files(tmp_path / "here") == files(tmp_path / "there")
    K.shutdown_workers()


def test_the_default_parallelism(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RELAY_TVM_JOBS", raising=False)
    monkeypatch.setattr(K.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(K.os, "getloadavg", lambda: (0.2, 0.2, 0.2))
    assert K._default_jobs(24) == 2                       # a free second CPU
    assert K._default_jobs(K.PARALLEL_FROM - 1) == 1      # too few kernels for a worker
    monkeypatch.setattr(K.os, "getloadavg", lambda: (2.3, 2.0, 2.0))
    assert K._default_jobs(24) == 1                       # both CPUs busy
    monkeypatch.setattr(K.os, "sched_getaffinity", lambda pid: set(range(32)), raising=False)
    monkeypatch.setattr(K.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert K._default_jobs(24) == K.MAX_DEFAULT_JOBS
    monkeypatch.setenv("RELAY_TVM_JOBS", "3")
    assert K._default_jobs(2) == 3                        # the variable decides


def test_a_twin_whose_library_cannot_be_written_compiles_for_the_jit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    TWINS.clear()
    (f1, t1), (f2, t2), _ = _requests(seed=7)
    first = compile_function(f1, t1, cache=KernelCache(tmp_path / "a"))

    def full_disk(lib: Any, so: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(KC, "_link", full_disk)
    second = compile_function(f2, t2, cache=KernelCache(tmp_path / "b"))
    assert second.schedule is not None
    assert any(step.startswith("link the kernel") for step, _ in second.schedule.refused)
    x = np.random.default_rng(2).standard_normal((1, 4, 9, 9)).astype("float32")
    h = first(x)
    assert isinstance(h, np.ndarray)
    np.testing.assert_allclose(second(h), _reference(h, _weights(7)["w2"]), rtol=1e-4,
                               atol=1e-4)


def test_a_request_no_worker_can_take_is_compiled_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    TWINS.clear()
    reqs = _requests(seed=9)
    spec = normalize_target(None)
    refused = kernel_key(*reqs[2], spec)
    payload = K._payload

    def unpicklable(func: Function, types: Sequence[Type], spec: Any, key: str,
                    directory: Path) -> bytes | None:
        return None if key == refused else payload(func, types, spec, key, directory)

    monkeypatch.setattr(K, "_payload", unpicklable)
    cache = KernelCache(tmp_path)
    assert compile_many(reqs, cache=cache, jobs=2) == 3
    assert all(cache.get(kernel_key(f, t, spec)) is not None for f, t in reqs)
