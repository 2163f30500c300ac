"""The pass manager: registry, Sequential with re-checking, optimize, instrumentation, depth."""

from __future__ import annotations

import numpy as np
import pytest

import passes
from interpreter import evaluate
from passes.manager import PassError, register_pass
from semantics import RelayTypeError, alpha_equal, parse, parse_expr, pretty
from semantics.expr import Call, Constant, Expr, Function, Op
from semantics.module import IRModule

PROGRAM = """
def @main(%x: Tensor[(2), float32]) {
  let %unused = add(%x, %x);
  let %c = multiply(2f, 3f);
  (add(%x, %c), add(%x, %c))
}
"""


def test_passes_have_both_names():
    p = passes.get_pass("FoldConstant")
    assert p is passes.get_pass("fold_constant") is passes.fold_constant
    assert p.opt_level == 2


def test_unknown_pass_is_a_user_error():
    with pytest.raises(RelayTypeError, match="unknown pass 'NoSuchPass'"):
        passes.get_pass("NoSuchPass")


def test_a_pass_keeps_the_kind_of_program():
    mod = parse(PROGRAM)
    assert isinstance(passes.fold_constant(mod), IRModule)
    expr = parse_expr("add(1, 2)")
    out = passes.fold_constant(expr)
    assert isinstance(out, Constant) and int(out.data) == 3
    fn = parse_expr("fn (%x: int32) { let %y = %x; %x }")
    out_fn = passes.dead_code_elimination(fn)
    assert isinstance(out_fn, Function)
    assert alpha_equal(out_fn, parse_expr("fn (%x: int32) { %x }"))


def test_passes_never_mutate_their_input():
    mod = parse(PROGRAM)
    before = pretty(mod)
    for p in passes.list_passes():
        p(mod)
    passes.optimize(mod, 3)
    assert pretty(mod) == before


def test_sequential_rechecks_and_names_the_broken_pass():
    def break_types(mod: IRModule) -> IRModule:
        main = mod["main"]
        bad = Function(main.params, Call(Op("add"), (Constant(np.float32(1)),
                                                     Constant(np.int32(1)))))
        return mod.with_function("main", bad)

    broken = passes.Pass("BreakTypes", "break_types", break_types)
    with pytest.raises(PassError, match="pass BreakTypes produced an ill-typed program"):
        passes.Sequential([passes.fold_constant, broken])(parse(PROGRAM))
    # Without checking, the broken result comes back as is.
    passes.Sequential([broken], check=False)(parse(PROGRAM))


def test_sequential_reports_an_ill_typed_input_as_the_users_error():
    with pytest.raises(RelayTypeError):
        passes.Sequential(["fold_constant"])(parse("def @main() { add(1, 1f) }"))


def test_sequential_result_is_typed():
    out = passes.Sequential(["fold_constant", "dead_code_elimination"])(parse(PROGRAM))
    assert out["main"].checked_type is not None


def test_instrumentation_reports_every_pass():
    records = []
    passes.optimize(parse(PROGRAM), 3, on_pass=records.append)
    names = [r.name for r in records]
    assert names == [p.name for p in passes.manager.passes_at(3)]
    assert names.index("FoldConstant") < names.index("EliminateCommonSubexpr") < names.index(
        "DeadCodeElimination")
    assert all(r.seconds >= 0 and r.size_before > 0 and r.size_after > 0 for r in records)


def test_opt_levels_grow():
    levels = [[p.name for p in passes.manager.passes_at(n)] for n in range(4)]
    assert levels[0] == []
    for lower, higher in zip(levels, levels[1:]):
        assert set(lower) <= set(higher)
    with pytest.raises(RelayTypeError, match="bad opt_level"):
        passes.optimize(parse(PROGRAM), 7)


def test_optimize_o3_result():
    out = passes.optimize(parse(PROGRAM), 3)
    expected = parse("""
    def @main(%x: Tensor[(2), float32]) {
      %0 = (fn (%p0: Tensor[(2), float32], Primitive=1) -> Tensor[(2), float32] {
        add(%p0, 6f)
      })(%x);
      (%0, %0)
    }""")
    assert alpha_equal(out, expected), pretty(out)
    x = np.arange(2, dtype="float32")
    for a, b in zip(evaluate(out, x), evaluate(parse(PROGRAM), x)):
        np.testing.assert_array_equal(a, b)


def test_duplicate_registration_is_rejected():
    with pytest.raises(ValueError, match="registered twice"):
        register_pass("FoldConstant", "fold_constant_again")(lambda m: m)


# --- depth (docs/architecture.md#robustness) ------------------------------------------------------

def _let_chain(n: int) -> str:
    lines = ["def @main(%x0: int32) {"]
    for i in range(n):
        lines.append(f"  let %x{i + 1} = add(%x{i}, 1);")
    lines.append(f"  %x{n}")
    lines.append("}")
    return "\n".join(lines)


def _graph(n: int) -> str:
    lines = ["def @main(%x: float32) {", "  %0 = add(%x, 1f);"]
    for i in range(1, n):
        lines.append(f"  %{i} = add(%{i - 1}, %x);")
    lines.append(f"  %{n - 1}")
    lines.append("}")
    return "\n".join(lines)


@pytest.mark.parametrize("make", [_let_chain, _graph], ids=["let_chain", "graph"])
def test_every_pass_handles_20000_deep_programs(make):
    mod = parse(make(20_000))
    expected = evaluate(mod, 1)
    for p in passes.list_passes():
        out = p(mod)
        # a pass with nothing to do returns its input (no copy of 20,000 nodes): nothing new
        # to evaluate
        assert out is mod or evaluate(out, 1) == expected, p.name
    assert evaluate(passes.optimize(mod, 3), 1) == expected


def test_every_pass_handles_a_doubling_dag():
    # 60 doublings: the tree unfolding has 2**60 nodes; the DAG has 61.
    text = "def @main(%x: int32) {\n  %0 = add(%x, %x);\n"
    text += "".join(f"  %{i} = add(%{i - 1}, %{i - 1});\n" for i in range(1, 60))
    text += "  %59\n}"
    mod = parse(text)
    for p in passes.list_passes():
        out = p(mod)
        assert int(evaluate(out, 0)) == 0
    out = passes.optimize(mod, 3)
    assert int(evaluate(out, 0)) == 0


def test_cse_then_dce_on_an_expression_with_free_variables():
    # Open expressions are transformed untyped (conservatively).
    e: Expr = parse_expr("fn (%y: int32) { let %a = add(%y, 1); let %b = add(%y, 1); %b }")
    out = passes.Sequential(["eliminate_common_subexpr", "dead_code_elimination"],
                            check=False)(e)
    assert alpha_equal(out, parse_expr("fn (%y: int32) { let %b = add(%y, 1); %b }")), pretty(out)
