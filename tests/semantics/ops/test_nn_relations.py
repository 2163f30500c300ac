"""Relations of the nn and transform families.

* relation soundness (per operator, Hypothesis): on random valid calls the
  numpy reference returns exactly the dtype and shape the relation infers
  (tuples fieldwise), with no numpy warning; random invalid calls are rejected
  with ``RelayTypeError`` by ``normalize_attrs`` or the relation, never another
  exception;
* symbolic dims: replacing concrete dims by shape variables (or ``?``) gives a
  type that agrees with the concrete one after substitution; hand-checked
  SymPy results (Concatenate 2*n, the Conv2D floor expression, Dense batch,
  Reshape -1, Split, LayoutTransform), the solver hook, unknown arguments;
* completeness: every nn/transform operator has a doc line, a named relation,
  TVM's pattern, and strategies covering it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sympy
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from conformance.strategies.ops import (
    INPUTS,
    INVALID_CALLS,
    VALID_CALLS,
    covered_ops,
    op_call_args,
    op_invalid_call_args,
)
from conformance.strategies.ops_nn import call_inputs
from semantics import ops
from semantics.errors import RelayTypeError
from semantics.expr import Attrs
from semantics.ops.registry import OpPattern, Relation, coerce_attr
from semantics.shapes import ANY, DimSolver, shape_var
from semantics.types import IncompleteType, TensorType, TupleType, Type, TypeVar

FAMILIES = ("nn", "transform")
MY_OPS = sorted(name for name in ops.list_ops() if ops.get(name).family in FAMILIES)

EXPECTED_OPS = {
    "nn.relu", "nn.leaky_relu", "nn.softmax", "nn.log_softmax", "nn.dense", "nn.batch_matmul",
    "nn.bias_add", "nn.batch_norm", "nn.dropout", "nn.batch_flatten", "nn.conv2d", "nn.max_pool2d",
    "nn.avg_pool2d", "nn.global_avg_pool2d", "nn.global_max_pool2d", "nn.pad",
    "reshape", "reshape_like", "transpose", "expand_dims", "squeeze", "concatenate", "stack",
    "split", "take", "strided_slice", "tile", "repeat", "reverse", "broadcast_to",
    "broadcast_to_like", "collapse_sum_like", "shape_of", "layout_transform",
    "nn.contrib_conv2d_winograd_weight_transform",
    "nn.contrib_conv2d_winograd_without_weight_transform",
}

# TVM's TOpPattern of each operator (python/tvm/relay/op/nn/_nn.py, _transform.py, C++ regs).
TVM_PATTERNS = {
    "nn.relu": OpPattern.ELEMWISE, "nn.leaky_relu": OpPattern.ELEMWISE,
    "nn.softmax": OpPattern.OUT_ELEMWISE_FUSABLE, "nn.log_softmax": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.dense": OpPattern.OUT_ELEMWISE_FUSABLE, "nn.bias_add": OpPattern.BROADCAST,
    "nn.batch_matmul": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.batch_norm": OpPattern.OPAQUE, "nn.dropout": OpPattern.OPAQUE,
    "nn.batch_flatten": OpPattern.INJECTIVE, "nn.conv2d": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.max_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.avg_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.global_avg_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.global_max_pool2d": OpPattern.OUT_ELEMWISE_FUSABLE, "nn.pad": OpPattern.INJECTIVE,
    "reshape": OpPattern.INJECTIVE, "reshape_like": OpPattern.INJECTIVE,
    "transpose": OpPattern.INJECTIVE, "expand_dims": OpPattern.BROADCAST,
    "squeeze": OpPattern.INJECTIVE, "concatenate": OpPattern.INJECTIVE,
    "stack": OpPattern.INJECTIVE, "split": OpPattern.INJECTIVE, "take": OpPattern.INJECTIVE,
    "strided_slice": OpPattern.INJECTIVE, "tile": OpPattern.BROADCAST,
    "repeat": OpPattern.BROADCAST, "reverse": OpPattern.INJECTIVE,
    "broadcast_to": OpPattern.BROADCAST, "broadcast_to_like": OpPattern.BROADCAST,
    "collapse_sum_like": OpPattern.COMM_REDUCE, "shape_of": OpPattern.OPAQUE,
    "layout_transform": OpPattern.INJECTIVE,
    "nn.contrib_conv2d_winograd_weight_transform": OpPattern.OUT_ELEMWISE_FUSABLE,
    "nn.contrib_conv2d_winograd_without_weight_transform": OpPattern.OUT_ELEMWISE_FUSABLE,
}

n, m, h, w, k = (shape_var(s) for s in ("n", "m", "h", "w", "k"))


def T(shape, dtype="float32") -> TensorType:
    return TensorType(tuple(shape), dtype)


def rel(name: str, arg_types, solver: DimSolver | None = None, **attrs) -> Type | None:
    op = ops.get(name)
    norm = op.normalize_attrs(attrs)
    if solver is None:
        return op.relation(tuple(arg_types), norm)
    return op.relation(tuple(arg_types), norm, solver)


def same_dim(a, b) -> bool:
    if a is ANY or b is ANY:
        return a is b
    return sympy.simplify(sympy.sympify(a) - sympy.sympify(b)) == 0


def same_shape(t: Type, expected) -> bool:
    assert isinstance(t, TensorType)
    return len(t.shape) == len(expected) and all(same_dim(a, b) for a, b in
                                                  zip(t.shape, expected, strict=True))


def assert_value_has_type(value, t: Type) -> None:
    if isinstance(t, TupleType):
        assert isinstance(value, tuple) and len(value) == len(t.fields)
        for v, f in zip(value, t.fields, strict=True):
            assert_value_has_type(v, f)
        return
    assert isinstance(t, TensorType)
    assert isinstance(value, np.ndarray), type(value)
    assert value.dtype.name == t.dtype
    assert value.shape == tuple(int(d) for d in t.shape)


# --- relation soundness ------------------------------------------------------------------------

def test_the_families_hold_exactly_the_issue_operators():
    assert set(MY_OPS) == EXPECTED_OPS


@pytest.mark.parametrize("name", MY_OPS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_relation_soundness(name, data):
    """The reference's result has exactly the type the relation infers (no warnings)."""
    op = ops.get(name)
    arg_types, attrs = data.draw(op_call_args(name), label="call")
    out_type = op.relation(arg_types, op.normalize_attrs(attrs))
    assert out_type is not None
    values = data.draw(call_inputs(name, arg_types, attrs, data.draw(st.booleans())),
                       label="inputs")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = op.reference(*values, **attrs)
    assert_value_has_type(result, out_type)


