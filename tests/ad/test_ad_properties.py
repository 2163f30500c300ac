"""Properties of AD over generated differentiable programs (``differentiable_programs``).

* reverse and forward mode agree with central finite differences in float64 (``check_grads``);
* forward and reverse mode compute the same gradient;
* the gradient program prints, re-parses alpha-equivalently and type-checks (Type-Gradient);
* ``grad`` never mutates its input.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

import ad
from conformance.strategies import differentiable_programs
from interpreter import evaluate
from semantics import alpha_equal, parse_expr, parse_type, pretty, types_equal
from semantics.ops.tables import GRADIENTS, TANGENTS
from typechecker import type_of

# nn.dense / transpose rules come from the nn and transform rule families
DENSE = all(t.has(op) for t in (GRADIENTS, TANGENTS) for op in ("nn.dense", "transpose"))
PROGRAMS = differentiable_programs(dense=DENSE)


@settings(max_examples=40)
@given(PROGRAMS)
def test_gradients_match_finite_differences(p):
    ad.check_grads(p.function, p.args, modes=("rev", "fwd"), directions=2)


@settings(max_examples=25)
@given(PROGRAMS)
def test_forward_and_reverse_agree(p):
    rev = evaluate(ad.grad(p.function), *p.args)
    fwd = evaluate(ad.grad(p.function, mode="forward"), *p.args)
    np.testing.assert_allclose(rev[0], fwd[0], rtol=1e-5, atol=1e-6)
    for a, b in zip(rev[1], fwd[1]):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-4)


@settings(max_examples=20)
@given(PROGRAMS)
def test_gradient_program_round_trips_and_has_type_gradient(p):
    g = ad.grad(p.function)
    again = parse_expr(pretty(g))
    assert alpha_equal(again, g)
    ty = pretty(p.function.params[0].type_annotation)
    n = len(p.function.params)
    expected = parse_type(f"fn ({', '.join([ty] * n)}) -> ({ty}, ({', '.join([ty] * n)},))")
    assert types_equal(type_of(again), expected)


@settings(max_examples=20)
@given(PROGRAMS)
def test_grad_is_pure(p):
    before = pretty(p.function)
    ad.grad(p.function)
    ad.jvp(p.function)
    assert pretty(p.function) == before
