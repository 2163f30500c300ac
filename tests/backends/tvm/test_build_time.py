"""What makes ResNet-style builds fast (issue 35), without timings (those are in
``bench/build_time.py``):

* a warm build (a new cache on the directory of a cold one) compiles no kernel, not even
  partly: nothing is lowered, scheduled or handed to TVM, and it computes what the cold build
  computes;
* ``record_compile_times`` sees every kernel a cold build compiles in this process, with each
  step (lowering, schedule, ``tvm.compile``, machine code and link);
* the Winograd input transform reads contiguous vectors: its channel vector never crosses a
  block of the blocked data layout (a vector across ``NCHW8c`` blocks is a gather, one
  scalar load per lane, which tripled the kernel's compile time), at every vector width.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from test_sched_winograd import (
    _primitives,
    _scheduled,
    _winograd_calls,
    program,
)

from backends.tvm import build
from backends.tvm.build import prepare
from backends.tvm.kernel.cache import KernelCache
from backends.tvm.kernel.compile import record_compile_times
from backends.tvm.lower.nn import LayoutMap
from backends.tvm.lower.winograd import INPUT, INPUT_ROWS, INPUT_TILE
from backends.tvm.target import LANES, Target

WIDTHS = tuple(sorted({Target.host().lanes, *LANES}))
WINOGRAD = "nn.contrib_conv2d_winograd_without_weight_transform"


def _inputs(c: int, h: int, w: int) -> np.ndarray:
    return np.random.default_rng(3).standard_normal((1, c, h, w)).astype("float32")


def test_a_warm_build_compiles_no_kernel(tmp_path: Path) -> None:
    text, params = program(32, 32, 28, 28)          # a Winograd convolution at -O3
    cold_cache = KernelCache(tmp_path)
    with record_compile_times() as cold_times:
        cold = build(text, params, opt_level=3, executor="graph", cache=cold_cache, jobs=1)
    assert cold.report.kernels_compiled == cold.report.kernels_requested > 0
    assert any(WINOGRAD in t.ops for t in cold_times)
    cold_cache.flush()
    cold_cache_files = sorted(p.name for p in tmp_path.iterdir())
    warm_cache = KernelCache(tmp_path)
    with record_compile_times() as warm_times:
        warm = build(text, params, opt_level=3, executor="graph", cache=warm_cache, jobs=1)
    assert warm.report.kernels_compiled == 0 and warm_times == []
    assert warm.report.kernels_cached == cold.report.kernels_requested
    assert warm_cache.misses == 0
    assert "prepare (remembered)" in warm.report.phases
    x = _inputs(32, 28, 28)
    np.testing.assert_array_equal(cold(x), warm(x))
    warm_cache.flush()
    assert sorted(p.name for p in tmp_path.iterdir()) == cold_cache_files


def test_compile_times_name_every_step_of_every_kernel(tmp_path: Path) -> None:
    text, params = program(4, 4, 6, 6, epilogue="residual")
    cache = KernelCache(tmp_path)
    with record_compile_times() as outer:
        with record_compile_times() as times:
            exe = build(text, params, opt_level=3, executor="graph", cache=cache, jobs=1)
    assert not outer, "a kernel is recorded by the innermost recording only"
    assert len(times) == exe.report.kernels_compiled > 0
    for t in times:
        assert set(t.steps) == {"lower", "schedule", "tvm.compile", "codegen+link"}
        assert all(s >= 0.0 for s in t.steps.values())
        assert t.total == pytest.approx(sum(t.steps.values()))
        assert t.ops and t.shapes
    cache.flush()       # the cache writes in the background: a new cache reads what is on disk
    with record_compile_times() as none:
        build(text, params, opt_level=3, cache=KernelCache(tmp_path), jobs=1)
    assert none == [], "kernels from the cache are not compiled"


_VECTOR = re.compile(r"T\.vectorized\((\d+)\):\s*\n\s*with T\.sblock\(\"(\w+)\"\)")


@pytest.mark.parametrize("lanes", WIDTHS)
def test_the_input_transform_vector_stays_in_a_channel_block(lanes: int) -> None:
    target = Target.host().with_lanes(lanes)
    text, params = program(32, 32, 28, 28)     # 32 channels: a 16-lane vector would fit
    fused = prepare(text, params, 3, target)
    [call] = _winograd_calls(fused)
    block = LayoutMap(call.attrs["data_layout"]).factor.get("C")
    assert block, f"AlterOpLayout blocks the data: {call.attrs['data_layout']}"
    [prim] = [p for p in _primitives(fused) if _winograd_calls_in(p)]
    script = _scheduled(prim, target)
    assert script is not None
    widths = {name: int(n) for n, name in _VECTOR.findall(script)
              if name in (INPUT, INPUT_ROWS, INPUT_TILE)}
    assert set(widths) == {INPUT, INPUT_ROWS, INPUT_TILE}
    assert all(block % v == 0 for v in widths.values()), (block, widths)


def _winograd_calls_in(prim: object) -> bool:
    from semantics.expr import Call, Op
    from semantics.visitor import post_order

    return any(isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == WINOGRAD
               for n in post_order(prim.body))  # type: ignore[attr-defined]