@pytest.mark.parametrize("name", MY_OPS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_invalid_calls_are_type_errors(name, data):
    """Invalid argument types or attributes: RelayTypeError, never another exception."""
    op = ops.get(name)
    arg_types, attrs = data.draw(op_invalid_call_args(name), label="invalid call")
    with pytest.raises(RelayTypeError):
        op.relation(arg_types, op.normalize_attrs(attrs))


def _map_dims(t: Type, fn) -> Type:
    if isinstance(t, TupleType):
        return TupleType(tuple(_map_dims(f, fn) for f in t.fields))
    assert isinstance(t, TensorType)
    return TensorType(tuple(fn(d) for d in t.shape), t.dtype)


def _dims(t: Type) -> list:
    if isinstance(t, TupleType):
        return [d for f in t.fields for d in _dims(f)]
    assert isinstance(t, TensorType)
    return list(t.shape)


def _agrees(general: Type, concrete: Type, back: dict) -> bool:
    """Every dim of ``general`` is ``?`` or equals the concrete dim after substitution."""
    g, c = _dims(general), _dims(concrete)
    if len(g) != len(c):
        return False
    for a, b in zip(g, c, strict=True):
        if a is ANY:
            continue
        value = sympy.sympify(a).subs(back) if back else sympy.sympify(a)
        if not value.is_Integer or int(value) != b:
            return False
    return True


@pytest.mark.parametrize("name", MY_OPS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_symbolic_dims_agree_with_concrete(name, data):
    """Dims >= 2 replaced by shape variables (one per value): an error or an agreeing type."""
    op = ops.get(name)
    arg_types, attrs = data.draw(op_call_args(name), label="call")
    norm = op.normalize_attrs(attrs)
    concrete = op.relation(arg_types, norm)
    chosen = data.draw(st.frozensets(st.integers(2, 5)), label="values made symbolic")
    to_sym = {v: shape_var(f"d{v}") for v in chosen}
    general = tuple(_map_dims(t, lambda d: to_sym.get(d, d)) for t in arg_types)
    try:
        result = op.relation(general, norm)
    except RelayTypeError:
        reject()                    # conservative: unprovable equalities are errors
    assert result is not None
    assert _agrees(result, concrete, {s: v for v, s in to_sym.items()})


@pytest.mark.parametrize("name", MY_OPS)
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_any_dims_are_accepted_and_agree(name, data):
    """Dims replaced by ``?``: accepted (except squeeze without axis) and agreeing."""
    op = ops.get(name)
    arg_types, attrs = data.draw(op_call_args(name), label="call")
    norm = op.normalize_attrs(attrs)
    concrete = op.relation(arg_types, norm)
    flags = iter(data.draw(st.lists(st.booleans(), min_size=64, max_size=64), label="any"))
    general = tuple(_map_dims(t, lambda d: ANY if next(flags) else d) for t in arg_types)
    if name == "squeeze" and norm["axis"] is None and any(
            d is ANY for t in general for d in _dims(t)):
        with pytest.raises(RelayTypeError, match="static"):
            op.relation(general, norm)
        return
    result = op.relation(general, norm)
    assert result is not None and _agrees(result, concrete, {})


@pytest.mark.parametrize("name", MY_OPS)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_unknown_argument_defers(name, data):
    """A relation returns None while any argument (or tuple field) is not known yet."""
    op = ops.get(name)
    arg_types, attrs = data.draw(op_call_args(name), label="call")
    i = data.draw(st.integers(0, len(arg_types) - 1), label="which")
    hole = data.draw(st.sampled_from((IncompleteType(), TypeVar("A"))), label="hole")
    replaced = arg_types[i]
    if isinstance(replaced, TupleType) and data.draw(st.booleans()):
        j = data.draw(st.integers(0, len(replaced.fields) - 1))
        replaced = TupleType(replaced.fields[:j] + (hole,) + replaced.fields[j + 1:])
    else:
        replaced = hole
    new = arg_types[:i] + (replaced,) + arg_types[i + 1:]
    assert op.relation(new, op.normalize_attrs(attrs)) is None


# --- symbolic, hand-checked ---------------------------------------------------------------------

def test_concatenate_symbolic_doubles():
    out = rel("concatenate", [TupleType((T((n, 3)), T((n, 3))))], axis=0)
    assert same_shape(out, (2 * n, 3))
    assert isinstance(out.shape[1], int)


def test_concatenate_symbolic_other_axis_and_any():
    out = rel("concatenate", [TupleType((T((n, 3)), T((n, m))))], axis=1)
    assert same_shape(out, (n, 3 + m))
    out = rel("concatenate", [TupleType((T((ANY, 3)), T((2, 3))))], axis=0)
    assert out.shape == (ANY, 3)
    out = rel("concatenate", [TupleType((T((ANY, 2)), T((4, 2))))], axis=1)
    assert out.shape == (4, 4)          # ? unified with the informative 4


def test_concatenate_unprovable_dims_rejected_unless_the_solver_proves_them():
    args = [TupleType((T((n, 3)), T((m, 3))))]
    with pytest.raises(RelayTypeError, match="relation Concatenate failed"):
        rel("concatenate", args, axis=1)

    class Oracle(DimSolver):               # stands in for the type checker's Z3 fallback
        def undecided(self, a, b):
            return True

    out = rel("concatenate", args, Oracle(), axis=1)
    assert out is not None and out.shape[1] == 6


def test_conv2d_symbolic_output_is_the_floor_expression():
    out = rel("nn.conv2d", [T((n, 4, h, w)), T((8, 4, 3, 3))], strides=[2, 3], padding=[1, 0, 2, 1],
              dilation=[2, 1])
    pt, pl, pb, pr = 1, 0, 2, 1
    expect_h = sympy.floor((h + pt + pb - 2 * (3 - 1) - 1) / sympy.Integer(2)) + 1
    expect_w = sympy.floor((w + pl + pr - 1 * (3 - 1) - 1) / sympy.Integer(3)) + 1
    assert same_shape(out, (n, 8, expect_h, expect_w))
    assert out.shape[0] == n and out.shape[1] == 8
    # substituting concrete values gives the concrete relation's answer
    for hv, wv in ((5, 7), (9, 2), (12, 12)):
        conc = rel("nn.conv2d", [T((1, 4, hv, wv)), T((8, 4, 3, 3))], strides=[2, 3],
                   padding=[1, 0, 2, 1], dilation=[2, 1])
        assert int(out.shape[2].subs(h, hv)) == conc.shape[2]
        assert int(out.shape[3].subs(w, wv)) == conc.shape[3]


def test_conv2d_symbolic_same_padding_simplifies_to_the_input_dim():
    out = rel("nn.conv2d", [T((n, 3, h, w), "float32"), T((16, 3, 3, 3))], padding=[1, 1])
    assert out.shape == (n, 16, h, w)
    out = rel("nn.conv2d", [T((n, h, w, 3)), T((3, 3, 3, 16))], padding=[1],
              data_layout="NHWC", kernel_layout="HWIO")
    assert out.shape == (n, h, w, 16)


def test_conv2d_symbolic_channels_and_any():
    out = rel("nn.conv2d", [T((1, 2 * k, 5, 5)), T((4, k, 1, 1))], groups=2)
    assert out.shape == (1, 4, 5, 5)
    with pytest.raises(RelayTypeError, match="Conv2D"):
        rel("nn.conv2d", [T((1, n, 5, 5)), T((4, k, 1, 1))])
    out = rel("nn.conv2d", [T((ANY, ANY, ANY, 5)), T((4, 3, 3, 3))])
    assert out.shape == (ANY, 4, ANY, 3)


def test_pool_symbolic_ceil_mode():
    out = rel("nn.max_pool2d", [T((n, 3, h, h))], pool_size=[3, 3], strides=[2, 2],
              ceil_mode=True)
    # TVM: (H + pads - dilated_kernel + stride - 1) / stride + 1
    assert same_dim(out.shape[2], sympy.floor((h + 0 - 3 + 2 - 1) / sympy.Integer(2)) + 1)
    assert int(out.shape[2].subs(h, 6)) == 3


def test_dense_symbolic_batch():
    assert rel("nn.dense", [T((n, 4)), T((6, 4))]).shape == (n, 6)
    assert rel("nn.dense", [T((n, m, k)), T((6, k))], units=6).shape == (n, m, 6)
    assert rel("nn.dense", [T((ANY, 4)), T((ANY, 4))], units=6).shape == (ANY, 6)
    with pytest.raises(RelayTypeError, match="relation Dense failed"):
        rel("nn.dense", [T((n, k)), T((6, m))])


def test_reshape_symbolic():
    assert same_shape(rel("reshape", [T((n, 4))], newshape=[-1]), (4 * n,))
    assert same_shape(rel("reshape", [T((n, 4))], newshape=[2, -1]), (2, 2 * n))
    assert rel("reshape", [T((n, 4))], newshape=[0, -1]).shape == (n, 4)
    assert rel("reshape", [T((n, 3))], newshape=[2, -1]).shape == (2, ANY)   # 3n/2 inexact
    assert same_shape(rel("reshape", [T((n, m, 2))], newshape=[-3, 0]), (n * m, 2))
    assert rel("reshape", [T((ANY, 4))], newshape=[-1, 2]).shape == (ANY, 2)
    with pytest.raises(RelayTypeError, match="relation Reshape failed"):
        rel("reshape", [T((n,))], newshape=[6])          # n == 6 is not provable


def test_split_and_layout_transform_symbolic():
    out = rel("split", [T((2 * n, 3))], indices_or_sections=2)
    assert all(f.shape == (n, 3) for f in out.fields)
    out = rel("split", [T((n, 3))], indices_or_sections=2)
    assert all(f.shape == (ANY, 3) for f in out.fields)
    out = rel("split", [T((n,))], indices_or_sections=[1, 3])
    assert [f.shape for f in out.fields[:2]] == [(1,), (2,)]
    assert same_shape(out.fields[2], (n - 3,))
    out = rel("layout_transform", [T((n, 4 * k, h, w))], src_layout="NCHW",
              dst_layout="NCHW4c")
    assert out.shape == (n, k, h, w, 4)
    out = rel("layout_transform", [T((n, m, h, w))], src_layout="NCHW", dst_layout="NCHW4c")
    assert out.shape == (n, ANY, h, w, 4)
    out = rel("layout_transform", [T((n, k, h, w, 4))], src_layout="NCHW4c",
              dst_layout="NHWC")
    assert same_shape(out, (n, h, w, 4 * k))


def test_other_symbolic_relations():
    assert same_shape(rel("tile", [T((n, 2))], reps=[2, 3]), (2 * n, 6))
    assert same_shape(rel("repeat", [T((n,))], repeats=3, axis=0), (3 * n,))
    assert same_shape(rel("nn.pad", [T((n, 2)), T(())], pad_width=[[1, 2], [0, 0]]),
                      (n + 3, 2))
    assert same_shape(rel("nn.batch_flatten", [T((n, m, 3))]), (n, 3 * m))
    assert rel("squeeze", [T((n, 1))], axis=[1]).shape == (n,)
    with pytest.raises(RelayTypeError, match="static"):
        rel("squeeze", [T((n, 1))])
    with pytest.raises(RelayTypeError, match="relation Squeeze failed"):
        rel("squeeze", [T((n, 1))], axis=[0])
    assert rel("strided_slice", [T((n, 5))], begin=[0, 1], end=[None, 4]).shape == (n, 3)
    assert rel("strided_slice", [T((n, 5))], begin=[1], end=[3]).shape == (ANY, 5)
    assert rel("take", [T((n, 5)), T((m,), "int32")], axis=0).shape == (m, 5)
    assert rel("shape_of", [T((n, m))], dtype="int64").shape == (2,)
    assert rel("transpose", [T((n, m, 3))]).shape == (3, m, n)
    with pytest.raises(RelayTypeError, match="relation BroadcastTo failed"):
        rel("broadcast_to", [T((n, 1))], shape=[4, 5])
    assert rel("broadcast_to_like", [T((1, 3)), T((n, 3))]).shape == (n, 3)
    assert rel("collapse_sum_like", [T((n, 3)), T((3,))]).shape == (3,)
    bn = rel("nn.batch_norm", [T((n, k, 4, 4))] + [T((k,))] * 4)
    assert [f.shape for f in bn.fields] == [(n, k, 4, 4), (k,), (k,)]


def test_tuple_results_are_tuple_types():
    assert isinstance(rel("split", [T((4,))], indices_or_sections=2), TupleType)
    assert isinstance(rel("nn.dropout", [T((4,))]), TupleType)
    out = rel("nn.batch_norm", [T((2, 3))] + [T((3,))] * 4)
    assert isinstance(out, TupleType) and len(out.fields) == 3


# --- error messages and attributes --------------------------------------------------------------

@pytest.mark.parametrize("name, args, attrs, pattern", [
    ("nn.conv2d", [T((1, 4, 5, 5)), T((6, 3, 3, 3))], {}, "relation Conv2D failed"),
    ("nn.conv2d", [T((1, 4, 5, 5)), T((6, 4, 3, 3))], {"padding": [1, 1, 1]},
     "bad attribute"),
    ("nn.conv2d", [T((1, 4, 5, 5)), T((6, 4, 3, 3))], {"strides": [-1, 1]}, "bad attribute"),
    ("nn.conv2d", [T((1, 4, 5, 5)), T((3, 2, 3, 3))], {"groups": 2}, "groups 2 does not"),
    ("nn.conv2d", [T((1, 4, 2, 2)), T((6, 4, 3, 3))], {}, "exceeds the padded input"),
    ("nn.dense", [T((2, 3)), T((4, 5))], {}, "relation Dense failed"),
    ("nn.max_pool2d", [T((1, 1, 4, 4))], {}, "requires attribute 'pool_size'"),
    ("nn.softmax", [T((3,), "int32")], {}, "relation Softmax failed"),
    ("reshape", [T((2, 3))], {"newshape": [-1, -1]}, "at most one"),
    ("concatenate", [T((2, 3))], {}, "relation Concatenate failed"),
    ("layout_transform", [T((1, 6, 2, 2))], {"src_layout": "NCHW", "dst_layout": "NCHW4c"},
     "not divisible"),
    ("layout_transform", [T((1, 6, 2, 2))], {"src_layout": "NCHW", "dst_layout": "NCHX"},
     "bad attribute"),
    ("strided_slice", [T((4,))], {"begin": [3], "end": [1]}, "past end"),
    ("take", [T((4,)), T((2,), "float32")], {}, "indices must be integers"),
])
def test_error_messages(name, args, attrs, pattern):
    with pytest.raises(RelayTypeError, match=pattern):
        rel(name, args, **attrs)


def test_attrs_reach_relations_normalized():
    op = ops.get("nn.conv2d")
    norm = op.normalize_attrs({"padding": [1], "strides": 2})
    assert norm["padding"] == (1,) and norm["strides"] == (2,)
    assert norm["data_layout"] == "NCHW" and norm["out_dtype"] == "" and norm["groups"] == 1
    assert isinstance(norm, Attrs)


# --- completeness --------------------------------------------------------------------------------

@pytest.mark.parametrize("name", MY_OPS)
def test_operator_is_complete(name):
    op = ops.get(name)
    assert op.doc and op.doc.strip().endswith("."), "every operator has a one-line doc"
    assert isinstance(op.relation, Relation) and op.relation.name
    assert op.pattern == TVM_PATTERNS[name]
    assert callable(op.impl)
    assert op.num_inputs >= 1 or (op.num_inputs == -1 and name in ("concatenate", "stack"))
    for spec in op.attrs.values():
        if not spec.required and spec.default is not None:
            coerce_attr(name, spec, spec.default)       # defaults are themselves valid
    assert name in covered_ops() and name in VALID_CALLS and name in INVALID_CALLS


def test_only_value_constrained_operators_register_inputs():
    assert "take" in INPUTS
    assert not {"nn.conv2d", "concatenate", "reshape", "nn.pad"} & set(INPUTS)


def test_tuple_input_operators_are_variadic_and_take_one_tuple():
    # docs/architecture.md#api: num_inputs is -1 for a tuple input; the relation wants one tuple.
    for name in ("concatenate", "stack"):
        assert ops.get(name).num_inputs == -1
        t = TensorType((2, 3), "float32")
        with pytest.raises(RelayTypeError, match="1 tuple argument"):
            ops.get(name).relation((t, t), ops.get(name).normalize_attrs({}))
