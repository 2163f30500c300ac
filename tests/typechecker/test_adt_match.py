"""ADTs, pattern typing (Type-Pattern-*) and match exhaustiveness (Type-ADT-Match)."""

from __future__ import annotations

import pytest
from tc_util import assert_type, check, expect_type_error, module_types, type_of

from semantics import parse
from semantics.expr import (
    Call,
    Clause,
    Constructor,
    Function,
    Match,
    PatternConstructor,
    PatternVar,
    PatternWildcard,
    Var,
    const,
)
from semantics.module import IRModule
from semantics.types import GlobalTypeVar, TensorType, TypeCall, TypeData, TypeVar

COLOR = """
type Color { Red, Green, Blue, }
type Pair[A, B] { MkPair(A, B), }
"""


def color_module(body: str) -> IRModule:
    return parse(COLOR + body)


def test_user_adt_constructors_and_match():
    types = module_types(COLOR + """
    def @name(%c: Color) -> int32 {
      match (%c) { Red => 0, Green => 1, Blue => 2, }
    }
    def @swap[A, B](%p: Pair[A, B]) -> Pair[B, A] {
      match (%p) { MkPair(%a, %b) => MkPair(%b, %a), }
    }
    """)
    assert types["name"] == "fn (Color) -> int32"
    assert types["swap"] == "fn [A, B](Pair[A, B]) -> Pair[B, A]"


def test_pattern_variables_get_field_types():
    assert_type("match (Cons(1f, Nil)) { Cons(%h, %t) => (%h, %t), Nil => (0f, Nil), }",
                "(float32, List[float32])")


def test_annotated_pattern_variable():
    assert_type("match (Some(1)) { Some(%x: int32) => %x, None => 0, }", "int32")
    expect_type_error(type_of, "match (Some(1)) { Some(%x: float32) => %x, None => 0f, }",
                      prefix="type mismatch", rule="Type-Pattern-Var")


def test_constructor_pattern_of_the_wrong_adt():
    expect_type_error(type_of, "match (Some(1)) { Cons(_, _) => 0, _ => 1, }",
                      prefix="type mismatch", rule="Type-Pattern-Constructor")


def test_constructor_pattern_with_wrong_arity():
    some = parse("def @main() { Some(1) }").types["Option"].constructors[0]
    x = Var("x")
    m = Match(Call(some, (const(1),)), (Clause(PatternConstructor(some, (PatternVar(x),
                                                                         PatternWildcard())),
                                               const(1)),), complete=False)
    expect_type_error(type_of, m, prefix="type mismatch", rule="Type-Pattern-Constructor",
                      contains=("expected 1 field, found 2",))


def test_tuple_pattern():
    assert_type("match ((1, 2f)) { (%a, %b) => (%b, %a), }", "(float32, int32)")
    expect_type_error(type_of, "match ((1, 2f)) { (%a, %b, %c) => %a, }",
                      prefix="type mismatch", rule="Type-Pattern-Tuple")


def test_tuple_pattern_on_unknown_type():
    assert_type("fn (%p) { match (%p) { (%a, %b) => %a, } }(((1, 2)))".replace(
        "fn (%p) { match (%p) { (%a, %b) => %a, } }(((1, 2)))",
        "(fn (%p) { match (%p) { (%a, %b) => %a, } })((1, 2))"), "int32")


def test_wildcard_pattern():
    assert_type("match (Cons(1, Nil)) { _ => 7, }", "int32")


def test_clause_types_must_agree():
    expect_type_error(type_of, "match (Some(1)) { Some(%x) => %x, None => 1f, }",
                      prefix="type mismatch", rule="Type-ADT-Match")


# --- exhaustiveness -------------------------------------------------------------------------

def test_missing_constructor_is_named():
    expect_type_error(type_of, "match (Cons(1, Nil)) { Cons(%x, _) => %x, }",
                      prefix="non-exhaustive match: no clause for Nil", rule="Type-ADT-Match")


def test_missing_nested_case_is_named():
    err = expect_type_error(
        type_of, "match (Cons(1, Nil)) { Nil => 0, Cons(%x, Nil) => %x, }",
        prefix="non-exhaustive match: no clause for Cons(_, Cons(_, _))")
    assert err.span is not None


