"""Integer ``nn.conv2d`` / ``nn.dense`` on ``backends.tvm.build`` against the oracle.

The dtype triples of quantized programs — int8×int8→int32, int8×int8→int16 (a true int16
accumulator: the products and sums wrap at 16 bits) and int16×int16→int32 — with weights as
inputs and bound as parameters (then AlterOpLayout blocks the convolution and the conv
rule's register tile schedules its int32 accumulator), over small shapes drawn by
Hypothesis; and the realized requantize epilogue (``add 2**(k-1)``, ``right_shift``,
``clip``, ``cast`` to int8, ``relu``) fused into the convolution's kernel.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends.tvm import build
from backends.tvm.build import prepare
from interpreter import evaluate
from passes.fuse_ops import is_primitive
from semantics.expr import Call, Op
from semantics.visitor import post_order

TRIPLES = (("int8", "int32"), ("int8", "int16"), ("int16", "int32"))
SETTINGS = settings(max_examples=6, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max) + 1, shape).astype(dtype)


def _conv_text(dt: str, odt: str, c: int, o: int, hw: int, k: int, stride: int) -> str:
    pad = k // 2
    return (f"def @main(%x: Tensor[(1, {c}, {hw}, {hw}), {dt}], "
            f"%w: Tensor[({o}, {c}, {k}, {k}), {dt}]) {{\n"
            f"  nn.conv2d(%x, %w, strides=[{stride}, {stride}], padding=[{pad}, {pad}], "
            f"channels={o}, kernel_size=[{k}, {k}], out_dtype=\"{odt}\")\n}}")


@SETTINGS
@given(triple=st.sampled_from(TRIPLES), c=st.sampled_from((3, 8, 16)),
       o=st.sampled_from((8, 16)), hw=st.integers(3, 9), k=st.sampled_from((1, 3)),
       stride=st.integers(1, 2), bound=st.booleans(), seed=st.integers(0, 99))
def test_integer_conv2d_matches_the_oracle(triple, c, o, hw, k, stride, bound, seed):
    dt, odt = triple
    text = _conv_text(dt, odt, c, o, hw, k, stride)
    rng = np.random.default_rng(seed)
    x = _values(rng, (1, c, hw, hw), dt)
    w = _values(rng, (o, c, k, k), dt)
    want = evaluate(text, x, w)
    got = build(text, params={"w": w})(x) if bound else build(text)(x, w)
    assert got.dtype == np.dtype(odt)
    assert np.array_equal(got, want)


@SETTINGS
@given(triple=st.sampled_from(TRIPLES), rows=st.sampled_from((1, 4)),
       k=st.integers(1, 70), n=st.sampled_from((8, 16, 19)), bound=st.booleans(),
       seed=st.integers(0, 99))
def test_integer_dense_matches_the_oracle(triple, rows, k, n, bound, seed):
    dt, odt = triple
    text = (f"def @main(%x: Tensor[({rows}, {k}), {dt}], %w: Tensor[({n}, {k}), {dt}]) {{\n"
            f"  nn.dense(%x, %w, units={n}, out_dtype=\"{odt}\")\n}}")
    rng = np.random.default_rng(seed)
    x = _values(rng, (rows, k), dt)
    w = _values(rng, (n, k), dt)
    want = evaluate(text, x, w)
    got = build(text, params={"w": w})(x) if bound else build(text)(x, w)
    assert got.dtype == np.dtype(odt)
    assert np.array_equal(got, want)


def test_int16_accumulation_really_wraps_at_16_bits():
    text = _conv_text("int8", "int16", 16, 8, 4, 3, 1)
    x = np.full((1, 16, 4, 4), -128, np.int8)
    w = np.full((8, 16, 3, 3), -128, np.int8)
    got = build(text, params={"w": w})(x)
    exact = 16 * 9 * 128 * 128                     # the centre outputs' true sum
    assert int(got[0, 0, 1, 1]) == (exact + 2 ** 15) % 2 ** 16 - 2 ** 15
    assert np.array_equal(got, evaluate(text, x, w))


REQUANTIZE = """def @main(%x: Tensor[(1, 16, 10, 10), int8], %w: Tensor[(16, 16, 3, 3), int8],
          %b: Tensor[(16, 1, 1), int32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1], channels=16, kernel_size=[3, 3], out_dtype="int32");
  %1 = add(%0, %b);
  %2 = add(%1, 64);
  %3 = right_shift(%2, 7);
  %4 = clip(%3, a_min=-127f, a_max=127f);
  %5 = cast(%4, dtype="int8");
  nn.relu(%5)
}"""


def test_the_requantize_epilogue_fuses_into_the_conv_kernel_and_matches():
    rng = np.random.default_rng(3)
    x = _values(rng, (1, 16, 10, 10), "int8")
    w = _values(rng, (16, 16, 3, 3), "int8")
    b = rng.integers(-5000, 5000, (16, 1, 1)).astype("int32")
    params = {"w": w, "b": b}
    fused = prepare(REQUANTIZE, params, 3)
    kernels = [n for n in post_order(fused["main"]) if is_primitive(n)]
    with_conv = [k for k in kernels if any(
        isinstance(c, Call) and isinstance(c.op, Op) and c.op.name == "nn.conv2d"
        for c in post_order(k.body))]
    assert len(with_conv) == 1
    ops_in = {c.op.name for c in post_order(with_conv[0].body)
              if isinstance(c, Call) and isinstance(c.op, Op)}
    assert {"nn.conv2d", "add", "right_shift", "clip", "cast", "nn.relu"} <= ops_in
    got = build(REQUANTIZE, params=params)(x)
    assert got.dtype == np.int8
    assert np.array_equal(got, evaluate(REQUANTIZE, x, w, b))


@pytest.mark.parametrize("dt", ["int8", "int16"])
def test_a_bound_integer_conv_takes_the_register_tile_schedule(dt):
    from backends.tvm.sched import KernelInfo, pick_schedule
    from backends.tvm.target import host_target
    from backends.tvm.te_build import build_te

    text = _conv_text(dt, "int32", 16, 16, 8, 3, 1)
    fused = prepare(text, {"w": np.ones((16, 16, 3, 3), dt)}, 3)
    (prim,) = [n for n in post_order(fused["main"]) if is_primitive(n)
               and any(isinstance(c, Call) and isinstance(c.op, Op) and c.op.name == "nn.conv2d"
                       for c in post_order(n.body))]
    from tvm import te

    types = [p.type_annotation for p in prim.params]
    lowered = build_te(prim, types, host_target())
    func = te.create_prim_func([*lowered.inputs, *lowered.constants, *lowered.outputs])
    script = str(pick_schedule(KernelInfo(tuple(lowered.ops), prim, tuple(types),
                                          host_target()))(func).script())
    assert "T.parallel" in script or "T.vectorized" in script
    assert "conv2d_local" in script or '"local"' in script
