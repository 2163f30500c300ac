"""The partial evaluator on the examples of issue 12: what is static disappears, effects stay.

Each example checks the *shape* of the residual program (what was evaluated away) and that
it computes what the source computes under the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

from interpreter import evaluate
from interpreter.values import values_equal
from pe import partial_evaluate
from semantics import alpha_equal, parse, parse_expr, pretty
from semantics.expr import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    Match,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Var,
)
from semantics.module import IRModule
from semantics.visitor import post_order

F3 = "Tensor[(3), float32]"


def nodes(p: IRModule | object) -> list:
    if isinstance(p, IRModule):
        return [n for fn in p.functions.values() for n in post_order(fn)]
    return post_order(p)  # type: ignore[arg-type]


def kinds(p: object, *types: type) -> list:
    return [n for n in nodes(p) if isinstance(n, types)]


def non_op_calls(p: object) -> list:
    return [n for n in kinds(p, Call) if not isinstance(n.op, Op)]


def same(a: object, b: object) -> None:
    assert values_equal(a, b), f"{a!r} != {b!r}"


def test_static_let_chain_folds_to_a_constant():
    mod = parse("""
    def @main() {
      let %a = 2f;
      let %b = %a * 3f;
      let %c = (%b, %a);
      let %d = %c.0 + %c.1;
      sqrt(%d * 2f)
    }""")
    out = partial_evaluate(mod)
    body = out["main"].body
    assert isinstance(body, Constant), pretty(out)
    assert float(body.data) == 4.0


def test_static_let_chain_with_an_operator_failure_keeps_the_failure():
    # 1 / 0 on integers traps: the call is left for run time, where the oracle traps too.
    mod = parse("def @main() { let %z = 0; let %q = 1 / %z; %q + 1 }")
    out = partial_evaluate(mod)
    assert any(isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "divide"
               for n in nodes(out))
    with pytest.raises(Exception, match="division by zero"):
        evaluate(out)


def test_statically_bounded_loop_over_a_dynamic_tensor_unrolls():
    mod = parse(f"""
    def @main(%x: {F3}) {{
      let %loop = fn (%i: int32, %acc: {F3}) -> {F3} {{
        if (%i >= 4) {{ %acc }} else {{ %loop(%i + 1, %acc * %x + 1f) }}
      }};
      %loop(0, %x)
    }}""")
    out = partial_evaluate(mod)
    assert not kinds(out, If, Function, Match) or kinds(out, Function) == [out["main"]]
    assert not kinds(out, If, Match) and not non_op_calls(out), pretty(out)
    assert len([n for n in kinds(out, Call) if n.op.name == "multiply"]) == 4
    x = np.array([1, -2, 0.5], "float32")
    same(evaluate(out, x), evaluate(mod, x))


def test_recursion_over_a_static_list_unrolls_through_the_prelude():
    mod = parse(f"""
    def @main(%x: {F3}) {{
      let %l = Cons(%x, Cons(%x * 2f, Cons(%x * 3f, Nil)));
      @foldl(fn (%a: {F3}, %b: {F3}) {{ %a + %b }}, %x, @map(fn (%y: {F3}) {{ %y * %y }}, %l))
    }}""")
    out = partial_evaluate(mod)
    assert not kinds(out, Match, If) and not non_op_calls(out), pretty(out)
    x = np.array([1, 2, 3], "float32")
    same(evaluate(out, x), evaluate(mod, x))


def test_apply_with_a_known_function_inlines():
    mod = parse(f"""
    def @apply(%f: fn ({F3}) -> {F3}, %x: {F3}) -> {F3} {{ %f(%x) }}
    def @main(%x: {F3}) {{
      @apply(fn (%y: {F3}) {{ tanh(%y) + %y }}, %x)
    }}""")
    out = partial_evaluate(mod)
    assert set(out.functions) == {"main"}  # @apply was unfolded, then unreachable
    assert not non_op_calls(out) and kinds(out, Function) == [out["main"]], pretty(out)
    expected = parse_expr(f"fn (%x: {F3}) {{ add(tanh(%x), %x) }}")
    assert alpha_equal(out["main"], expected), pretty(out)


def test_static_references_vanish():
    mod = parse(f"""
    def @main(%x: {F3}) {{
      let %r = ref(%x);
      let %count = ref(0);
      %r := !%r * 2f;
      %count := !%count + 1;
      let %s = ref(%r);          // a reference to a reference
      !%s := !(!%s) + 1f;
      (!%r, !%count)
    }}""")
    out = partial_evaluate(mod)
    assert not kinds(out, RefCreate, RefRead, RefWrite), pretty(out)
    x = np.array([1, 2, 3], "float32")
    same(evaluate(out, x), evaluate(mod, x))


def test_without_dce_the_residual_keeps_the_effects_in_order():
    mod = parse(f"""
    def @main(%x: {F3}) {{
      let %r = ref(%x);
      %r := !%r + 1f;
      !%r
    }}""")
    raw = partial_evaluate(mod, dce=False)
    text = pretty(raw)
    assert text.index("ref(") < text.index("ref_write(") and "ref_read" not in text
    x = np.ones(3, "float32")
    same(evaluate(raw, x), evaluate(mod, x))


DYNAMIC_BRANCH = f"""
def @main(%c: bool, %x: {F3}) {{
  let %r = ref(%x);
  let %k = ref(1);
  if (%c) {{ %r := %x * 2f }} else {{ () }};
  (!%r, !%k)
}}"""


def test_dynamic_branch_keeps_both_arms_and_invalidates_what_it_writes():
    mod = parse(DYNAMIC_BRANCH)
    out = partial_evaluate(mod)
    ifs = kinds(out, If)
    assert len(ifs) == 1, pretty(out)
    # %r was written in one arm: after the branch it is read at run time; %k is untouched
    # by both arms: its contents stay known and its reference disappears.
    reads = kinds(out, RefRead)
    assert len(reads) == 1, pretty(out)
    assert len(kinds(out, RefCreate)) == 1
    x = np.array([1, 2, 3], "float32")
    for c in (True, False):
        same(evaluate(out, np.bool_(c), x), evaluate(mod, np.bool_(c), x))


def test_dynamic_branch_arms_see_the_store_from_before_the_branch():
    mod = parse(f"""
    def @main(%c: bool, %x: {F3}) {{
      let %r = ref(%x);
      %r := !%r + 1f;
      if (%c) {{ !%r * 2f }} else {{ let %old = !%r; %r := %old * 3f; !%r - %old }}
    }}""")
    out = partial_evaluate(mod)
    assert not kinds(out, RefRead, RefCreate), pretty(out)
    x = np.array([1, 2, 3], "float32")
    for c in (True, False):
        same(evaluate(out, np.bool_(c), x), evaluate(mod, np.bool_(c), x))


CALL_WRITES = f"""
def @main(%f: fn (Ref[{F3}]) -> (), %x: {F3}) {{
  let %r = ref(%x);
  let %private = ref(%x);
  %f(%r);
  (!%r, !%private)
}}"""


def test_store_is_not_reused_across_a_dynamic_call_that_writes_a_reference():
    mod = parse(CALL_WRITES)
    out = partial_evaluate(mod)
    # %r escaped into the unknown call, so it is read after it; %private did not escape
    # (the call cannot reach it), so its read is answered statically and it disappears.
    reads = kinds(out, RefRead)
    assert len(reads) == 1 and isinstance(reads[0].ref, Var), pretty(out)
    x = np.array([1, 2, 3], "float32")
    r_src = evaluate(_apply_to_writer(mod["main"]), x)
    r_out = evaluate(_apply_to_writer(out["main"]), x)
    same(r_out, r_src)
    assert float(r_out[0][0]) == 5.0 and float(r_out[1][0]) == 1.0


def _apply_to_writer(fn: Function) -> Function:
    """``fn (%x) { fn_under_test(writer, %x) }`` where the writer multiplies by 5."""
    from semantics.expr import Call as C

    writer = parse_expr(f"fn (%q: Ref[{F3}]) {{ %q := !%q * 5f }}")
    x = Var("x", fn.params[1].type_annotation)
    return Function((x,), C(fn, (writer, x)))


def test_dynamic_recursion_is_residualized_as_a_specialization():
    mod = parse(f"""
    def @main(%l: List[{F3}], %s: float32) {{
      let %scale = fn (%y: {F3}) {{ %y * %s }};
      let %go = fn (%xs: List[{F3}]) -> List[{F3}] {{
        match (%xs) {{
          Nil => Nil,
          Cons(%h, %t) => Cons(%scale(%h) + 1f, %go(%t)),
        }}
      }};
      %go(%l)
    }}""")
    out = partial_evaluate(mod)
    assert kinds(out, Match), pretty(out)
    # %scale is static: it was unfolded into the residual loop (no call of it remains).
    callees = {n.op.name_hint for n in non_op_calls(out) if isinstance(n.op, Var)}
    assert "scale" not in callees, pretty(out)
    from interpreter import ConstructorValue as CV
    lst = CV("Nil", ())
    for k in range(4):
        lst = CV("Cons", (np.full(3, k, "float32"), lst))
    same(evaluate(out, lst, np.float32(2)), evaluate(mod, lst, np.float32(2)))


def test_global_recursion_on_dynamic_data_stays_a_call():
    mod = parse("""
    def @count(%n: int32, %acc: int32) -> int32 {
      if (%n <= 0) { %acc } else { @count(%n - 1, %acc + 2) }
    }
    def @main(%n: int32) { @count(%n, 0) }
    """)
    out = partial_evaluate(mod)
    assert "count" in out.functions and any(isinstance(n.op, GlobalVar)
                                            for n in non_op_calls(out))
    same(evaluate(out, np.int32(50_000)), np.int32(100_000))  # tail calls stay tail calls


@pytest.mark.parametrize("src", [
    # diverges at run time: static recursion that never ends
    "def @main(%x: float32) { let %f = fn (%i: int32) -> float32 { %f(%i + 1) }; %f(0) }",
    # Landin's knot: recursion through the store
    """def @main(%x: float32) {
         let %r = ref(fn (%y: float32) -> float32 { %y });
         %r := fn (%y: float32) -> float32 { (!%r)(%y + 1f) };
         (!%r)(%x)
       }""",
    # exponential static recursion: the fuel backstop
    """def @fib(%n: int32) -> int32 { if (%n < 2) { %n } else { @fib(%n - 1) + @fib(%n - 2) } }
       def @main(%x: float32) { (@fib(40), %x) }""",
])
def test_partial_evaluation_terminates_on_programs_that_do_not(src):
    mod = parse(src)
    out = partial_evaluate(mod, fuel=20_000)
    assert "main" in out.functions
    with pytest.raises(Exception, match="fuel|stack"):
        evaluate(out, np.float32(1), fuel=200_000)
