"""The shared relations and dim helpers of semantics/ops/relations.py, and registry completeness
for the tensor, creation and reduce families."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from conformance.strategies.ops import INVALID_CALLS, VALID_CALLS, covered_ops, reduce_attrs
from conformance.strategies.types import shapes
from semantics import ops
from semantics.errors import InternalError, RelayRuntimeError, RelayTypeError
from semantics.expr import Attrs
from semantics.ops import relations as R
from semantics.ops.reference import np_dtype, reference
from semantics.ops.registry import OpPattern, Relation
from semantics.shapes import ANY, DimSolver, shape_var
from semantics.types import IncompleteType, TensorType, TupleType, TypeVar

FAMILIES = ("tensor", "creation", "reduce")
MY_OPS = sorted(n for n in ops.list_ops() if ops.get(n).family in FAMILIES)

n, m, k = shape_var("n"), shape_var("m"), shape_var("k")
SOLVER = DimSolver()


def T(shape, dtype="float32"):
    return TensorType(tuple(shape), dtype)


def shape_of(t):
    assert isinstance(t, TensorType)
    return tuple(t.shape)


def same_dims(a, b):
    """Dims equal: ANY only with ANY, ints by value, SymPy expressions symbolically."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x is ANY or y is ANY:
            if x is not y:
                return False
        elif isinstance(x, int) and isinstance(y, int):
            if x != y:
                return False
        elif sympy.simplify(sympy.sympify(x) - sympy.sympify(y)) != 0:
            return False
    return True


# --- broadcasting -------------------------------------------------------------------------

@pytest.mark.parametrize("a, b, expected", [
    ((2, 3), (2, 3), (2, 3)),
    ((2, 1), (1, 3), (2, 3)),
    ((3,), (2, 3), (2, 3)),
    ((), (4, 5), (4, 5)),
    ((5, 1, 4), (3, 1), (5, 3, 4)),
    ((0,), (1,), (0,)),
    ((1,), (0,), (0,)),
])
def test_broadcast_concrete(a, b, expected):
    out = R.BROADCAST((T(a), T(b)), Attrs())
    assert shape_of(out) == expected and out.dtype == "float32"
    out = R.BROADCAST((T(b), T(a)), Attrs())
    assert shape_of(out) == expected


@pytest.mark.parametrize("a, b", [((2,), (3,)), ((2, 3), (3, 2)), ((4, 1), (3, 2))])
def test_broadcast_concrete_mismatch(a, b):
    with pytest.raises(RelayTypeError, match="relation Broadcast failed"):
        R.BROADCAST((T(a), T(b)), Attrs())


def test_broadcast_symbolic_outer_product():
    out = R.BROADCAST((T((n, 1)), T((1, m))), Attrs())
    assert same_dims(shape_of(out), (n, m))


def test_broadcast_symbolic_equal_dims_unify():
    out = R.BROADCAST((T((n, 2 * m)), T((n, m + m))), Attrs())
    assert same_dims(shape_of(out), (n, 2 * m))


@pytest.mark.parametrize("a, b", [((n,), (m,)), ((n,), (3,)), ((n + 1,), (n,))])
def test_broadcast_symbolic_unprovable_is_error(a, b):
    with pytest.raises(RelayTypeError, match="Broadcast"):
        R.BROADCAST((T(a), T(b)), Attrs())


def test_broadcast_symbolic_against_one():
    out = R.BROADCAST((T((n, k)), T((1,))), Attrs())
    assert same_dims(shape_of(out), (n, k))
    out = R.BROADCAST((T((sympy.Integer(1),)), T((n,))), Attrs())
    assert same_dims(shape_of(out), (n,))


@pytest.mark.parametrize("a, b, expected", [
    ((ANY,), (3,), (3,)),
    ((3,), (ANY,), (3,)),
    ((ANY,), (1,), (ANY,)),
    ((1,), (ANY,), (ANY,)),
    ((ANY,), (ANY,), (ANY,)),
    ((ANY, 1), (1, 4), (ANY, 4)),
    ((ANY,), (n,), (n,)),
    ((2, ANY), (ANY,), (2, ANY)),
])
def test_broadcast_any(a, b, expected):
    assert same_dims(shape_of(R.BROADCAST((T(a), T(b)), Attrs())), expected)


def test_broadcast_shapes_helper_matches_numpy_on_concrete():
    for a, b in [((2, 1, 3), (4, 1)), ((1,), ()), ((5, 0), (1, 1))]:
        assert R.broadcast_shapes("B", (), a, b, SOLVER) == np.broadcast_shapes(a, b)


