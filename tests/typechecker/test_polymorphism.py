"""Let-polymorphism, generalization of globals, mutual recursion, shape polymorphism."""

from __future__ import annotations

from tc_util import assert_type, check, expect_type_error, module_types, pretty, type_of

from semantics import parse
from semantics.expr import Call, Function, GlobalVar, Var
from semantics.module import IRModule
from semantics.shapes import shape_var
from semantics.types import FuncType, TensorType, TypeVar


def test_identity_applied_at_two_types():
    assert_type("(@id(1), @id(2f), @id(Cons(True, Nil)))", "(int32, float32, List[bool])")


def test_let_polymorphism():
    assert_type("let %id = fn (%x) { %x }; (%id(1), %id((2f, 3)))", "(int32, (float32, int32))")


def test_lambda_bound_variable_is_monomorphic():
    # the parameter %f is not generalized: using it at two types fails
    expect_type_error(type_of, "fn (%f) { (%f(1), %f(2f)) }", prefix="type mismatch")


def test_top_level_function_is_generalized():
    t = type_of("fn (%x, %y) { (%y, %x) }")
    assert isinstance(t, FuncType) and len(t.type_params) == 2
    assert pretty(t) == "fn [A, B](A, B) -> (B, A)"


def test_generalized_variables_become_type_params_in_checked_types():
    from semantics.expr import Let
    from typechecker import infer

    expr = parse_expr_text("let %id = fn (%x) { %x }; %id(1)")
    out = infer(expr)
    assert isinstance(out, Let)
    fn_type = out.value.checked_type
    assert isinstance(fn_type, FuncType) and len(fn_type.type_params) == 1
    (param,) = out.value.params
    assert param.checked_type is fn_type.type_params[0]
    assert pretty(out.checked_type) == "int32"


def parse_expr_text(text):
    from semantics import parse_expr

    return parse_expr(text)


def test_monomorphism_restriction_for_constrained_variables():
    # %x's type is still unknown when %f is generalized (Broadcast waits on it), so %f stays
    # monomorphic and its use determines it
    assert_type("let %f = fn (%x) { add(%x, %x) }; %f(1f)", "float32")
    expect_type_error(type_of, "let %f = fn (%x) { add(%x, %x) }; (%f(1f), %f(1))",
                      prefix="type mismatch")


def test_underconstrained_without_use():
    expect_type_error(type_of, "fn (%x) { add(%x, %x) }", prefix="underconstrained",
                      rule="Type-Call-Op", contains=("Broadcast",))


def test_underconstrained_value():
    expect_type_error(type_of, "Nil", prefix="underconstrained")
    expect_type_error(type_of, "let %r = ref(Nil); 1", prefix="underconstrained")


def test_recursive_global_without_annotations():
    types = module_types("""
    def @len(%l) {
      match (%l) {
        Nil => 0,
        Cons(_, %rest) => add(1, @len(%rest)),
      }
    }
    """)
    assert types["len"] == "fn [A](List[A]) -> int32"


def test_mutually_recursive_globals_are_inferred_together():
    types = module_types("""
    def @even(%n) { if (equal(%n, 0)) { True } else { @odd(subtract(%n, 1)) } }
    def @odd(%n) { if (equal(%n, 0)) { False } else { @even(subtract(%n, 1)) } }
    def @main() { (@even(4), @odd(3)) }
    """)
    assert types["even"] == "fn (int32) -> bool"
    assert types["odd"] == "fn (int32) -> bool"
    assert types["main"] == "fn () -> (bool, bool)"


def test_mutual_recursion_generalizes_per_component():
    types = module_types("""
    def @ping(%x, %n: int32) { if (equal(%n, 0)) { %x } else { @pong(%x, subtract(%n, 1)) } }
    def @pong(%x, %n: int32) { @ping(%x, %n) }
    def @main() { (@ping(1f, 3), @pong(True, 2)) }
    """)
    assert types["ping"] == "fn [A](A, int32) -> A"
    assert types["main"] == "fn () -> (float32, bool)"


def test_declared_signature_used_by_earlier_definitions():
    types = module_types("""
    def @main() { @later(1) }
    def @later(%x: int32) -> (int32, int32) { (%x, %x) }
    """)
    assert types["main"] == "fn () -> (int32, int32)"


def test_global_used_monomorphically_determines_its_constrained_type():
    types = module_types("""
    def @double(%x) { add(%x, %x) }
    def @main(%y: Tensor[(2, 2), float32]) { @double(%y) }
    """)
    assert types["double"] == "fn (Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32]"


def test_shape_polymorphic_definition_instantiated_at_each_call():
    types = module_types("""
    def @twice(%x: Tensor[(n, 3), float32]) -> Tensor[(n, 3), float32] { add(%x, %x) }
    def @main(%a: Tensor[(2, 3), float32], %b: Tensor[(5, 3), float32]) {
      (@twice(%a), @twice(%b))
    }
    """)
    assert types["twice"] == "fn (Tensor[(n, 3), float32]) -> Tensor[(n, 3), float32]"
    assert types["main"] == ("fn (Tensor[(2, 3), float32], Tensor[(5, 3), float32]) -> "
                             "(Tensor[(2, 3), float32], Tensor[(5, 3), float32])")


def test_shape_polymorphism_without_return_annotation():
    types = module_types("""
    def @sq(%x: Tensor[(n, m), float32]) { multiply(%x, %x) }
    def @main(%a: Tensor[(7, 1), float32]) { @sq(%a) }
    """)
    assert types["sq"] == "fn (Tensor[(n, m), float32]) -> Tensor[(n, m), float32]"
    assert types["main"] == "fn (Tensor[(7, 1), float32]) -> Tensor[(7, 1), float32]"


