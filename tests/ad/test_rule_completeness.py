"""Every registered operator has a gradient and a tangent rule, or a declared reason why not;
differentiating through an operator without one is a RelayTypeError naming it and its span."""

from __future__ import annotations

import pytest

import ad  # noqa: F401  (registers the rules)
from semantics import RelayTypeError, parse_expr
from semantics.ops import GRADIENTS, TANGENTS, list_ops, missing


def test_every_operator_has_a_rule_or_a_reason() -> None:
    assert missing(GRADIENTS) == []
    assert missing(TANGENTS) == []


def test_the_operators_without_rules_are_the_non_differentiable_ones() -> None:
    without = sorted(op for op in list_ops() if not GRADIENTS.has(op))
    for op in without:
        assert GRADIENTS.reason(op), op
    # Each has a boolean, integer or index result, or allocates or frees memory (a storage,
    # an uninitialized tensor, ()): nothing a derivative could flow through.
    # The Winograd pair is an inference rewrite of nn.conv2d made after differentiation
    # (reverse mode only: they have tangents; ad/rules/winograd.py gives the reason).
    inference_only = {"nn.contrib_conv2d_winograd_weight_transform",
                      "nn.contrib_conv2d_winograd_without_weight_transform"}
    assert all(TANGENTS.has(op) for op in inference_only)
    assert set(without) <= {"equal", "not_equal", "less", "less_equal", "greater",
                            "greater_equal", "logical_and", "logical_or", "logical_not", "all",
                            "any", "argmax", "argmin", "shape_of", "right_shift",
                            "left_shift", "bitwise_and", "bitwise_or", "bitwise_xor",
                            "vm.shape_of", "memory.alloc_storage", "memory.alloc_tensor",
                            "memory.kill",
                            *inference_only}


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_grad_through_argmax_names_operator_and_span(mode: str) -> None:
    f = parse_expr("fn (%x: Tensor[(4), float32]) {\n  cast(argmax(%x), dtype=\"float32\")\n}")
    with pytest.raises(RelayTypeError) as info:
        ad.grad(f, mode=mode)
    assert "argmax" in str(info.value)
    assert info.value.span is not None and info.value.span.line == 2


def test_grad_of_a_let_bound_function_in_an_evaluated_expression() -> None:
    """Semantics-Grad in an expression given straight to `evaluate` (not a module): the expander
    finds the let-bound function in the expression itself."""
    import numpy as np

    from interpreter import evaluate

    e = parse_expr("fn (%x: float32) {\n"
                   "  let %f = fn (%y: float32) { %y * %y * %y };\n"
                   "  grad(%f)(%x)\n"
                   "}")
    value, (dx,) = evaluate(e, np.float32(2))
    assert (float(value), float(dx)) == (8.0, 12.0)
