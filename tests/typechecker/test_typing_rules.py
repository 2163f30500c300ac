"""One positive and at least one negative case per typing rule (RULES.md, "Typing")."""

from __future__ import annotations

import numpy as np
import pytest
from tc_util import assert_type, check, expect_type_error, module_types, pretty, ty, type_of

from semantics import parse
from semantics.expr import (
    Call,
    Constant,
    Function,
    GlobalVar,
    Grad,
    If,
    Let,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    const,
)
from semantics.module import IRModule
from semantics.types import FuncType, RefType, TensorType, TupleType, TypeVar

F32 = TensorType((), "float32")
I32 = TensorType((), "int32")


# --- [Type-Var] ---------------------------------------------------------------------------------

def test_var_has_its_binding_type():
    assert_type("let %x = 1f; %x", "float32")


def test_var_uses_innermost_binding():
    assert_type("let %x = 1f; let %x = (1, 2); %x", "(int32, int32)")


def test_unbound_variable_is_reported_with_its_span():
    err = expect_type_error(type_of, "(1, %nope)", prefix="unbound variable %nope",
                            rule="Type-Var")
    assert err.span is not None and err.span.column == 5


def test_let_value_does_not_see_its_own_variable():
    x = Var("x")
    expect_type_error(type_of, Let(x, Tuple((x,)), x), prefix="unbound variable %x")


# --- [Type-Global] ------------------------------------------------------------------------------

def test_global_has_its_definition_type():
    types = module_types("def @two() -> int32 { 2 }\ndef @main() { @two() }")
    assert types == {"two": "fn () -> int32", "main": "fn () -> int32"}


def test_undefined_global_is_reported_with_its_span():
    gv = GlobalVar("ghost")
    mod = IRModule({"main": Function((), Call(gv, ()))})
    err = expect_type_error(check, mod, prefix="undefined global @ghost", rule="Type-Global")
    assert err.code == "Type-Global"


# --- [Type-Constant] ----------------------------------------------------------------------------

@pytest.mark.parametrize("value,dtype,expected", [
    (1, "int32", "int32"), (1.5, "float16", "float16"), (True, "bool", "bool"),
    (np.zeros((2, 3)), "float64", "Tensor[(2, 3), float64]"),
    (np.zeros((0, 4)), "uint8", "Tensor[(0, 4), uint8]"),
])
def test_constant_has_its_tensor_type(value, dtype, expected):
    assert_type(const(value, dtype), expected)


def test_constant_of_a_non_relay_dtype_is_ill_kinded():
    c = Constant(np.array([1 + 2j]))
    expect_type_error(type_of, c, prefix="ill-kinded type", rule="Kind-BaseType")


# --- [Type-Op] / [Type-Call-Op] -----------------------------------------------------------------

def test_operator_value_has_its_relation_scheme():
    t = type_of(Op("add"))
    assert isinstance(t, FuncType) and len(t.type_params) == 3
    assert t.type_constraints and t.type_constraints[0].relation.name == "Broadcast"


def test_operator_value_is_instantiated_at_each_use():
    assert_type("let %f = add; (%f(1, 2), %f(1f, 2f))", "(int32, float32)")


def test_operator_requiring_attributes_cannot_be_a_value():
    expect_type_error(type_of, "let %f = reshape; %f(1f)", prefix="bad attribute", rule="Type-Op")


def test_unknown_operator_is_a_type_error():
    expect_type_error(type_of, Call(Op("no.such_op"), ()), prefix="unknown operator",
                      rule="Type-Op")


def test_operator_call_uses_the_relation():
    assert_type("fn (%x: Tensor[(2, 1), float32], %y: Tensor[(3,), float32]) { add(%x, %y) }",
                "fn (Tensor[(2, 1), float32], Tensor[(3,), float32]) -> Tensor[(2, 3), float32]")


def test_operator_call_with_wrong_arity():
    expect_type_error(type_of, Call(Op("add"), (const(1),)), prefix="type mismatch",
                      rule="Type-Call-Op", contains=("expected 2 arguments, found 1",))