@settings(max_examples=60)
@given(st.lists(st.integers(0, 4), max_size=4), st.lists(st.integers(0, 4), max_size=4))
def test_broadcast_agrees_with_numpy(a, b):
    try:
        expected = np.broadcast_shapes(tuple(a), tuple(b))
    except ValueError:
        expected = None
    if expected is None:
        with pytest.raises(RelayTypeError):
            R.broadcast_shapes("Broadcast", (), a, b, SOLVER)
    else:
        assert R.broadcast_shapes("Broadcast", (), a, b, SOLVER) == expected


def test_broadcast_dtype_rules():
    with pytest.raises(RelayTypeError, match="dtypes differ"):
        R.BROADCAST((T((2,), "int32"), T((2,), "float32")), Attrs())
    with pytest.raises(RelayTypeError, match="numeric"):
        R.BROADCAST((T((2,), "bool"), T((2,), "bool")), Attrs())
    assert R.BROADCAST_COMPARE((T((2,), "int8"), T((1,), "int8")), Attrs()).dtype == "bool"
    assert R.BROADCAST_COMPARE((T((2,), "float32x4"), T((2,), "float32x4")),
                               Attrs()).dtype == "boolx4"


def test_error_names_relation_and_types():
    with pytest.raises(RelayTypeError) as info:
        R.BROADCAST((T((2,), "int32"), T((3,), "int32")), Attrs())
    msg = info.value.message
    assert msg.startswith("relation Broadcast failed for (")
    assert "int32" in msg and "2" in msg and "3" in msg


# --- not yet known arguments --------------------------------------------------------------

@pytest.mark.parametrize("rel, args, attrs", [
    (R.IDENTITY, (IncompleteType(),), {}),
    (R.BROADCAST, (T((2,)), IncompleteType()), {}),
    (R.BROADCAST_COMPARE, (TypeVar("A"), T((2,))), {}),
    (R.CAST, (IncompleteType(),), {"dtype": "int8"}),
    (R.CLIP, (IncompleteType(),), {"a_min": 0.0, "a_max": 1.0}),
    (R.WHERE, (T((2,), "bool"), IncompleteType(), T((2,))), {}),
    (R.REDUCE, (IncompleteType(),), {"axis": None, "keepdims": False, "exclude": False}),
    (R.ARG_REDUCE, (TypeVar("A"),), {"axis": None, "keepdims": False, "exclude": False}),
    (R.VARIANCE, (T((2,)), IncompleteType()),
     {"axis": None, "keepdims": False, "exclude": False, "unbiased": False}),
    (R.FULL, (IncompleteType(),), {"shape": (2,), "dtype": None}),
    (R.FULL_LIKE, (T((2,)), IncompleteType()), {}),
])
def test_unknown_argument_means_not_yet(rel, args, attrs):
    assert rel(args, Attrs(attrs)) is None


def test_arange_is_answerable_before_arguments_are_known():
    out = R.ARANGE((IncompleteType(),) * 3, Attrs({"dtype": "int32"}))
    assert shape_of(out) == (ANY,) and out.dtype == "int32"


@pytest.mark.parametrize("rel, args, attrs", [
    (R.IDENTITY, (TupleType(()),), {}),
    (R.BROADCAST, (T((2,)), TupleType((T((2,)),))), {}),
    (R.REDUCE, (TupleType(()),), {"axis": None, "keepdims": False, "exclude": False}),
    (R.IDENTITY, (T((2,)), T((2,))), {}),
    (R.BROADCAST, (T((2,)),), {}),
])
def test_non_tensor_and_arity_errors(rel, args, attrs):
    with pytest.raises(RelayTypeError, match=f"relation {rel.name} failed"):
        rel(args, Attrs(attrs))


# --- axes and reductions ------------------------------------------------------------------

@pytest.mark.parametrize("axis, ndim, expected", [(0, 1, 0), (-1, 3, 2), (2, 3, 2), (-3, 3, 0)])
def test_normalize_axis(axis, ndim, expected):
    assert R.normalize_axis("R", (), axis, ndim) == expected


@pytest.mark.parametrize("axis, ndim", [(1, 1), (-2, 1), (0, 0), (3, 3), (-4, 3)])
def test_normalize_axis_out_of_range(axis, ndim):
    with pytest.raises(RelayTypeError, match="out of range"):
        R.normalize_axis("R", (), axis, ndim)


@pytest.mark.parametrize("axis, ndim, exclude, expected", [
    (None, 3, False, (0, 1, 2)),
    ((), 3, False, (0, 1, 2)),
    ((), 3, True, (0, 1, 2)),
    ((2, 0), 3, False, (0, 2)),
    ((-1,), 3, True, (0, 1)),
    ((0, 1, 2), 3, True, ()),
    (None, 0, False, ()),
])
def test_reduce_axes(axis, ndim, exclude, expected):
    assert R.reduce_axes("Reduce", (), axis, ndim, exclude) == expected