def test_shape_polymorphic_call_with_symbolic_arguments():
    types = module_types("""
    def @grow(%x: Tensor[(n,), float32]) -> Tensor[(n + 1,), float32] {
      concatenate((%x, zeros(shape=[1], dtype="float32")), axis=0)
    }
    def @main(%a: Tensor[(k,), float32]) { @grow(@grow(%a)) }
    """)
    assert types["main"] == "fn (Tensor[(k), float32]) -> Tensor[(k + 2), float32]"


def test_shape_mismatch_inside_polymorphic_call():
    mod = parse("""
    def @same(%x: Tensor[(n,), float32], %y: Tensor[(n,), float32]) -> Tensor[(n,), float32] {
      add(%x, %y)
    }
    def @main(%a: Tensor[(2,), float32], %b: Tensor[(3,), float32]) { @same(%a, %b) }
    """)
    err = expect_type_error(check, mod, prefix="type mismatch", rule="Type-Call")
    assert "argument 2 of @same" in err.message


def test_dimension_hole_solved_through_arithmetic():
    # n + 1 = 6 gives n = 5
    types = module_types("""
    def @shrink(%x: Tensor[(n + 1,), float32]) -> Tensor[(n,), float32] {
      strided_slice(%x, begin=[1], end=[n + 1])
    }
    """.replace("strided_slice(%x, begin=[1], end=[n + 1])", "@shrink(%x)"))
    assert types["shrink"] == "fn (Tensor[(n + 1), float32]) -> Tensor[(n), float32]"
    n = shape_var("n")
    x = Var("x", TensorType((n + 1,), "float32"))
    shrink = Function((x,), Call(GlobalVar("shrink"), (x,)), TensorType((n,), "float32"))
    a = Var("a", TensorType((6,), "float32"))
    mod = IRModule({"shrink": shrink, "main": Function((a,), Call(GlobalVar("shrink"), (a,)))})
    from typechecker.api import global_types

    assert pretty(global_types(mod)["main"]) == ("fn (Tensor[(6), float32]) -> "
                                                 "Tensor[(5), float32]")


def test_unannotated_global_over_shape_polymorphic_callee_generalizes_the_dims():
    types = module_types("""
    def @f(%x: Tensor[(n, 3), float32]) -> Tensor[(n, 3), float32] { %x }
    def @g(%y) { @f(%y) }
    def @main(%a: Tensor[(4, 3), float32]) { @g(%a) }
    """)
    assert types["g"] == "fn (Tensor[(n, 3), float32]) -> Tensor[(n, 3), float32]"
    assert types["main"] == "fn (Tensor[(4, 3), float32]) -> Tensor[(4, 3), float32]"


def test_rigid_shape_variable_inside_its_definition():
    mod = parse("def @f(%x: Tensor[(n,), float32]) -> Tensor[(3,), float32] { %x }")
    expect_type_error(check, mod, prefix="type mismatch", rule="Type-Function-Definition")


def test_any_dims_unify_with_anything():
    types = module_types("""
    def @f(%x: Tensor[(n,), float32]) -> Tensor[(n,), float32] { %x }
    def @main(%a: Tensor[(?,), float32]) { @f(%a) }
    """)
    assert types["main"] == "fn (Tensor[(?), float32]) -> Tensor[(?), float32]"


def test_polymorphic_explicit_function_type_parameters():
    a = TypeVar("A")
    x = Var("x", a)
    fn = Function((x,), x, a, (a,))
    t = type_of(fn)
    assert isinstance(t, FuncType) and t.type_params == (a,)


def test_polymorphic_prelude_functions():
    assert_type("@map(fn (%x: int32) { (%x, %x) }, Cons(1, Nil))", "List[(int32, int32)]")
    assert_type("@foldl(fn (%a: float32, %b: int32) { %a }, 0f, Cons(1, Nil))", "float32")
    assert_type("@compose(fn (%x: float32) { (%x,) }, fn (%y: int32) { 1f })",
                "fn (int32) -> (float32,)")


def test_let_bound_function_generalizes_dimensions():
    types = module_types("""
    def @f(%x: Tensor[(n, 3), float32]) -> Tensor[(n, 3), float32] { %x }
    def @main(%a: Tensor[(2, 3), float32], %b: Tensor[(5, 3), float32]) {
      let %g = fn (%y) { @f(%y) };
      (%g(%a), %g(%b))
    }
    """)
    assert types["main"] == ("fn (Tensor[(2, 3), float32], Tensor[(5, 3), float32]) -> "
                             "(Tensor[(2, 3), float32], Tensor[(5, 3), float32])")


def test_generalized_dimension_names_avoid_written_ones():
    from typechecker import infer

    mod = parse("""
    def @f(%x: Tensor[(n, 3), float32]) -> Tensor[(n, 3), float32] { %x }
    def @main(%a: Tensor[(n, 3), float32]) {
      let %g = fn (%y) { @f(%y) };
      (%g(%a), %g(ones(shape=[4, 3], dtype="float32")))
    }
    """)
    out = infer(mod)
    let = out["main"].body
    g_type = pretty(let.var.checked_type)
    assert g_type == "fn (Tensor[(m, 3), float32]) -> Tensor[(m, 3), float32]"
    assert pretty(out["main"].checked_type) == (
        "fn (Tensor[(n, 3), float32]) -> (Tensor[(n, 3), float32], Tensor[(4, 3), float32])")