def test_operator_call_with_bad_attribute():
    expect_type_error(type_of, "nn.relu(1f, alpha=2)", prefix="bad attribute",
                      rule="Type-Call-Op")


def test_relation_failure_names_relation_and_arguments():
    err = expect_type_error(
        type_of, "fn (%x: Tensor[(3,), float32], %y: Tensor[(4,), float32]) { add(%x, %y) }",
        prefix="relation Broadcast failed", rule="Type-Call-Op")
    assert "Tensor[(3), float32]" in err.message or "Tensor[(3,), float32]" in err.message
    assert err.span is not None and err.span.column > 50


# --- [Type-ADT-Constructor] ---------------------------------------------------------------------

def test_constructor_has_a_polymorphic_function_type():
    assert_type("Cons", "fn [A](A, List[A]) -> List[A]")


def test_constructor_call_instantiates():
    assert_type("(Cons(1, Nil), Cons(1f, Nil))", "(List[int32], List[float32])")


def test_constructor_call_with_wrong_field_type():
    expect_type_error(type_of, "Cons(1, Cons(2f, Nil))", prefix="type mismatch",
                      rule="Type-Call")


def test_constructor_call_with_wrong_arity():
    expect_type_error(type_of, "Some(1, 2)", prefix="type mismatch", rule="Type-Call",
                      contains=("expected 1 argument, found 2",))


# --- [Type-Product] / [Type-Projection] ---------------------------------------------------------

def test_tuple_and_projection():
    assert_type("(1, 2f, (True,))", "(int32, float32, (bool,))")
    assert_type("(1, 2f).1", "float32")
    assert_type("()", "()")


def test_projection_out_of_range():
    expect_type_error(type_of, "(1, 2).2", prefix="type mismatch", rule="Type-Projection",
                      contains=("at least 3 fields",))


def test_projection_of_a_non_tuple():
    expect_type_error(type_of, "let %x = 1; %x.0", prefix="type mismatch",
                      rule="Type-Projection")


def test_projection_of_a_tuple_known_only_later():
    # %p's type is unknown when the projection is generated: the Projection relation waits
    assert_type("fn (%p) { let %a: int32 = %p.0; (%p.1, %a) }(((1, 2f)))".replace(
        "(((1, 2f)))", "((1, 2f))"), "(float32, int32)")


# --- [Type-Let] ---------------------------------------------------------------------------------

def test_let_annotation_is_checked():
    assert_type("let %x: float32 = 1f; %x", "float32")
    expect_type_error(type_of, "let %x: float32 = 1; %x", prefix="type mismatch",
                      rule="Type-Let", contains=("expected float32, found int32",))


def test_non_function_let_is_not_generalized():
    # a reference of an unknown element type must be used at one type only
    expect_type_error(type_of, "let %r = ref(Nil); %r := Cons(1, Nil); %r := Cons(1f, Nil); ()",
                      prefix="type mismatch")


def test_sequencing():
    assert_type("1; 2f", "float32")


# --- [Type-Let-Rec] -----------------------------------------------------------------------------

def test_let_rec_function_sees_itself():
    text = """
    let %count = fn (%n: int32) -> int32 {
      if (equal(%n, 0)) { 0 } else { add(1, %count(subtract(%n, 1))) }
    };
    %count(10)
    """
    assert_type(text, "int32")


def test_let_rec_is_monomorphic_inside():
    text = "let %f = fn (%x) { let %u = %f(1); %f(2f) }; %f"
    expect_type_error(type_of, text, prefix="type mismatch")


def test_let_rec_generalizes_for_the_body():
    assert_type("let %pair = fn (%x) { (%x, %x) }; (%pair(1), %pair(True))",
                "((int32, int32), (bool, bool))")


def test_let_rec_with_declared_signature_allows_polymorphic_recursion():
    text = """
    let %f = fn [A](%x: A, %n: int32) -> A {
      if (equal(%n, 0)) { %x } else { let %u = %f((%x, %x), subtract(%n, 1)); %x }
    };
    %f(1f, 3)
    """
    assert_type(text, "float32")


# --- [Type-Function] ----------------------------------------------------------------------------

