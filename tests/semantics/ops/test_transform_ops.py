"""The numpy references of the transform family against independent computations.

reshape against the table of TVM's documentation; split, strided_slice and
take (every mode) against explicit indexing; layout_transform round trips and
its element mapping; the remaining operators against numpy's definitions.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.strategies.ops_nn import LAYOUT_PAIRS, fast_array, layout_transform_call
from semantics import ops
from semantics.errors import RelayRuntimeError, RelayTypeError
from semantics.types import TensorType

RNG = np.random.default_rng(99)
X234 = np.arange(24, dtype="float32").reshape(2, 3, 4)


def ref(name, *args, **attrs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return ops.get(name).reference(*args, **attrs)


# --- reshape ------------------------------------------------------------------------------------

# The examples of TVM's reshape documentation (data.shape = (2, 3, 4) unless noted).
TVM_RESHAPE_TABLE = [
    ((2, 3, 4), (4, 0, 2), (4, 3, 2)),
    ((2, 3, 4), (2, 0, 0), (2, 3, 4)),
    ((2, 3, 4), (6, 1, -1), (6, 1, 4)),
    ((2, 3, 4), (3, -1, 8), (3, 1, 8)),
    ((2, 3, 4), (-1,), (24,)),
    ((2, 3, 4), (-2,), (2, 3, 4)),
    ((2, 3, 4), (2, -2), (2, 3, 4)),
    ((2, 3, 4), (-2, 1, 1), (2, 3, 4, 1, 1)),
    ((2, 3, 4), (-3, 4), (6, 4)),
    ((2, 3, 4, 5), (-3, -3), (6, 20)),
    ((2, 3, 4), (0, -3), (2, 12)),
    ((2, 3, 4), (-3, -2), (6, 4)),
    ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)),
    ((2, 3, 4), (2, -4, -1, 3, -2), (2, 1, 3, 4)),
]


@pytest.mark.parametrize("shape, newshape, expected", TVM_RESHAPE_TABLE)
def test_reshape_codes_from_the_tvm_documentation(shape, newshape, expected):
    x = np.arange(int(np.prod(shape)), dtype="int16").reshape(shape)
    got = ref("reshape", x, newshape=list(newshape))
    assert got.shape == expected and got.dtype == np.int16
    np.testing.assert_array_equal(got.ravel(), x.ravel())       # row-major order kept


def test_reshape_allowzero_and_empty_tensors():
    x = np.zeros((0, 3), "float32")
    assert ref("reshape", x, newshape=[3, 0], allowzero=True).shape == (3, 0)
    assert ref("reshape", x, newshape=[0, 3]).shape == (0, 3)          # 0 copies the 0
    assert ref("reshape", np.zeros((2, 0)), newshape=[-1, 2]).shape == (0, 2)
    op = ops.get("reshape")
    with pytest.raises(RelayTypeError, match="cannot infer -1"):   # 0 elements into 0 * ?
        op.relation((TensorType((0, 3), "float32"),),
                    op.normalize_attrs({"newshape": [0, -1], "allowzero": True}))


@pytest.mark.parametrize("newshape, why", [
    ([5, 5], "are different"), ([-1, -1], "at most one"), ([2, 3, -3], "-3"),
    ([-5, 24], "unsupported"), ([24, 1, 1, 0], "no input dimension"),
    ([-4, 5, -1, 4], "cannot be split"), ([-4, -1, -1, 24], "both be -1"), ([-4, 2], "-4"),
    ([5, -1], "do not divide"),
])
def test_reshape_invalid_codes(newshape, why):
    op = ops.get("reshape")
    with pytest.raises(RelayTypeError, match=why):
        op.relation((TensorType((2, 3, 4), "float32"),), op.normalize_attrs({"newshape":
                                                                              newshape}))


def test_reshape_like_with_ranges_from_the_tvm_documentation():
    data = np.arange(24, dtype="float32").reshape(1, 2, 3, 4)
    like = np.zeros((6, 2, 2, 3), "int8")
    got = ref("reshape_like", data, like, lhs_begin=1, rhs_end=3)
    assert got.shape == (1, 6, 2, 2) and got.dtype == np.float32
    np.testing.assert_array_equal(got.ravel(), data.ravel())
    assert ref("reshape_like", data, np.zeros((4, 6), "bool")).shape == (4, 6)
    got = ref("reshape_like", data, np.zeros((6, 4)), lhs_begin=1, lhs_end=-1, rhs_begin=0,
              rhs_end=1)
    assert got.shape == (1, 6, 4)


# --- axis manipulation ---------------------------------------------------------------------------

@pytest.mark.parametrize("axes", [None, [0, 1, 2], [2, 0, 1], [-1, -3, 1]])
def test_transpose_by_index_mapping(axes):
    got = ref("transpose", X234, axes=axes)
    perm = [a % 3 for a in axes] if axes is not None else [2, 1, 0]
    assert got.shape == tuple(X234.shape[p] for p in perm)
    for idx in itertools.product(*(range(d) for d in got.shape)):
        src = [0, 0, 0]
        for out_axis, in_axis in enumerate(perm):
            src[in_axis] = idx[out_axis]
        assert got[idx] == X234[tuple(src)]


@pytest.mark.parametrize("axis, num, expected", [
    (0, 1, (1, 2, 3, 4)), (3, 1, (2, 3, 4, 1)), (-1, 2, (2, 3, 4, 1, 1)), (-4, 1, (1, 2, 3, 4)),
    (1, 0, (2, 3, 4)), (2, 2, (2, 3, 1, 1, 4)),
])
def test_expand_dims(axis, num, expected):
    got = ref("expand_dims", X234, axis=axis, num_newaxis=num)
    assert got.shape == expected
    np.testing.assert_array_equal(got.ravel(), X234.ravel())


@pytest.mark.parametrize("axis, expected", [
    (None, (3, 4)), ([0], (3, 1, 4)), ([-2], (1, 3, 4)), ([0, 2], (3, 4)), ([], (1, 3, 1, 4)),
])
def test_squeeze(axis, expected):
    x = np.arange(12, dtype="int8").reshape(1, 3, 1, 4)
    got = ref("squeeze", x, axis=axis)
    assert got.shape == expected
    np.testing.assert_array_equal(got.ravel(), x.ravel())
    assert ref("squeeze", np.ones((1, 1), "bool")).shape == ()


# --- concatenate, stack, split -------------------------------------------------------------------

def test_concatenate_takes_a_tuple_and_joins_along_axis():
    a = np.arange(6, dtype="int32").reshape(2, 3)
    b = np.arange(6, 10, dtype="int32").reshape(2, 2)
    got = ref("concatenate", (a, b), axis=1)
    assert got.shape == (2, 5)
    for i, j in itertools.product(range(2), range(5)):
        assert got[i, j] == (a[i, j] if j < 3 else b[i, j - 3])
    got = ref("concatenate", (a, a, a))
    assert got.shape == (6, 3) and (got[4] == a[0]).all()
    assert ref("concatenate", (a,), axis=-1).shape == (2, 3)


def test_stack():
    a, b = np.zeros((2, 3), "float16"), np.ones((2, 3), "float16")
    for axis, shape in ((0, (2, 2, 3)), (1, (2, 2, 3)), (2, (2, 3, 2)), (-1, (2, 3, 2))):
        got = ref("stack", (a, b), axis=axis)
        assert got.shape == shape and got.dtype == np.float16
        np.testing.assert_array_equal(np.take(got, 1, axis=axis), b)


def test_split_sections_and_indices_return_tuples():
    x = np.arange(24, dtype="int64").reshape(6, 4)
    parts = ref("split", x, indices_or_sections=3)
    assert isinstance(parts, tuple) and len(parts) == 3
    for i, p in enumerate(parts):
        np.testing.assert_array_equal(p, x[2 * i:2 * i + 2])
    parts = ref("split", x, indices_or_sections=[1, 3], axis=1)
    assert [p.shape for p in parts] == [(6, 1), (6, 2), (6, 1)]
    np.testing.assert_array_equal(parts[1], x[:, 1:3])
    parts = ref("split", x, indices_or_sections=[], axis=-1)
    assert len(parts) == 1 and parts[0].shape == (6, 4)
    assert [p.shape for p in ref("split", np.zeros(0), indices_or_sections=2)] == [(0,), (0,)]


# --- take ----------------------------------------------------------------------------------------

def naive_take_index(i: int, n: int, mode: str) -> int:
    if mode == "clip":
        return min(max(i, 0), n - 1)
    if mode == "wrap":
        return i % n
    assert 0 <= i < n
    return i


@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("idx_dtype", ["int32", "int8", "uint8", "int64", "uint64"])
def test_take_modes_by_hand(mode, idx_dtype):
    x = np.arange(12, dtype="float32").reshape(3, 4)
    raw = [0, 3, 5, -1, -7, 13, 2] if np.dtype(idx_dtype).kind == "i" else [0, 3, 5, 13, 255]
    idx = np.array(raw, dtype=idx_dtype)
    got = ref("take", x, idx, axis=1, mode=mode)
    assert got.shape == (3, len(raw))
    for r, j in itertools.product(range(3), range(len(raw))):
        assert got[r, j] == x[r, naive_take_index(int(idx[j]), 4, mode)]
    flat = ref("take", x, idx, mode=mode)
    assert flat.shape == (len(raw),)
    for j in range(len(raw)):
        assert flat[j] == x.ravel()[naive_take_index(int(idx[j]), 12, mode)]


def test_take_huge_uint64_indices_keep_their_mode():
    x = np.arange(5, dtype="int32")
    idx = np.array([2 ** 64 - 1, 2 ** 63 + 3], dtype="uint64")
    np.testing.assert_array_equal(ref("take", x, idx, mode="clip"), [4, 4])
    np.testing.assert_array_equal(ref("take", x, idx, mode="wrap"),
                                  [(2 ** 64 - 1) % 5, (2 ** 63 + 3) % 5])


def test_take_default_is_clip_and_fast_traps_out_of_range():
    x = np.arange(4, dtype="int32")
    np.testing.assert_array_equal(ref("take", x, np.array([9, -2], "int32")), [3, 0])
    np.testing.assert_array_equal(ref("take", x, np.array([[3, 0]], "int32"), mode="fast"),
                                  [[3, 0]])
    with pytest.raises(RelayRuntimeError, match="out of range"):
        ops.get("take").reference(x, np.array([4], "int32"), mode="fast")
    with pytest.raises(RelayRuntimeError, match="out of range"):
        ops.get("take").reference(x, np.array([-1], "int32"), mode="fast")
    with pytest.raises(RelayRuntimeError, match="empty"):
        ops.get("take").reference(np.zeros((0,), "int32"), np.array([0], "int32"))
    assert ref("take", np.zeros((0,), "int32"), np.zeros((0,), "int32")).shape == (0,)


def test_take_batch_dims_by_hand():
    x = RNG.integers(0, 100, size=(2, 3, 4)).astype("int32")
    idx = np.array([[0, 3], [2, 1]], dtype="int32")
    got = ref("take", x, idx, axis=2, batch_dims=1)
    assert got.shape == (2, 3, 2)
    for b, i, j in itertools.product(range(2), range(3), range(2)):
        assert got[b, i, j] == x[b, i, idx[b, j]]
    got = ref("take", x, idx, axis=-2, batch_dims=-1)      # batch_dims -1 + 2 = 1
    for b, j, r in itertools.product(range(2), range(2), range(4)):
        assert got[b, j, r] == x[b, min(idx[b, j], 2), r]


# --- strided_slice -------------------------------------------------------------------------------

def test_strided_slice_examples_from_the_tvm_documentation():
    x = np.array([[1, 4, 7, 10], [2, 5, 8, 11], [3, 6, 9, 12]], dtype="float32")
    got = ref("strided_slice", x, begin=[0, 1], end=[2, 4], strides=[1, 1])
    np.testing.assert_array_equal(got, [[4, 7, 10], [5, 8, 11]])
    y = np.arange(1, 9, dtype="float32").reshape(2, 2, 2)
    np.testing.assert_array_equal(ref("strided_slice", y, begin=[0, 0], end=[2, 2]), y)


@settings(max_examples=150, deadline=None)
@given(shape=st.lists(st.integers(0, 6), min_size=1, max_size=3), data=st.data())
def test_strided_slice_matches_python_slices(shape, data):
    """With explicit bounds TVM's clamping is Python's slice semantics (non-reversed ranges)."""
    x = np.arange(int(np.prod(shape)), dtype="int32").reshape(shape)
    begin, end, strides, slices = [], [], [], []
    for d in shape:
        s = data.draw(st.sampled_from((1, 2, 3, -1, -2)))
        b, e = data.draw(st.integers(-d - 3, d + 3)), data.draw(st.integers(-d - 3, d + 3))
        rb, re_, _ = slice(b, e, s).indices(d)
        if (s > 0 and rb > re_) or (s < 0 and re_ > rb):
            b, e = e, b
        begin.append(b)
        end.append(e)
        strides.append(s)
        slices.append(slice(b, e, s))
    got = ref("strided_slice", x, begin=begin, end=end, strides=strides)
    np.testing.assert_array_equal(got, x[tuple(slices)])


def test_strided_slice_tvm_defaults_axes_and_size_mode():
    x = np.arange(20, dtype="int32").reshape(4, 5)
    # a missing end with a negative stride stops before index 0 (TVM's default end 0)
    np.testing.assert_array_equal(ref("strided_slice", x, begin=[None], end=[None],
                                      strides=[-1]), x[3:0:-1])
    # begin None with a negative stride starts at the last element
    np.testing.assert_array_equal(ref("strided_slice", x, begin=[None, 1], end=[1, None],
                                      strides=[-1, 2]), x[:1:-1, 1::2])
    # fewer bounds than dims: the remaining axes are whole
    np.testing.assert_array_equal(ref("strided_slice", x, begin=[1], end=[3]), x[1:3])
    np.testing.assert_array_equal(ref("strided_slice", x, begin=[1, 1], end=[3, 5],
                                      strides=[2]), x[1:3:2, 1:5])
    # axes select the sliced dims
    np.testing.assert_array_equal(ref("strided_slice", x, begin=[-2], end=[5], axes=[1]),
                                  x[:, 3:5])
    # size mode: end holds sizes, -1 means to the end, strides are ignored
    np.testing.assert_array_equal(ref("strided_slice", x, begin=[1, 2], end=[2, -1],
                                      strides=[3, 3], slice_mode="size"), x[1:3, 2:])
    np.testing.assert_array_equal(ref("strided_slice", x, begin=[-1], end=[1],
                                      slice_mode="size"), x[3:4])
    op = ops.get("strided_slice")
    with pytest.raises(RelayTypeError, match="past end"):
        op.relation((TensorType((4,), "int32"),),
                    op.normalize_attrs({"begin": [1], "end": [3], "strides": [-1]}))


# --- tile, repeat, reverse, broadcasting ---------------------------------------------------------

@pytest.mark.parametrize("shape, reps", [((2, 3), [2, 1]), ((2, 3), [3]), ((3,), [2, 2]),
                                         ((), [2]), ((2,), [])])
def test_tile_matches_numpy(shape, reps):
    x = np.arange(int(np.prod(shape)), dtype="uint8").reshape(shape)
    got = ref("tile", x, reps=reps)
    np.testing.assert_array_equal(got, np.tile(x, reps))
    assert got.dtype == np.uint8


def test_repeat_and_reverse_by_index_mapping():
    got = ref("repeat", X234, repeats=2, axis=1)
    assert got.shape == (2, 6, 4)
    for i, j, q in itertools.product(range(2), range(6), range(4)):
        assert got[i, j, q] == X234[i, j // 2, q]
    got = ref("reverse", X234, axis=-1)
    for i, j, q in itertools.product(range(2), range(3), range(4)):
        assert got[i, j, q] == X234[i, j, 3 - q]


def test_broadcast_to_and_like():
    x = np.array([[1], [2]], dtype="int8")
    got = ref("broadcast_to", x, shape=[3, 2, 4])
    assert got.shape == (3, 2, 4) and got.dtype == np.int8
    for a, b, c in itertools.product(range(3), range(2), range(4)):
        assert got[a, b, c] == x[b, 0]
    got = ref("broadcast_to_like", x, np.zeros((2, 5), "int8"))
    assert got.shape == (2, 5) and (got[1] == 2).all()
    got.flags.writeable = True           # a fresh array, not a read-only broadcast view


def test_collapse_sum_like_by_hand_and_wrapping():
    x = RNG.integers(-50, 50, size=(2, 3, 4)).astype("int32")
    got = ref("collapse_sum_like", x, np.zeros((3, 1), "int32"))
    assert got.shape == (3, 1)
    for j in range(3):
        assert got[j, 0] == sum(int(x[i, j, q]) for i in range(2) for q in range(4))
    big = np.full((4,), 100, dtype="int8")
    assert int(ref("collapse_sum_like", big, np.zeros((), "int8"))) == (400 + 128) % 256 - 128
    same = ref("collapse_sum_like", x, np.zeros((2, 3, 4), "int32"))
    np.testing.assert_array_equal(same, x)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "float32"])
def test_shape_of(dtype):
    got = ref("shape_of", np.zeros((2, 0, 300), "bool"), dtype=dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == (3,)
    expected = [2, 0, 300 if dtype != "uint8" else 300 % 256]
    assert got.tolist() == expected
    assert ref("shape_of", np.float32(1.0)).shape == (0,)


# --- layout_transform ----------------------------------------------------------------------------

def test_layout_transform_nchw_to_nchw4c_element_mapping():
    x = RNG.standard_normal((2, 8, 3, 5)).astype("float32")
    got = ref("layout_transform", x, src_layout="NCHW", dst_layout="NCHW4c")
    assert got.shape == (2, 2, 3, 5, 4)
    for n, C, hh, ww, c in itertools.product(range(2), range(2), range(3), range(5), range(4)):
        assert got[n, C, hh, ww, c] == x[n, C * 4 + c, hh, ww]


def test_layout_transform_nchw_nhwc():
    x = RNG.standard_normal((2, 3, 4, 5)).astype("float32")
    got = ref("layout_transform", x, src_layout="NCHW", dst_layout="NHWC")
    assert got.shape == (2, 4, 5, 3)
    for n, c, hh, ww in itertools.product(range(2), range(3), range(4), range(5)):
        assert got[n, hh, ww, c] == x[n, c, hh, ww]


@pytest.mark.parametrize("a, b", [("NCHW", "NCHW4c"), ("NCHW", "NHWC"), ("NHWC", "NCHW2c"),
                                  ("NCHW4c", "NCHW2c"), ("OIHW", "OIHW2i4o")])
def test_layout_transform_round_trips(a, b):
    from semantics.ops.layouts import parse_layout

    sizes = {"N": 2, "C": 8, "H": 3, "W": 2, "O": 8, "I": 4}
    axes = parse_layout("t", a)
    block = {x.upper(): f for x, f in axes if x.islower()}
    shape = [f if x.islower() else sizes[x] // block.get(x, 1) for x, f in axes]
    x = RNG.integers(-100, 100, size=shape).astype("int16")
    there = ref("layout_transform", x, src_layout=a, dst_layout=b)
    back = ref("layout_transform", there, src_layout=b, dst_layout=a)
    np.testing.assert_array_equal(back, x)
    assert there.size == x.size


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_layout_transform_round_trip_property(data):
    (t,), attrs = data.draw(layout_transform_call())
    x = data.draw(fast_array(t.dtype, t.shape, True))
    there = ref("layout_transform", x, **attrs)
    back = ref("layout_transform", there, src_layout=attrs["dst_layout"],
               dst_layout=attrs["src_layout"])
    np.testing.assert_array_equal(back, x)


def test_layout_pairs_strategy_covers_the_issue_conversions():
    pairs = {(a, b) for a, b in LAYOUT_PAIRS}
    assert {("NCHW", "NHWC"), ("NHWC", "NCHW"), ("NCHW", "NCHW{f}c"),
            ("NCHW{f}c", "NCHW")} <= pairs


def test_huge_broadcast_is_a_runtime_error_not_a_crash():
    with pytest.raises(RelayRuntimeError):
        ops.get("broadcast_to").reference(np.zeros(1), shape=[2 ** 31, 2 ** 31])
