"""Rules on symbolic shapes: they type-check where the adjoint needs no static extent, and
the scatter rules reject a symbolic extent with ``RelayTypeError`` naming the operator."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from rulecheck import check_rule_types, prepare, run_gradient

import ad.rules  # noqa: F401  (registers the rules)
from conformance.strategies.ops import op_call_args
from semantics import parse_type
from semantics.errors import RelayTypeError
from semantics.ops import get, list_ops
from semantics.ops.tables import GRADIENTS
from semantics.shapes import shape_var
from semantics.types import TensorType, TupleType, Type

CASES: list[tuple[str, list[str], dict[str, Any]]] = [
    ("add", ["Tensor[(n, 3), float32]", "Tensor[(3), float32]"], {}),
    ("multiply", ["Tensor[(n, 1), float64]", "Tensor[(1, m), float64]"], {}),
    ("where", ["Tensor[(n, 3), bool]", "Tensor[(n, 3), float32]", "float32"], {}),
    ("sum", ["Tensor[(n, 3), float32]"], {"axis": [0]}),
    ("mean", ["Tensor[(n, 3), float32]"], {"axis": [0], "keepdims": True}),
    ("max", ["Tensor[(n, m), float32]"], {"axis": [1]}),
    ("prod", ["Tensor[(n, 3), float32]"], {}),
    ("variance", ["Tensor[(n, 3), float32]", "Tensor[(1, 3), float32]"], {"axis": [0]}),
    ("transpose", ["Tensor[(n, 3, m), float32]"], {"axes": [2, 0, 1]}),
    ("expand_dims", ["Tensor[(n, 3), float32]"], {"axis": 1}),
    ("broadcast_to_like", ["Tensor[(1, 3), float32]", "Tensor[(n, 3), float32]"], {}),
    ("split", ["Tensor[(n, 4), float32]"], {"indices_or_sections": 2, "axis": 1}),
    ("split", ["Tensor[(n, 4), float32]"], {"indices_or_sections": 2, "axis": 0}),
    ("take", ["Tensor[(n, 4), float32]", "Tensor[(n, 2), int32]"], {"axis": 1, "batch_dims": 1}),
    ("layout_transform", ["Tensor[(n, 4, 3), float32]"], {"src_layout": "NCW",
                                                          "dst_layout": "NWC4c"}),
    ("take", ["Tensor[(n, 4), float32]", "Tensor[(m), int32]"], {"axis": 1}),
    ("tile", ["Tensor[(n, 2), float32]"], {"reps": [3, 1, 2]}),
    ("repeat", ["Tensor[(2, n, 3), float32]"], {"repeats": 2, "axis": 1}),
    ("concatenate", ["(Tensor[(2), float32], Tensor[(n), float32])"], {"axis": 0}),
]


@pytest.mark.parametrize(("name", "types", "attrs"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rules_type_check_on_symbolic_shapes(name: str, types: list[str],
                                             attrs: dict[str, Any]) -> None:
    check_rule_types(name, [parse_type(t) for t in types], attrs)


@pytest.mark.parametrize(("name", "types", "attrs"), [
    ("take", ["Tensor[(4, n), float32]", "Tensor[(2), int32]"], {"axis": 1}),
    ("strided_slice", ["Tensor[(n), float32]"], {"begin": [1], "end": [3]}),
    ("concatenate", ["(Tensor[(n), float32], Tensor[(2), float32])"], {"axis": 0}),
], ids=["take", "strided_slice", "concatenate"])
def test_scatter_rules_need_static_extents(name: str, types: list[str],
                                           attrs: dict[str, Any]) -> None:
    with pytest.raises(RelayTypeError, match=f"gradient of {name}: needs a static"):
        check_rule_types(name, [parse_type(t) for t in types], attrs)


def test_mean_over_a_symbolic_axis_evaluates() -> None:
    x = np.arange(6.0).reshape(2, 3)
    (gx,) = run_gradient("mean", [parse_type("Tensor[(n, 3), float64]")], {"axis": [0]}, [x],
                         x.mean(axis=0), np.ones(3))
    np.testing.assert_allclose(gx, np.full((2, 3), 0.5))


@pytest.mark.parametrize("name", ["add", "multiply", "maximum"])
def test_unknown_dims_are_summed_back_at_run_time(name: str) -> None:
    """Two ``?`` dims may differ at run time: the adjoint still collapses to each operand."""
    x, y = np.array([0.5]), np.array([1.0, -2.0, 3.0])
    any_dim = parse_type("Tensor[(?), float64]")
    out = np.asarray({"add": np.add, "multiply": np.multiply,
                      "maximum": np.maximum}[name](x, y))
    gx, gy = run_gradient(name, [any_dim, any_dim], {}, [x, y], out, np.ones(3))
    assert gx.shape == (1,) and gy.shape == (3,)


@pytest.mark.parametrize(("name", "types", "attrs"), [
    ("tile", ["Tensor[(n, 2), float64]"], {"reps": [3, 1, 2]}),
    ("repeat", ["Tensor[(2, n, 3), float64]"], {"repeats": 2, "axis": 1}),
    ("concatenate", ["(Tensor[(2), float64], Tensor[(n), float64])"], {"axis": 0}),
], ids=["tile", "repeat", "concatenate"])
def test_symbolic_extents_evaluate_like_static_ones(name: str, types: list[str],
                                                    attrs: dict[str, Any]) -> None:
    """The symbolic path of a rule gives the static path's values."""
    rng = np.random.default_rng(3)
    symbolic = [parse_type(t) for t in types]
    static = [parse_type(re.sub(r"\bn\b", "3", t)) for t in types]
    args: list[Any] = []
    for t in static:
        if hasattr(t, "fields"):
            args.append(tuple(rng.standard_normal(tuple(f.shape)) for f in t.fields))
        else:
            args.append(rng.standard_normal(tuple(t.shape)))
    out = get(name).reference(*args, **attrs)
    g = rng.standard_normal(np.shape(out))
    want = run_gradient(name, static, attrs, args, out, g)
    got = run_gradient(name, symbolic, attrs, args, out, g)
    for a, b in zip(_flat(got), _flat(want), strict=True):
        np.testing.assert_allclose(a, b)


