"""Inlining: fresh binders per copy, recursion never unfolded, evaluation order kept."""

from __future__ import annotations

import passes
from interpreter import evaluate
from passes.inline import recursive_globals
from semantics import parse
from semantics.analysis import bound_vars, global_vars


def test_the_same_function_inlined_twice_gets_distinct_binders():
    mod = parse("""
    def @sq(%x: int32, Inline=1) { let %t = %x * %x; %t }
    def @main(%a: int32) { (@sq(%a), @sq(%a)) }
    """)
    out = passes.inline(mod)
    binders = bound_vars(out["main"])
    assert len(binders) == len({id(v) for v in binders}) == 5  # %a, 2 x (%x, %t)
    assert not global_vars(out["main"])
    assert evaluate(out, 3) == evaluate(mod, 3)


def test_a_function_that_allocates_inlined_twice_allocates_twice():
    """Each inlined call site evaluates the body afresh: a body of ``ref(c)`` (no binder in
    it) must not become one node shared by both sites, which would be one reference cell
    (the inliner's differential test found this)."""
    mod = parse("""
    def @g(%x: bool, Inline=1) { ref(True) }
    def @main() { ref_write(@g(False), False); @g(False) }
    """)
    out = passes.inline(mod)
    assert not global_vars(out["main"])
    assert evaluate(out).value == evaluate(mod).value == True  # noqa: E712
    from semantics.expr import RefCreate
    from semantics.visitor import post_order

    assert sum(type(n) is RefCreate for n in post_order(out["main"])) == 2


def test_inlining_is_transitive_and_terminates_on_recursion():
    mod = parse("""
    def @even(%n: int32, Inline=1) -> bool { if (%n == 0) { True } else { @odd(%n - 1) } }
    def @odd(%n: int32, Inline=1) -> bool { if (%n == 0) { False } else { @even(%n - 1) } }
    def @inc(%n: int32, Inline=1) { %n + 1 }
    def @inc2(%n: int32, Inline=1) { @inc(@inc(%n)) }
    def @main(%a: int32) { (@inc2(%a), @even(%a)) }
    """)
    assert recursive_globals(mod) == {"even", "odd"}
    out = passes.inline(mod)
    assert [g.name_hint for g in global_vars(out["main"])] == ["even"]
    assert [g.name_hint for g in global_vars(out["inc2"])] == []
    assert evaluate(out, 4) == evaluate(mod, 4)


def test_self_recursive_local_function_is_not_inlined():
    mod = parse("""
    def @main(%a: int32) {
      let %f = fn (%n: int32, Inline=1) -> int32 { if (%n <= 0) { 0 } else { %f(%n - 1) } };
      %f(%a)
    }""")
    assert passes.inline(mod) is mod


def test_polymorphic_and_shape_polymorphic_functions_are_left_alone():
    mod = parse("""
    def @id[A](%x: A, Inline=1) -> A { %x }
    def @first[n](%x: Tensor[(n, 2), float32], Inline=1) { %x }
    def @main(%a: int32, %t: Tensor[(3, 2), float32]) { (@id(%a), @first(%t)) }
    """)
    assert passes.inline(mod) is mod


def test_mark_inline_marks_only_nonrecursive_globals():
    mod = parse("""
    def @loop(%n: int32) -> int32 { if (%n <= 0) { 0 } else { @loop(%n - 1) } }
    def @sq(%x: int32) { %x * %x }
    def @main(%a: int32) { @sq(@loop(%a)) }
    """)
    marked = passes.mark_inline(mod)
    assert marked["sq"].attrs.get("Inline") == 1
    assert "Inline" not in marked["loop"].attrs
    assert "Inline" not in mod["sq"].attrs  # the input is untouched
