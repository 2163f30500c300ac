"""``nn.batch_matmul``: TVM's relation (transposes, batch broadcasting, ``?`` and symbolic
dims) and the reference against numpy's matmul."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.strategies.ops_batch_matmul import batch_matmul_call
from conformance.strategies.ops_nn import call_inputs
from semantics import ops
from semantics.errors import RelayRuntimeError, RelayTypeError
from semantics.ops.registry import OpPattern
from semantics.shapes import ANY, shape_var
from semantics.types import IncompleteType, TensorType

OP = ops.get("nn.batch_matmul")
b, m, n, k = (shape_var(s) for s in ("b", "m", "n", "k"))


def rel(x, y, **attrs):
    return OP.relation((x, y), OP.normalize_attrs(attrs))


def T(shape, dtype="float32"):
    return TensorType(tuple(shape), dtype)


def same(t, expected) -> bool:
    """Types are compared by shape and dtype (AST nodes have identity equality)."""
    return (isinstance(t, TensorType) and t.dtype == expected.dtype
            and len(t.shape) == len(expected.shape)
            and all(a is c if a is ANY or c is ANY else a == c
                    for a, c in zip(t.shape, expected.shape)))


def test_registration_follows_tvm():
    assert OP.pattern == OpPattern.OUT_ELEMWISE_FUSABLE and OP.num_inputs == 2
    assert OP.family == "nn" and OP.relation.name == "BatchMatmul"
    assert dict(OP.normalize_attrs({})) == {"out_dtype": "", "transpose_a": False,
                                            "transpose_b": True}


@pytest.mark.parametrize("ta, tb, xs, ys", [
    (False, True, (2, 3, 4), (2, 5, 4)),
    (False, False, (2, 3, 4), (2, 4, 5)),
    (True, True, (2, 4, 3), (2, 5, 4)),
    (True, False, (2, 4, 3), (2, 4, 5)),
])
def test_transposes_choose_the_layouts(ta, tb, xs, ys):
    out = rel(T(xs), T(ys), transpose_a=ta, transpose_b=tb)
    assert same(out, T((2, 3, 5)))


def test_batch_broadcasts_when_one_side_is_one():
    assert same(rel(T((1, 3, 4)), T((7, 5, 4))), T((7, 3, 5)))
    assert same(rel(T((7, 3, 4)), T((1, 5, 4))), T((7, 3, 5)))
    with pytest.raises(RelayTypeError, match="BatchMatmul"):
        rel(T((2, 3, 4)), T((3, 5, 4)))


def test_errors_name_the_relation():
    with pytest.raises(RelayTypeError, match="relation BatchMatmul failed.*reduction axis"):
        rel(T((2, 3, 4)), T((2, 5, 6)))
    with pytest.raises(RelayTypeError, match="3-d"):
        rel(T((3, 4)), T((2, 5, 4)))
    with pytest.raises(RelayTypeError, match="numeric"):
        rel(T((2, 3, 4), "bool"), T((2, 5, 4), "bool"))
    with pytest.raises(RelayTypeError, match="integer out_dtype"):
        rel(T((2, 3, 4)), T((2, 5, 4)), out_dtype="int32")
    with pytest.raises(RelayTypeError, match="bad attribute"):
        rel(T((2, 3, 4)), T((2, 5, 4)), transpose_c=True)


def test_any_and_symbolic_dims():
    assert same(rel(T((ANY, 3, 4)), T((2, 5, 4))), T((2, 3, 5)))
    assert same(rel(T((ANY, ANY, ANY)), T((ANY, ANY, ANY))), T((ANY, ANY, ANY)))
    out = rel(T((b, m, k)), T((1, n, k)))
    assert same(out, T((b, m, n)))
    assert same(rel(T((b, m, k)), T((b, n, k))), T((b, m, n)))
    with pytest.raises(RelayTypeError, match="reduction axis"):
        rel(T((b, m, k)), T((b, n, m)))
    assert rel(IncompleteType(), T((2, 5, 4))) is None


def test_out_dtype_and_integer_wrapping():
    x = np.full((1, 2, 3), 100, np.int8)
    y = np.full((1, 4, 3), 100, np.int8)
    wrapped = OP.reference(x, y)                   # 3 * 10000 = 30000 wraps in int8
    assert wrapped.dtype == np.int8 and (wrapped == 30000 % 256).all()
    wide = OP.reference(x, y, out_dtype="int32")
    assert wide.dtype == np.int32 and (wide == 30000).all()
    f = OP.reference(np.ones((2, 1, 3), np.float16), np.ones((1, 2, 3), np.float16),
                     out_dtype="float32")
    assert f.dtype == np.float32 and f.shape == (2, 1, 2) and (f == 3).all()


def test_ill_typed_run_time_call_is_a_runtime_error():
    with pytest.raises(RelayRuntimeError, match="BatchMatmul"):
        OP.reference(np.zeros((2, 3, 4), np.float32), np.zeros((2, 5, 6), np.float32))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_reference_matches_numpy(data):
    (xt, yt), attrs = data.draw(batch_matmul_call())
    x, y = data.draw(call_inputs("nn.batch_matmul", (xt, yt), attrs, True))
    got = OP.reference(x, y, **attrs)
    full = OP.normalize_attrs(attrs)
    a = np.swapaxes(x, 1, 2) if full["transpose_a"] else x
    c = np.swapaxes(y, 1, 2) if full["transpose_b"] else y
    out_dtype = np.dtype(full["out_dtype"] or xt.dtype)
    assert got.dtype == out_dtype
    batch = np.broadcast_shapes(x.shape[:1], y.shape[:1])     # 1 against 0 gives 0
    assert got.shape == (*batch, a.shape[1], c.shape[2])
    if out_dtype.kind in "iu":
        want = np.matmul(a.astype(np.int64), c.astype(np.int64)).astype(out_dtype)
        np.testing.assert_array_equal(got, want)
    else:
        want = np.matmul(a.astype(np.float64), c.astype(np.float64))
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=1e-2)