def test_reduce_axes_duplicate():
    with pytest.raises(RelayTypeError, match="twice"):
        R.reduce_axes("Reduce", (), (1, -2), 3, False)


def _reduce(t, **attrs):
    full = {"axis": None, "keepdims": False, "exclude": False}
    full.update(attrs)
    return R.REDUCE((t,), Attrs(full))


def test_reduce_symbolic_dims_keepdims():
    x = T((n, m, 3))
    assert same_dims(shape_of(_reduce(x, axis=(1,), keepdims=True)), (n, 1, 3))
    assert same_dims(shape_of(_reduce(x, axis=(1,))), (n, 3))
    assert same_dims(shape_of(_reduce(x, axis=(0,), exclude=True)), (n,))
    assert same_dims(shape_of(_reduce(x, keepdims=True)), (1, 1, 1))
    assert shape_of(_reduce(x)) == ()


def test_reduce_any_dims_are_kept():
    x = T((ANY, 4, ANY))
    assert same_dims(shape_of(_reduce(x, axis=(1,))), (ANY, ANY))
    assert same_dims(shape_of(_reduce(x, axis=(-1,), keepdims=True)), (ANY, 4, 1))


def test_reduce_exclude_without_axis_is_error():
    with pytest.raises(RelayTypeError, match="exclude"):
        _reduce(T((2, 3)), exclude=True)


def test_arg_reduce_result_is_int32_and_needs_rank():
    attrs = Attrs({"axis": (1,), "keepdims": False, "exclude": False,
                   "select_last_index": False})
    out = R.ARG_REDUCE((T((n, 5), "float16"),), attrs)
    assert out.dtype == "int32" and same_dims(shape_of(out), (n,))
    with pytest.raises(RelayTypeError, match="rank"):
        R.ARG_REDUCE((T((), "float32"),), attrs.replace(axis=None))


def test_variance_relation():
    attrs = Attrs({"axis": (1,), "keepdims": False, "exclude": False, "unbiased": True})
    out = R.VARIANCE((T((n, 4)), T((n, 1))), attrs)
    assert same_dims(shape_of(out), (n,))
    with pytest.raises(RelayTypeError, match="rank"):
        R.VARIANCE((T((2, 4)), T((4,))), attrs)
    with pytest.raises(RelayTypeError, match="broadcast"):
        R.VARIANCE((T((2, 1)), T((2, 4))), attrs.replace(axis=None))
    with pytest.raises(RelayTypeError, match="float"):
        R.VARIANCE((T((2, 4), "int32"), T((2, 1), "int32")), attrs)


def test_where_relation():
    out = R.WHERE((T((n, 1), "bool"), T((1, m), "int8"), T((m,), "int8")), Attrs())
    assert same_dims(shape_of(out), (n, m)) and out.dtype == "int8"
    out = R.WHERE((T((), "float32"), T((2,), "int8"), T((), "int8")), Attrs())
    assert shape_of(out) == (2,)
    with pytest.raises(RelayTypeError, match="dtypes differ"):
        R.WHERE((T((), "bool"), T((2,), "int8"), T((2,), "int16")), Attrs())


def test_creation_relations():
    assert shape_of(R.INIT_OP((), Attrs({"shape": (2, 0), "dtype": "uint8"}))) == (2, 0)
    out = R.FULL((T((), "int8"),), Attrs({"shape": (3,), "dtype": None}))
    assert out.dtype == "int8" and shape_of(out) == (3,)
    out = R.FULL((T((), "int8"),), Attrs({"shape": (), "dtype": "float16"}))
    assert out.dtype == "float16" and shape_of(out) == ()
    with pytest.raises(RelayTypeError, match="scalar"):
        R.FULL((T((1,), "int8"),), Attrs({"shape": (3,), "dtype": None}))
    out = R.FULL_LIKE((T((n, 2), "int64"), T((), "float32")), Attrs())
    assert out.dtype == "int64" and same_dims(shape_of(out), (n, 2))
    with pytest.raises(RelayTypeError, match="dtype"):
        R.ARANGE((T((), "int32"), T((), "float32"), T((), "int32")), Attrs({"dtype": "int32"}))


# --- reference helpers --------------------------------------------------------------------

def test_reference_turns_ill_typed_arguments_into_runtime_errors():
    add = ops.get("add")
    with pytest.raises(RelayRuntimeError, match="dtypes differ"):
        add.reference(np.array([1], np.int32), np.array([1.0], np.float32))
    with pytest.raises(RelayRuntimeError, match="broadcast"):
        add.reference(np.zeros(2, np.int32), np.zeros(3, np.int32))
    with pytest.raises(RelayRuntimeError, match="not a Relay tensor"):
        add.reference(np.array(["a"]), np.array(["b"]))