def test_function_type_from_annotations():
    assert_type("fn (%x: int32, %y: float32) -> (float32, int32) { (%y, %x) }",
                "fn (int32, float32) -> (float32, int32)")


def test_function_return_annotation_mismatch():
    err = expect_type_error(type_of, "fn (%x: int32) -> float32 { %x }", prefix="type mismatch",
                            rule="Type-Function", contains=("return type",))
    assert "expected float32, found int32" in err.message


def test_function_literal_with_type_parameters_is_polymorphic():
    assert_type("let %id = fn [A](%x: A) -> A { %x }; (%id(1), %id(2f))", "(int32, float32)")


def test_rigid_type_parameter_does_not_unify_with_a_concrete_type():
    expect_type_error(type_of, "fn [A](%x: A) -> A { 1 }", prefix="type mismatch",
                      rule="Type-Function")


# --- [Type-Function-Definition] -----------------------------------------------------------------

def test_definition_result_annotation_mismatch():
    err = expect_type_error(check, parse(
        "def @main(%x: int32) -> float32 { %x }"), prefix="type mismatch",
        rule="Type-Function-Definition")
    assert "@main" in err.message


def test_definition_is_generalized():
    types = module_types("def @dup(%x) { (%x, %x) }\ndef @main() { (@dup(1), @dup(2f)) }")
    assert types["dup"] == "fn [A](A) -> (A, A)"
    assert types["main"] == "fn () -> ((int32, int32), (float32, float32))"


def test_definition_with_explicit_type_params():
    types = module_types("def @k[A, B](%a: A, %b: B) -> A { %a }")
    assert types["k"] == "fn [A, B](A, B) -> A"


# --- [Type-Call] --------------------------------------------------------------------------------

def test_call_result_type():
    assert_type("(fn (%x: int32) -> float32 { 1f })(3)", "float32")


def test_call_argument_mismatch_shows_both_types():
    err = expect_type_error(type_of, "(fn (%x: int32) { %x })(3f)", prefix="type mismatch",
                            rule="Type-Call", contains=("argument 1", "expected int32",
                                                        "found float32"))
    assert err.span is not None


def test_call_wrong_number_of_arguments():
    expect_type_error(type_of, "(fn (%x: int32) { %x })(1, 2)", prefix="type mismatch",
                      rule="Type-Call", contains=("expected 1 argument, found 2",))


def test_calling_a_non_function():
    expect_type_error(type_of, "let %x = 1; %x(2)", prefix="type mismatch", rule="Type-Call",
                      contains=("only functions can be called",))


def test_higher_order_call_infers_the_callee():
    assert_type("fn (%f, %x: int32) { %f(%x) }(fn (%y: int32) { (%y, %y) }, 1)".replace(
        "fn (%f, %x: int32) { %f(%x) }(", "(fn (%f, %x: int32) { %f(%x) })("), "(int32, int32)")


def test_explicit_type_arguments():
    a = TypeVar("A")
    x = Var("x", a)
    ident = Function((x,), x, a, (a,))
    f = Var("f")
    call = Call(f, (const(1.0),), type_args=(F32,))
    assert_type(Let(f, ident, call), "float32")


def test_explicit_type_argument_conflicting_with_the_argument():
    a = TypeVar("A")
    x = Var("x", a)
    ident = Function((x,), x, a, (a,))
    f = Var("f")
    call = Call(f, (const(1),), type_args=(F32,))
    expect_type_error(type_of, Let(f, ident, call), prefix="type mismatch", rule="Type-Call")


def test_too_many_explicit_type_arguments():
    a = TypeVar("A")
    x = Var("x", a)
    ident = Function((x,), x, a, (a,))
    call = Call(ident, (const(1),), type_args=(I32, F32))
    expect_type_error(type_of, call, prefix="type mismatch", rule="Type-Instantiate",
                      contains=("expected 1 type argument, found 2",))


def test_explicit_type_arguments_on_a_monomorphic_function():
    x = Var("x", I32)
    call = Call(Function((x,), x), (const(1),), type_args=(I32,))
    expect_type_error(type_of, call, prefix="type mismatch", rule="Type-Instantiate")


