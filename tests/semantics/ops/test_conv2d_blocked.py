"""``nn.conv2d`` in TVM's blocked layouts (``NCHW{c}c`` data/output, ``OIHW{i}i{o}o`` kernels).

The defining property: a blocked conv is ``layout_transform`` of the unblocked conv of the
unpacked inputs, bit for bit (the reference unpacks, convolves in NCHW and packs), for every
shape, block size, group count and dtype; the relation gives the blocked output shape and
rejects block extents that are not the factor and output channels the block does not divide.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.strategies.ops_nn import fast_array
from interpreter import evaluate
from semantics import ops, parse, pretty
from semantics.errors import RelayTypeError
from semantics.shapes import DimSolver, shape_var
from semantics.types import TensorType
from typechecker import infer


def relayout(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    return np.asarray(ops.get("layout_transform").reference(x, src_layout=src, dst_layout=dst))


def conv(x: np.ndarray, w: np.ndarray, **attrs) -> np.ndarray:
    return np.asarray(ops.get("nn.conv2d").reference(x, w, **attrs))


def rel(arg_types, **attrs):
    op = ops.get("nn.conv2d")
    return op.relation(tuple(arg_types), op.normalize_attrs(attrs), DimSolver())


def is_tensor(t, shape, dtype) -> bool:
    return isinstance(t, TensorType) and tuple(t.shape) == tuple(shape) and t.dtype == dtype


@st.composite
def blocked_case(draw: st.DrawFn):
    """(x NCHW, w OIHW, attrs, data/kernel/out layouts) with blocks that divide the channels."""
    groups = draw(st.sampled_from((1, 1, 2)))
    cb = draw(st.sampled_from((1, 2, 4)))                  # data channel block
    ib = draw(st.sampled_from((1, 2)))                      # kernel input block
    ob = draw(st.sampled_from((1, 2, 4)))                   # kernel output block
    outb = draw(st.sampled_from((0, 1, 2, 4)))              # output block (0: unblocked)
    depthwise = groups > 1 and draw(st.booleans())
    if depthwise:
        c = groups * cb * draw(st.integers(1, 2))
        groups, in_per_group, ib = c, 1, 1
        out_c = c * draw(st.sampled_from((1, 2)))
        if out_c % ob:
            ob = 1
    else:
        in_per_group = ib * draw(st.integers(1, 2))
        c = groups * in_per_group
        if c % cb:
            cb = 1
        out_c = groups * ob * draw(st.integers(1, 2))
        if out_c % groups:
            out_c *= groups
    if outb and out_c % outb:
        outb = 1
    n = draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    pad = draw(st.integers(0, 1))
    stride = draw(st.integers(1, 2))
    h, w = draw(st.integers(kh, kh + 3)), draw(st.integers(kw, kw + 3))
    dtype = draw(st.sampled_from(("float32", "int8", "int32")))
    x = draw(fast_array(dtype, (n, c, h, w), True))
    wt = draw(fast_array(dtype, (out_c, in_per_group, kh, kw), True))
    attrs = {"padding": [pad, pad], "strides": [stride, stride], "groups": groups}
    layouts = (f"NCHW{cb}c", f"OIHW{ib}i{ob}o", f"NCHW{outb}c" if outb else "NCHW")
    return x, wt, attrs, layouts


@settings(max_examples=60, deadline=None)
@given(case=blocked_case())
def test_blocked_conv_is_the_transformed_unblocked_conv(case):
    x, w, attrs, (dl, kl, ol) = case
    expected = relayout(conv(x, w, **attrs), "NCHW", ol)
    xb, wb = relayout(x, "NCHW", dl), relayout(w, "OIHW", kl)
    got = conv(xb, wb, data_layout=dl, kernel_layout=kl, out_layout=ol, **attrs)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    t = rel((TensorType(xb.shape, str(xb.dtype)), TensorType(wb.shape, str(wb.dtype))),
            data_layout=dl, kernel_layout=kl, out_layout=ol, **attrs)
    assert isinstance(t, TensorType) and t.shape == expected.shape


def test_nchw16c_shapes_by_hand():
    x = TensorType((1, 2, 8, 8, 16), "float32")       # NCHW16c of (1, 32, 8, 8)
    w = TensorType((4, 2, 3, 3, 16, 16), "float32")   # OIHW16i16o of (64, 32, 3, 3)
    t = rel((x, w), data_layout="NCHW16c", kernel_layout="OIHW16i16o", padding=[1, 1])
    assert is_tensor(t, (1, 4, 8, 8, 16), "float32")
    t = rel((x, w), data_layout="NCHW16c", kernel_layout="OIHW16i16o", out_layout="NCHW")
    assert is_tensor(t, (1, 64, 6, 6), "float32")
    t = rel((x, w), data_layout="NCHW16c", kernel_layout="OIHW16i16o", out_layout="NHWC8c")
    assert is_tensor(t, (1, 6, 6, 8, 8), "float32")


def test_symbolic_batch_and_outer_channels():
    n = shape_var("n")
    x = TensorType((n, 2, 8, 8, 4), "float32")
    w = TensorType((3, 2, 1, 1, 4, 4), "float32")
    t = rel((x, w), data_layout="NCHW4c", kernel_layout="OIHW4i4o")
    assert isinstance(t, TensorType) and t.shape == (n, 3, 8, 8, 4)


@pytest.mark.parametrize("args, attrs, message", [
    # the data's block axis is not the factor
    (((1, 2, 4, 4, 8), (2, 2, 1, 1, 4, 4)), {"data_layout": "NCHW4c",
                                              "kernel_layout": "OIHW4i4o"}, "block axis c"),
    # 8 data channels vs. 4 weight input channels
    (((1, 2, 4, 4, 4), (2, 1, 1, 1, 4, 4)), {"data_layout": "NCHW4c",
                                              "kernel_layout": "OIHW4i4o"}, "channels"),
    # 8 output channels not divisible by the output block 16
    (((1, 2, 4, 4, 4), (2, 2, 1, 1, 4, 4)), {"data_layout": "NCHW4c",
                                              "kernel_layout": "OIHW4i4o",
                                              "out_layout": "NCHW16c"}, "not divisible"),
    # rank does not match the layout
    (((1, 8, 4, 4), (8, 8, 1, 1)), {"data_layout": "NCHW4c"}, "must be 5-d"),
])
def test_relation_errors(args, attrs, message):
    with pytest.raises(RelayTypeError, match=message):
        rel(tuple(TensorType(s, "float32") for s in args), **attrs)


@pytest.mark.parametrize("name, value", [
    ("data_layout", "NCHW4h"), ("data_layout", "NCHWc"), ("data_layout", "NCHW4c4c"),
    ("data_layout", "OIHW"), ("kernel_layout", "OIHW4c"), ("kernel_layout", "NCHW"),
    ("out_layout", "NCH4c"), ("data_layout", "nchw"),
])
def test_bad_layout_attributes(name, value):
    with pytest.raises(RelayTypeError, match=f"bad attribute: nn.conv2d attribute '{name}'"):
        ops.get("nn.conv2d").normalize_attrs({name: value})


def test_blocked_layout_attributes_are_accepted():
    attrs = ops.get("nn.conv2d").normalize_attrs(
        {"data_layout": "NCHW16c", "kernel_layout": "OIHW16i16o", "out_layout": "NCHW8c"})
    assert attrs["kernel_layout"] == "OIHW16i16o"


def test_text_format_type_checker_and_interpreter_run_a_blocked_conv():
    mod = parse("""
    def @main(%x: Tensor[(1, 8, 4, 4), float32], %w: Tensor[(8, 8, 3, 3), float32]) {
      %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NCHW4c");
      %1 = layout_transform(%w, src_layout="OIHW", dst_layout="OIHW4i4o");
      %2 = nn.conv2d(%0, %1, padding=[1, 1], data_layout="NCHW4c", kernel_layout="OIHW4i4o");
      layout_transform(%2, src_layout="NCHW4c", dst_layout="NCHW")
    }""")
    body = infer(mod)["main"].body
    assert is_tensor(body.checked_type, (1, 8, 4, 4), "float32")
    assert is_tensor(body.args[0].checked_type, (1, 2, 4, 4, 4), "float32")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 8, 4, 4)).astype("float32")
    w = rng.standard_normal((8, 8, 3, 3)).astype("float32")
    np.testing.assert_array_equal(np.asarray(evaluate(mod, x, w)), conv(x, w, padding=[1, 1]))
    assert 'data_layout="NCHW4c"' in pretty(mod)