def test_reference_checks_result_type_against_relation():
    bad = reference("bad", R.IDENTITY, lambda out, x: x.astype(np.float64))
    with pytest.raises(InternalError):
        bad(np.zeros(2, np.float32))
    bad_shape = reference("bad", R.IDENTITY, lambda out, x: x[:1])
    with pytest.raises(InternalError):
        bad_shape(np.zeros(2, np.float32))
    fine = reference("ok", R.IDENTITY, lambda out, x: np.negative(x))
    out = fine(np.array(2.0, np.float16))
    assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == np.float16


def test_np_dtype_rejects_lanes():
    with pytest.raises(RelayRuntimeError):
        np_dtype("float32x4")


# --- completeness -------------------------------------------------------------------------

EXPECTED_PATTERNS = {
    **{op: OpPattern.BROADCAST for op in (
        "add subtract multiply divide power mod floor_divide floor_mod maximum minimum "
        "equal not_equal less less_equal greater greater_equal logical_and logical_or "
        "where").split()},
    **{op: OpPattern.ELEMWISE for op in (
        "negative abs exp log sqrt rsqrt tanh sigmoid erf floor ceil round trunc sign sin "
        "cos logical_not clip cast copy zeros ones full zeros_like ones_like "
        "full_like").split()},
    **{op: OpPattern.COMM_REDUCE for op in (
        "sum mean max min prod argmax argmin variance all any").split()},
    "arange": OpPattern.OPAQUE,
}


def test_family_has_exactly_the_issue_operators():
    assert set(MY_OPS) == set(EXPECTED_PATTERNS)


@pytest.mark.parametrize("name", MY_OPS)
def test_operator_is_complete(name):
    op = ops.get(name)
    assert op.doc and "\n" not in op.doc and op.doc.endswith(".")
    assert isinstance(op.relation, Relation) and op.relation.name
    assert op.pattern is EXPECTED_PATTERNS[name]
    assert op.num_inputs >= 0
    assert name in covered_ops() and name in VALID_CALLS and name in INVALID_CALLS
    for spec in op.attrs.values():
        assert spec.kind in ops.registry.ATTR_KINDS


def test_unknown_operator_is_type_error():
    with pytest.raises(RelayTypeError, match="unknown operator"):
        ops.get("no_such_op")


# --- symbolic relations are sound under substitution ---------------------------------------

def _substitute(shape, env):
    return tuple(d if isinstance(d, int) else int(sympy.sympify(d).subs(env)) for d in shape)


@settings(max_examples=80)
@given(shapes(max_rank=3, any_dim=False), shapes(max_rank=3, any_dim=False),
       st.dictionaries(st.sampled_from(("n", "m", "k", "batch")), st.integers(0, 4)))
def test_symbolic_broadcast_sound_under_substitution(a, b, values):
    """When Broadcast accepts symbolic shapes, every instantiation broadcasts to the
    instantiated result (the relation may be conservative, never wrong)."""
    try:
        out = R.BROADCAST((T(a), T(b)), Attrs())
    except RelayTypeError:
        reject()  # conservative: nothing to instantiate
    names = {s.name for d in a + b if isinstance(d, sympy.Basic) for s in d.free_symbols}
    env = {shape_var(nm): values.get(nm, 2) for nm in names}
    ca, cb = _substitute(a, env), _substitute(b, env)
    concrete = R.BROADCAST((T(ca), T(cb)), Attrs())
    assert shape_of(concrete) == _substitute(shape_of(out), env)


@settings(max_examples=60)
@given(shapes(max_rank=4, any_dim=False), st.data())
def test_symbolic_reduce_sound_under_substitution(shape, data):
    attrs = ops.get("sum").normalize_attrs(data.draw(reduce_attrs(len(shape))))
    env = {shape_var(nm): 3 for nm in ("n", "m", "k", "batch")}
    out = R.REDUCE((T(shape),), attrs)
    concrete = R.REDUCE((T(_substitute(shape, env)),), attrs)
    assert shape_of(concrete) == _substitute(shape_of(out), env)


def test_reference_handles_tuple_arguments_and_results():
    def rel(arg_types, attrs, solver):
        (tup,) = arg_types
        assert isinstance(tup, TupleType)
        return TupleType(tuple(reversed(tup.fields)))

    swap = reference("swap", Relation("Swap", rel), lambda out, t: (t[1], t[0]))
    a, b = np.zeros(2, np.int8), np.array(1.5, np.float32)
    out = swap((a, b))
    assert out[0] is b and out[1] is a
    wrong = reference("wrong", Relation("Swap", rel), lambda out, t: t)
    with pytest.raises(InternalError):
        wrong((a, b))
