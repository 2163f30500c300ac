"""Rules on symbolic shapes: they type-check where the adjoint needs no static extent, and
the scatter rules reject a symbolic extent with ``RelayTypeError`` naming the operator."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from rulecheck import check_rule_types, run_gradient

import ad.rules  # noqa: F401  (registers the rules)
from semantics import parse_type
from semantics.errors import RelayTypeError

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
    ("take", ["Tensor[(n, 4), float32]", "Tensor[(m), int32]"], {"axis": 1}),
]


@pytest.mark.parametrize(("name", "types", "attrs"), CASES, ids=[c[0] for c in CASES])
def test_rules_type_check_on_symbolic_shapes(name: str, types: list[str],
                                             attrs: dict[str, Any]) -> None:
    check_rule_types(name, [parse_type(t) for t in types], attrs)


@pytest.mark.parametrize(("name", "types", "attrs"), [
    ("take", ["Tensor[(4, n), float32]", "Tensor[(2), int32]"], {"axis": 1}),
    ("strided_slice", ["Tensor[(n), float32]"], {"begin": [1], "end": [3]}),
    ("tile", ["Tensor[(n), float32]"], {"reps": [2]}),
    ("concatenate", ["(Tensor[(n), float32], Tensor[(2), float32])"], {"axis": 0}),
], ids=["take", "strided_slice", "tile", "concatenate"])
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