def _flat(v: Any) -> list[np.ndarray]:
    if isinstance(v, (list, tuple)):
        return [a for x in v for a in _flat(x)]
    return [np.asarray(v)]


# --- property: a valid call with its dims made symbolic --------------------------------------

FAMILY_OPS = [n for n in list_ops() if get(n).family in ("tensor", "reduce", "transform",
                                                          "creation") and GRADIENTS.has(n)]


def _symbolic(t: Type) -> Type:
    """``t`` with every dim above 1 replaced by a shape variable named after its value (equal
    dims stay equal, 0s and 1s stay, so broadcasting still type-checks)."""
    if isinstance(t, TupleType):
        return TupleType(tuple(_symbolic(f) for f in t.fields))
    if isinstance(t, TensorType):
        return TensorType(tuple(shape_var(f"d{d}") if isinstance(d, int) and d > 1 else d
                                for d in t.shape), t.dtype)
    return t


@pytest.mark.parametrize("name", FAMILY_OPS)
@settings(max_examples=10)
@given(data=st.data())
def test_rules_on_symbolic_shapes_type_check_or_say_why(name: str,
                                                        data: st.DataObject) -> None:
    """With symbolic dims, a rule builds well-typed expressions or raises the documented
    ``RelayTypeError`` ("gradient of <op>: needs a static ...")."""
    types, attrs = data.draw(op_call_args(name))
    symbolic = [_symbolic(t) for t in types]
    try:
        prepare(name, symbolic, attrs)
    except RelayTypeError:
        assume(False)               # an attribute tied to the concrete shape (newshape, ...)
    try:
        check_rule_types(name, symbolic, attrs)
    except RelayTypeError as err:
        assert f"gradient of {name}: needs a static" in str(err), str(err)
