"""Parallel loops that hand out their work by atomic claims (``backends.tvm.kernel.claims``).

The property that matters: every iteration of a rewritten parallel loop runs exactly once,
whatever the extent (constant or symbolic), the number of threads in TVM's pool, and the
order in which the threads arrive. A kernel that *adds one* to every element of its argument
would show a doubled or a skipped iteration as a 2 or a 0.
"""

from __future__ import annotations

import numpy as np
import pytest
import tvm
from hypothesis import given, settings
from hypothesis import strategies as st
from tvm import te
from tvm.script import tirx as T

from backends.tvm import build
from backends.tvm.kernel import claims
from backends.tvm.kernel.cache import KernelCache
from backends.tvm.target import Target

HOST = Target.host()
pytestmark = pytest.mark.skipif(not claims.applies(HOST),
                                reason="atomic claims are x86-64 only; this host keeps "
                                       "TVM's static split")


@T.prim_func
def _add_one(a_handle: T.handle) -> None:
    n = T.int32()
    a = T.match_buffer(a_handle, (n,), "int32")
    for i in T.parallel(n):
        a[i] = a[i] + 1


def _compile(mod: tvm.IRModule, pipeline: str) -> tvm.runtime.Module:
    return tvm.compile(mod, target=HOST.tvm(), tir_pipeline=pipeline)


@pytest.fixture(scope="module")
def add_one() -> tvm.runtime.Module:
    """The symbolic-extent kernel, compiled with claims."""
    return _compile(tvm.IRModule({"main": _add_one.with_attr("global_symbol", "add_one")}),
                    claims.pipeline())


@pytest.fixture(scope="module")
def pool():
    """Set TVM's pool to a number of threads; restored after the module's tests."""
    config = tvm.get_global_func("runtime.config_threadpool")
    before = tvm.get_global_func("runtime.NumThreads")()
    yield lambda threads: config(1, threads)
    config(1, before)


@settings(deadline=None, max_examples=60)
@given(n=st.integers(0, 700), threads=st.sampled_from([1, 2, 3, 5]))
def test_every_iteration_runs_exactly_once(add_one, pool, n: int, threads: int) -> None:
    pool(threads)
    for _ in range(5):
        a = tvm.runtime.tensor(np.zeros(n, "int32"))
        add_one["add_one"](a)
        got = a.numpy()
        assert np.array_equal(got, np.ones(n, "int32")), (
            f"n={n}, threads={threads}: iterations run {sorted(set(got.tolist()))} times")


def _scaled_kernel(rows: int) -> tvm.IRModule:
    """A scheduled two-stage kernel (a per-row temporary, like a convolution's tile), its
    row loop parallel: ``c = a * 2 + 1``."""
    from tvm import s_tir

    a = te.placeholder((rows, 24), name="a")
    b = te.compute((rows, 24), lambda i, j: a[i, j] * 2.0, name="b")
    c = te.compute((rows, 24), lambda i, j: b[i, j] + 1.0, name="c")
    func = te.create_prim_func([a, c]).with_attr("global_symbol", "scaled")
    sch = s_tir.Schedule(tvm.IRModule({"scaled": func}))
    sch.work_on("scaled")
    i, _ = sch.get_loops(sch.get_sblock("c"))
    sch.parallel(i)
    sch.compute_at(sch.get_sblock("b"), i)
    return sch.mod


@pytest.mark.parametrize("rows", [2, 3, 63, 64, 65, 257])
@pytest.mark.parametrize("threads", [1, 2, 4])
def test_a_constant_extent_kernel_computes_its_values(pool, rows: int, threads: int) -> None:
    lib = _compile(_scaled_kernel(rows), claims.pipeline())
    pool(threads)
    x = np.random.default_rng(rows).standard_normal((rows, 24)).astype("float32")
    for _ in range(10):
        out = tvm.runtime.tensor(np.full((rows, 24), np.nan, "float32"))
        lib["scaled"](tvm.runtime.tensor(x), out)
        np.testing.assert_array_equal(out.numpy(), x * 2 + 1)


def test_the_claim_is_one_locked_instruction_and_the_split_is_not_static() -> None:
    claimed = _compile(_scaled_kernel(100), claims.pipeline()).mod.inspect_source("asm")
    static = _compile(_scaled_kernel(100), "default").mod.inspect_source("asm")
    assert "lock" in claimed and "bts" in claimed
    assert "bts" not in static


def test_a_loop_of_one_iteration_becomes_serial() -> None:
    asm = _compile(_scaled_kernel(1), claims.pipeline()).mod.inspect_source("asm")
    assert "bts" not in asm and "TVMBackendParallelLaunch" not in asm


def test_the_target_record_switches_claims_off() -> None:
    off = HOST.replace(claims=False)
    assert HOST.claims and not off.claims
    assert off.key() != HOST.key()            # kernels of the two never share a cache entry
    assert Target.of({"claims": False}).claims is False
    assert claims.applies(HOST)
    assert not claims.applies(HOST.replace(mtriple="aarch64-linux-gnu"))


def test_a_model_built_either_way_gives_the_same_bits() -> None:
    """The claims change who runs an iteration, not what it computes."""
    text = """def @main(%x: Tensor[(1, 16, 20, 20), float32], %w: Tensor[(32, 16, 3, 3), float32],
                        %b: Tensor[(32), float32]) {
      nn.relu(nn.bias_add(nn.conv2d(%x, %w, padding=[1, 1], channels=32, kernel_size=[3, 3]),
                          %b))
    }"""
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((32, 16, 3, 3)).astype("float32"),
              "b": rng.standard_normal(32).astype("float32")}
    x = rng.standard_normal((1, 16, 20, 20)).astype("float32")
    outs = [np.asarray(build(text, params=params, target=t, cache=KernelCache(disk=False),
                             executor="graph")(x))
            for t in (HOST, HOST.replace(claims=False))]
    np.testing.assert_array_equal(outs[0], outs[1])
