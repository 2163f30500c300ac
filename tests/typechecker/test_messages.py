"""Messages a student meets (issue 19): what the program wrote and what was expected, in
the program's words; internal names (holes, ``ref_read``) never show. Also the shape
equations the solvers cannot invert (a RelayTypeError saying so, never an InternalError)
and ``evaluate`` of a bare operator (issue 9 §4)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

from semantics import parse, parse_expr, pretty
from semantics.errors import RelayTypeError
from semantics.expr import Call, Function, GlobalVar, Var
from semantics.module import IRModule
from semantics.rules import Rule
from semantics.shapes import shape_var
from semantics.types import TensorType
from typechecker import check, type_of


def _error(text: str) -> RelayTypeError:
    with pytest.raises(RelayTypeError) as info:
        check(parse(text) if text.lstrip().startswith("def") else parse_expr(text))
    return info.value


@pytest.mark.parametrize("text, spelled", [("let %b = True; !%b", "`!`"),
                                           ("let %b = True; ref_read(%b)", "`ref_read`")])
def test_reading_a_non_reference(text, spelled):
    err = _error(text)
    assert err.message == (f"type mismatch: {spelled} expects a reference, but %b has type "
                           "bool (Type-Read-Ref)")
    assert err.code is Rule.TYPE_READ_REF


def test_writing_to_a_non_reference_reads_forwards():
    err = _error("ref_write(1, 2)")
    assert err.message.startswith(
        "type mismatch: `ref_write` expects a reference to write to, but 1 has type int32")
    err = _error("let %x = 1; %x := 2")
    assert err.message.startswith(
        "type mismatch: `:=` expects a reference to write to, but %x has type int32")
    assert err.code is Rule.TYPE_WRITE_REF


def test_writing_a_value_of_the_wrong_type_names_the_reference():
    err = _error("let %r = ref(1); %r := 2f")
    assert err.message.startswith("type mismatch in Type-Write-Ref (the value written to %r): "
                                  "expected int32, found float32")


@pytest.mark.parametrize("text, subject", [("1(2)", "1"), ("let %x = 1; %x(2)", "%x"),
                                           ("(1, 2)(3)", "the callee")])
def test_calling_a_non_function(text, subject):
    err = _error(text)
    assert err.message.startswith(f"type mismatch: only functions can be called, but {subject} "
                                  "has type ")
    assert "callee the callee" not in err.message
    assert err.code is Rule.TYPE_CALL


SHIFTED = """
def @f(%x: Tensor[(3 - n,), float32]) -> Tensor[(3 - n,), float32] { %x }
def @main(%y: Tensor[(5,), float32]) { @f(%y) }
"""


def test_symbolic_mismatch_names_the_shape_variable_not_a_hole():
    err = _error(SHIFTED)
    assert err.message.startswith(
        "type mismatch in Type-Call (argument 1 of @f): expected Tensor[(3 - n), float32], "
        "found Tensor[(5), float32]: dimension 0: 3 - n == 5 has no solution with n a "
        "natural number")
    assert "_h" not in err.message


def test_unsolvable_product_names_the_shape_variable():
    err = _error("""
def @f(%x: Tensor[(n * 2,), float32]) -> Tensor[(n,), float32] {
  split(%x, indices_or_sections=2).0
}
def @main(%y: Tensor[(5,), float32]) { @f(%y) }
""")
    assert "2*n == 5 has no solution with n a natural number" in err.message
    assert "_h" not in err.message


# --- equations SymPy cannot invert ---------------------------------------------------------

def _mod_module(found: object) -> IRModule:
    n = shape_var("n")
    x = Var("x", TensorType((sympy.Mod(n, 3),), "float32"))
    f = Function((x,), x, TensorType((sympy.Mod(n, 3),), "float32"))
    y = Var("y", TensorType((found,), "float32"))
    return IRModule({"f": f, "main": Function((y,), Call(GlobalVar("f"), (y,)))})


def test_mod_equation_with_many_solutions_is_a_type_error():
    with pytest.raises(RelayTypeError) as info:
        check(_mod_module(2))
    assert info.value.message.startswith(
        "underconstrained: cannot solve the dimension equation Mod(n, 3) == 2: it does not "
        "determine n")


def test_mod_equation_without_solution_is_refuted_by_z3():
    with pytest.raises(RelayTypeError) as info:
        check(_mod_module(5))
    assert "Mod(n, 3) == 5 has no solution with n a natural number" in info.value.message


def test_equation_with_one_solution_is_solved_by_z3():
    n = shape_var("n")
    d = sympy.Min(n, 3)
    x = Var("x", TensorType((d,), "float32"))
    f = Function((x,), x, TensorType((d,), "float32"))
    y = Var("y", TensorType((2,), "float32"))
    mod = IRModule({"f": f, "main": Function((y,), Call(GlobalVar("f"), (y,)))})
    check(mod)


# --- evaluate of a bare operator (issue 9 §4) -----------------------------------------------

def test_evaluate_of_a_bare_operator():
    from interpreter import evaluate

    value = evaluate(parse_expr("add"))
    assert "add" in str(value)
    assert evaluate(parse_expr("add"), np.float32(1), np.float32(2)) == 3.0


def test_type_of_a_bare_operator_is_unchanged():
    assert pretty(type_of("add")) == "fn [T1, T2, O](T1, T2) -> O /* where Broadcast(T1, T2, O) */"


def test_a_function_returning_an_operator_keeps_its_scheme():
    assert pretty(type_of("let %f = fn () { add }; %f()(1, 2)")) == "int32"
    assert pretty(type_of("let %f = fn () { add }; %f()(1f, 2f)")) == "float32"