def test_nested_exhaustive_match():
    text = """
    match (Cons(Some(1), Nil)) {
      Nil => 0,
      Cons(None, _) => 1,
      Cons(Some(%x), Nil) => %x,
      Cons(Some(_), Cons(_, _)) => 2,
    }
    """
    assert_type(text, "int32")


def test_tuple_patterns_exhaustiveness():
    ok = "match ((True, Some(1))) { (_, None) => 0, (_, Some(%x)) => %x, }"
    assert_type(ok, "int32")
    bad = "match ((Some(1), Some(2))) { (None, _) => 0, (Some(_), None) => 1, }"
    expect_type_error(type_of, bad, prefix="non-exhaustive match: no clause for "
                                           "(Some(_), Some(_))")


def test_tensor_scrutinee_needs_a_catch_all():
    assert_type("match (1) { %x => %x, }", "int32")


def test_enumeration_exhaustiveness():
    mod = color_module("def @main(%c: Color) { match (%c) { Red => 0, Blue => 2, } }")
    expect_type_error(check, mod, prefix="non-exhaustive match: no clause for Green")
    ok = color_module("def @main(%c: Color) { match (%c) { Red => 0, _ => 2, } }")
    check(ok)


def test_partial_match_is_allowed():
    assert_type("match? (Cons(1, Nil)) { Cons(%x, _) => %x, }", "int32")


def test_redundant_clauses_are_accepted():
    assert_type("match (Some(1)) { _ => 0, Some(%x) => %x, None => 2, }", "int32")


def test_empty_adt_match_with_no_clauses_is_exhaustive():
    void = GlobalTypeVar("Void")
    td = TypeData(void, (), ())
    v = Var("v", TypeCall(void, ()))
    fn = Function((v,), Match(v, (), True), TensorType((), "int32"))
    mod = IRModule({"main": fn}, {"Void": td})
    check(mod)


def test_deeply_nested_patterns_do_not_overflow():
    src = parse("def @main() { Some(1) }")
    some, none = src.types["Option"].constructors
    depth = 200  # types may be recursed over (they are shallow); patterns are walked iteratively
    pat = PatternVar(Var("x"))
    for _ in range(depth):
        pat = PatternConstructor(some, (pat,))
    t: object = TensorType((), "int32")
    option = src.types["Option"].header
    for _ in range(depth):
        t = TypeCall(option, (t,))
    d = Var("d", t)
    m = Match(d, (Clause(pat, const(1)), Clause(PatternConstructor(none, ()), const(2))), True)
    mod = IRModule({"main": Function((d,), m)}, dict(src.types))
    expect_type_error(check, mod, prefix="non-exhaustive match: no clause for Some(None)")


@pytest.mark.parametrize("name", ["Cons", "Nil"])
def test_undefined_constructor(name):
    a = TypeVar("A")
    fake = Constructor(name + "X", (), GlobalTypeVar("Nope"), 0)
    expect_type_error(type_of, Call(fake, ()), prefix="undefined constructor",
                      rule="Type-ADT-Constructor")
    assert a is not None


def test_polymorphic_adt_constructor_instantiation():
    types = module_types(COLOR + "def @main(%x: int32) { MkPair(%x, Cons(%x, Nil)) }")
    assert types["main"] == "fn (int32) -> Pair[int32, List[int32]]"


def test_recursive_tree():
    assert_type("Rose(1, Cons(Rose(2, Nil), Nil))", "Tree[int32]")
    assert_type("@size(Rose(1f, Nil))", "int32")


def test_nullary_constructor_value_is_the_adt_value():
    from semantics.expr import Let, Tuple

    nil = parse("def @main() { Nil }").types["List"].constructors[1]
    assert nil.name == "Nil"
    x = Var("x")
    # a bare Nil (not called) is the value Nil(), like the interpreter has it
    expr = Let(x, nil, Tuple((Call(parse("def @main() { Nil }").types["List"].constructors[0],
                                   (const(1), x)),)))
    assert_type(expr, "(List[int32],)")
