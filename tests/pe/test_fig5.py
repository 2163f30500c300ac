"""The paper's Fig. 5: partial evaluation + DCE turns reverse-mode AD output into plain code.

``ad.grad`` builds the gradient with a backpropagator reference of closures and a
``(T, Ref[T])`` pair per tensor (Fig. 4); the partial evaluator runs the backpropagator
at compile time — its closures are known and its references never escape — and DCE
removes what is left.
"""

from __future__ import annotations

import numpy as np
import pytest

import ad
from interpreter import evaluate
from interpreter.values import values_equal
from pe import partial_evaluate
from semantics import alpha_equal, parse_expr, pretty
from semantics.expr import Call, Function, If, Match, Op, RefCreate, RefRead, RefWrite, Var
from semantics.rewrite import substitute
from semantics.visitor import post_order


def _straight_line(fn: Function) -> bool:
    """No closures but ``fn`` itself, no references, no calls but operator calls, no branches."""
    for node in post_order(fn):
        if isinstance(node, Function) and node is not fn:
            return False
        if isinstance(node, (RefCreate, RefRead, RefWrite, If, Match)):
            return False
        if isinstance(node, Call) and not isinstance(node.op, Op):
            return False
    return True


@pytest.mark.parametrize("ty", ["Tensor[(3), float32]", "Tensor[(2, 4), float64]", "float32"])
def test_gradient_of_identity_is_the_papers_post_dce_program(ty):
    g = ad.grad(parse_expr(f"fn (%d: {ty}) {{ %d }}"))
    assert any(isinstance(n, RefCreate) for n in post_order(g))  # Fig. 4's shape before PE
    out = partial_evaluate(g)
    assert isinstance(out, Function)
    # The parameter keeps its annotation (as in the paper's figure) ...
    assert alpha_equal(out, parse_expr(f"fn (%d: {ty}) {{ (%d, (ones_like(%d),)) }}")), \
        pretty(out)
    # ... and without it the program is the text exactly.
    d = Var("d")
    bare = Function((d,), substitute(out.body, {out.params[0]: d}))
    assert alpha_equal(bare, parse_expr("fn (%d) { (%d, (ones_like(%d),)) }")), pretty(bare)


def test_gradient_of_square_is_straight_line_code():
    f = parse_expr("fn (%x: Tensor[(3), float32]) { %x * %x }")
    g = ad.grad(f)
    out = partial_evaluate(g)
    assert isinstance(out, Function) and _straight_line(out), pretty(out)
    x = np.array([1.5, -2, 3], "float32")
    got, want = evaluate(out, x), evaluate(g, x)
    assert values_equal(got, want)
    assert np.allclose(got[1][0], 2 * x)


def test_gradient_of_a_small_network_is_straight_line_code():
    f = parse_expr("""
    fn (%x: Tensor[(1, 4), float32], %w: Tensor[(3, 4), float32], %b: Tensor[(3), float32]) {
      let %h = nn.dense(%x, %w);
      let %y = tanh(nn.bias_add(%h, %b, axis=1));
      sum(%y * %y)
    }""")
    g = ad.grad(f)
    out = partial_evaluate(g)
    assert _straight_line(out), pretty(out)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype("float32") for s in ((1, 4), (3, 4), (3,))]
    assert values_equal(evaluate(out, *args), evaluate(g, *args))


def test_gradient_of_an_lstm_cell_built_with_a_local_closure_is_straight_line_code():
    t, w = "Tensor[(1, 8), float32]", "Tensor[(8, 8), float32]"
    f = parse_expr(f"""
    fn (%x: {t}, %h: {t}, %c: {t}, %wi: {w}, %wf: {w}, %wo: {w}, %wg: {w}) {{
      let %gate = fn (%w: {w}) -> {t} {{ nn.dense(%x, %w) + nn.dense(%h, %w) }};
      let %c2 = sigmoid(%gate(%wf)) * %c + sigmoid(%gate(%wi)) * tanh(%gate(%wg));
      let %h2 = sigmoid(%gate(%wo)) * tanh(%c2);
      sum(%h2) + sum(%c2)
    }}""")
    g = ad.grad(f)
    out = partial_evaluate(g)
    assert _straight_line(out), pretty(out)
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((1, 8) if i < 3 else (8, 8)).astype("float32") for i in range(7)]
    assert values_equal(evaluate(out, *args), evaluate(g, *args))
