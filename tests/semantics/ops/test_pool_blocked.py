"""The pools (and the pool gradients) in TVM's blocked layouts (``NCHW{c}c``).

The defining property: a blocked pool is ``layout_transform`` of the unblocked pool of the
unpacked input, bit for bit (every channel is pooled on its own; the reference unpacks,
pools in NCHW and packs), for every window, padding, ``ceil_mode``, block and dtype; the
relation gives the blocked shape and rejects a block extent that is not the factor.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from conformance.strategies.ops_nn import fast_array
from interpreter import evaluate
from semantics import ops, parse
from semantics.errors import RelayTypeError
from semantics.shapes import DimSolver, shape_var
from semantics.types import TensorType
from typechecker import infer


def relayout(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    return np.asarray(ops.get("layout_transform").reference(x, src_layout=src, dst_layout=dst))


def run(name: str, *args: np.ndarray, **attrs) -> np.ndarray:
    return np.asarray(ops.get(name).reference(*args, **attrs))


def is_tensor(t, shape, dtype: str = "float32") -> bool:
    return isinstance(t, TensorType) and tuple(t.shape) == tuple(shape) and t.dtype == dtype


def rel(name: str, *shapes, dtype: str = "float32", **attrs):
    op = ops.get(name)
    return op.relation(tuple(TensorType(s, dtype) for s in shapes), op.normalize_attrs(attrs),
                       DimSolver())


@st.composite
def pool_case(draw: st.DrawFn):
    """(x NCHW, op name, window attrs, data layout, output layout, dtype)."""
    block = draw(st.sampled_from((1, 2, 4, 8)))
    c = block * draw(st.integers(1, 3))
    k = draw(st.integers(1, 3))
    h, w = draw(st.integers(k, k + 4)), draw(st.integers(k, k + 4))
    dtype = draw(st.sampled_from(("float32", "float64", "int8", "int32")))
    name = draw(st.sampled_from(("nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
                                 "nn.global_max_pool2d")))
    attrs: dict = {}
    if name in ("nn.max_pool2d", "nn.avg_pool2d"):
        attrs = {"pool_size": [k, k], "strides": [draw(st.integers(1, 2))] * 2,
                 "padding": [draw(st.integers(0, k - 1))] * 2, "ceil_mode": draw(st.booleans())}
        if name == "nn.avg_pool2d":
            attrs["count_include_pad"] = draw(st.booleans())
    out = draw(st.sampled_from(("", "NCHW", f"NCHW{block}c", "NHWC")))
    x = draw(fast_array(dtype, (draw(st.integers(1, 2)), c, h, w), True))
    return x, name, attrs, f"NCHW{block}c", out, dtype


@settings(max_examples=80, deadline=None)
@given(case=pool_case())
def test_blocked_pool_is_the_transformed_unblocked_pool(case):
    x, name, attrs, layout, out_layout, _ = case
    final = out_layout or layout
    expected = relayout(run(name, x, **attrs), "NCHW", final)
    got = run(name, relayout(x, "NCHW", layout), layout=layout, out_layout=out_layout, **attrs)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    t = rel(name, relayout(x, "NCHW", layout).shape, dtype=str(x.dtype), layout=layout,
            out_layout=out_layout, **attrs)
    assert isinstance(t, TensorType) and t.shape == expected.shape


@settings(max_examples=40, deadline=None)
@given(case=pool_case(), seed=st.integers(0, 2 ** 16))
def test_blocked_pool_gradients_are_the_transformed_unblocked_ones(case, seed):
    x, name, attrs, layout, out_layout, dtype = case
    assume(name in ("nn.max_pool2d", "nn.avg_pool2d") and dtype.startswith("float"))
    grad_op = "nn.max_pool2d_grad" if name == "nn.max_pool2d" else "nn.avg_pool2d_grad"
    final = out_layout or layout
    pooled = run(name, x, **attrs)
    g = np.random.default_rng(seed).standard_normal(pooled.shape).astype(dtype)
    expected = relayout(run(grad_op, g, x, **attrs), "NCHW", layout)
    got = run(grad_op, relayout(g, "NCHW", final), relayout(x, "NCHW", layout), layout=layout,
              out_layout=out_layout, **attrs)
    np.testing.assert_array_equal(got, expected)
    if name == "nn.max_pool2d":
        v = np.random.default_rng(seed + 1).standard_normal(x.shape).astype(dtype)
        expected = relayout(run("nn.max_pool2d_pick", x, v, **attrs), "NCHW", final)
        got = run("nn.max_pool2d_pick", relayout(x, "NCHW", layout), relayout(v, "NCHW", layout),
                  layout=layout, out_layout=out_layout, **attrs)
        np.testing.assert_array_equal(got, expected)


def test_nchw8c_shapes_by_hand():
    x = (1, 8, 56, 56, 8)                                   # NCHW8c of (1, 64, 56, 56)
    t = rel("nn.max_pool2d", x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1],
            layout="NCHW8c")
    assert is_tensor(t, (1, 8, 28, 28, 8))
    t = rel("nn.max_pool2d", x, pool_size=[2, 2], strides=[2, 2], layout="NCHW8c",
            out_layout="NCHW")
    assert is_tensor(t, (1, 64, 28, 28))
    assert is_tensor(rel("nn.global_avg_pool2d", x, layout="NCHW8c"), (1, 8, 1, 1, 8))
    assert is_tensor(rel("nn.global_max_pool2d", x, layout="NCHW8c", out_layout="NCHW16c"),
                     (1, 4, 1, 1, 16))


def test_symbolic_batch():
    n = shape_var("n")
    t = rel("nn.avg_pool2d", (n, 2, 8, 8, 4), pool_size=[2, 2], strides=[2, 2],
            layout="NCHW4c")
    assert isinstance(t, TensorType) and t.shape == (n, 2, 4, 4, 4)


@pytest.mark.parametrize("shape, attrs, message", [
    ((1, 2, 4, 4, 8), {"layout": "NCHW4c"}, "block axis c"),       # block extent is not 4
    ((1, 8, 4, 4), {"layout": "NCHW4c"}, "must be 5-d"),
    ((1, 3, 4, 4, 2), {"layout": "NCHW2c", "out_layout": "NCHW4c"}, "not divisible"),
])
def test_relation_errors(shape, attrs, message):
    with pytest.raises(RelayTypeError, match=message):
        rel("nn.max_pool2d", shape, pool_size=[2, 2], **attrs)
    with pytest.raises(RelayTypeError, match=message):
        rel("nn.global_avg_pool2d", shape, **attrs)


@pytest.mark.parametrize("name", ["nn.max_pool2d", "nn.global_avg_pool2d", "nn.avg_pool2d_grad"])
@pytest.mark.parametrize("value", ["NCHW4h", "NCHWc", "NCH4c", "OIHW", "NCHW4c4c"])
def test_bad_layout_attributes(name, value):
    attrs = {"layout": value} if "global" in name else {"pool_size": [2, 2], "layout": value}
    with pytest.raises(RelayTypeError, match=f"bad attribute: {name} attribute 'layout'"):
        ops.get(name).normalize_attrs(attrs)


def test_text_format_type_checker_and_interpreter_run_a_blocked_pool():
    mod = parse("""
    def @main(%x: Tensor[(1, 8, 6, 6), float32]) {
      %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW4c");
      %1 = nn.max_pool2d(%0, pool_size=[3, 3], strides=[2, 2], padding=[1, 1], layout="NCHW4c");
      %2 = nn.global_avg_pool2d(%1, layout="NCHW4c", out_layout="NCHW");
      (%1, %2)
    }""")
    body = infer(mod)["main"].body
    assert is_tensor(body.fields[0].checked_type, (1, 2, 3, 3, 4))
    assert is_tensor(body.fields[1].checked_type, (1, 8, 1, 1))
    x = np.random.default_rng(5).standard_normal((1, 8, 6, 6)).astype("float32")
    pooled, mean = evaluate(mod, x)
    want = run("nn.max_pool2d", x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1])
    np.testing.assert_array_equal(np.asarray(pooled), relayout(want, "NCHW", "NCHW4c"))
    np.testing.assert_array_equal(np.asarray(mean), run("nn.global_avg_pool2d", want))