def test_explicit_type_arguments_on_a_global():
    mod = parse("def @id2[A](%x: A) -> A { %x }")
    call = Call(GlobalVar("id2"), (const(1.0),), type_args=(F32,))
    assert_type(call, "float32", mod)
    bad = Call(GlobalVar("id2"), (const(1.0),), type_args=(I32,))
    expect_type_error(type_of, bad, mod, prefix="type mismatch", rule="Type-Call")


# --- [Type-If] ----------------------------------------------------------------------------------

def test_if_branches_agree():
    assert_type("if (True) { 1 } else { 2 }", "int32")


def test_if_condition_must_be_a_scalar_bool():
    expect_type_error(type_of, "if (1) { 1 } else { 2 }", prefix="type mismatch",
                      rule="Type-If", contains=("condition", "expected bool, found int32"))
    cond = const(np.array([True, False]))
    expect_type_error(type_of, If(cond, const(1), const(2)), prefix="type mismatch",
                      rule="Type-If")


def test_if_branches_must_agree():
    expect_type_error(type_of, "if (True) { 1 } else { 2f }", prefix="type mismatch",
                      rule="Type-If", contains=("expected int32, found float32",))


# --- references ---------------------------------------------------------------------------------

def test_ref_create_read_write():
    assert_type("ref(1f)", "Ref[float32]")
    assert_type("let %r = ref(1f); !%r", "float32")
    assert_type("let %r = ref(1f); %r := 2f", "()")


def test_ref_write_of_the_wrong_type():
    expect_type_error(type_of, "let %r = ref(1f); %r := 2", prefix="type mismatch",
                      rule="Type-Write-Ref")


def test_ref_read_of_a_non_reference():
    expect_type_error(type_of, "let %r = 1f; !%r", prefix="type mismatch", rule="Type-Read-Ref")


def test_ref_write_to_a_non_reference():
    x = Var("x")
    expr = Let(x, const(1.0), RefWrite(x, const(2.0)))
    expect_type_error(type_of, expr, prefix="type mismatch", rule="Type-Write-Ref")


def test_ref_of_unknown_contents_resolved_by_a_later_write():
    r = Var("r")
    f = Var("f")
    inner = Function((f,), RefWrite(f, const(2.0)))
    expr = Let(r, RefCreate(Call(Op("zeros_like"), (const(1.0),))), Call(inner, (r,)))
    assert_type(expr, "()")
    assert_type(Let(r, RefCreate(const(1.0)), RefRead(r)), "float32")


# --- [Type-Gradient] ----------------------------------------------------------------------------

def test_gradient_type():
    assert_type("grad(fn (%x: Tensor[(3,), float32], %y: float32) { multiply(%x, %y) })",
                "fn (Tensor[(3,), float32], float32) -> (Tensor[(3,), float32], "
                "(Tensor[(3,), float32], float32))")


def test_gradient_of_a_non_function():
    expect_type_error(type_of, Grad(const(1.0)), prefix="type mismatch", rule="Type-Gradient")


def test_gradient_of_a_function_known_later():
    f = Var("f")
    g = Var("g")
    x = Var("x", F32)
    body = Call(g, (const(1.0),))
    expr = Let(f, Function((x,), x), Let(g, Grad(f), body))
    assert_type(expr, "(float32, (float32,))")


# --- misc: a Tuple/TupleGetItem/If graph with sharing -------------------------------------------

def test_shared_nodes_are_typed_once():
    x = Var("x", TensorType((2,), "float32"))
    shared = Call(Op("add"), (x, x))
    expr = Function((x,), Tuple((shared, TupleGetItem(Tuple((shared,)), 0))))
    t = type_of(expr)
    assert pretty(t) == pretty(ty("fn (Tensor[(2,), float32]) -> (Tensor[(2,), float32], "
                                  "Tensor[(2,), float32])"))


def test_types_are_fully_resolved():
    t = type_of("let %f = fn (%x) { (%x, %x) }; %f(Cons(1, Nil))")
    assert isinstance(t, TupleType)
    assert pretty(t) == "(List[int32], List[int32])"
    assert not isinstance(t, RefType)
