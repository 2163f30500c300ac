"""§6 robustness through the partial evaluator: deep programs never reach Python's stack."""

from __future__ import annotations

import numpy as np

from interpreter import evaluate
from pe import partial_evaluate
from semantics import parse, parse_type
from semantics.expr import Call, Constant, Expr, Function, Op, Var
from semantics.module import IRModule

N = 20_000


def test_a_20000_deep_let_chain_passes_through():
    lines = ["def @main(%x: float32) {"]
    lines += [f"  let %v{i} = add(%{'x' if i == 0 else f'v{i - 1}'}, 1f);" for i in range(N)]
    lines += [f"  %v{N - 1}", "}"]
    mod = parse("\n".join(lines))
    out = partial_evaluate(mod)
    assert float(evaluate(out, np.float32(1))) == N + 1


def test_a_20000_deep_static_let_chain_folds():
    lines = ["def @main() {", "  let %v0 = 0;"]
    lines += [f"  let %v{i} = %v{i - 1} + 1;" for i in range(1, N)]
    lines += [f"  %v{N - 1}", "}"]
    out = partial_evaluate(parse("\n".join(lines)))
    assert isinstance(out["main"].body, Constant) and int(out["main"].body.data) == N - 1


def test_a_20000_operator_graph_with_sharing_passes_through():
    # Each node is used twice: without per-activation sharing this would unfold 2^20000 times.
    x = Var("x", parse_type("float32"))
    node: Expr = x
    for i in range(N):
        node = Call(Op("multiply" if i % 2 else "add"), (node, node))
    mod = IRModule({"main": Function((x,), node)})
    out = partial_evaluate(mod)
    assert float(evaluate(out, np.float32(0))) == 0.0


def test_a_100000_iteration_loop_stays_a_loop_in_constant_stack():
    mod = parse("""
    def @main(%n: int32, %x: float32) {
      let %loop = fn (%i: int32, %acc: float32) -> float32 {
        if (%i <= 0) { %acc } else { %loop(%i - 1, %acc + 1f) }
      };
      %loop(%n, %x)
    }""")
    out = partial_evaluate(mod)
    assert float(evaluate(out, np.int32(100_000), np.float32(0))) == 100_000.0


def test_a_static_100000_iteration_loop_terminates_and_stays_correct():
    mod = parse("""
    def @main(%x: float32) {
      let %loop = fn (%i: int32, %acc: float32) -> float32 {
        if (%i <= 0) { %acc } else { %loop(%i - 1, %acc + 1f) }
      };
      %loop(100000, %x)
    }""")
    out = partial_evaluate(mod)
    assert float(evaluate(out, np.float32(0))) == 100_000.0


def test_a_residual_nullary_constructor_survives_print_and_parse():
    """Issue 33: the residual held a bare ``ONone`` constructor, which prints like the call
    ``ONone()`` the parser builds: the reparsed residual was not alpha-equal to it."""
    from semantics import alpha_equal, pretty

    mod = parse("""
    type O { OSome(int32), ONone }
    def @main(%x: int32) {
      let %o = if (%x > 0) { OSome(%x) } else { ONone };
      match (%o) { OSome(%v) => %v, ONone => 0 }
    }""")
    residual = partial_evaluate(mod)
    assert alpha_equal(parse(pretty(residual)), residual)
    for x in (-2, 3):
        assert evaluate(residual, x) == evaluate(mod, x)
