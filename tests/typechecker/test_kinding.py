"""Kinding (RULES.md, "Kinding"): written types and ADT definitions."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from tc_util import assert_type, check, expect_type_error, type_of

from semantics.expr import Call, Constructor, Function, Var, const
from semantics.module import IRModule
from semantics.shapes import ANY, shape_var
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    Kind,
    RefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeData,
    TypeRelation,
    TypeVar,
)
from typechecker.kinding import Kinder, check_dim

n = shape_var("n")


def annotated(t) -> Function:
    x = Var("x", t)
    return Function((x,), x)


def list_module() -> IRModule:
    from semantics.prelude import prelude_module

    return prelude_module()


# --- Kind-BaseType / Kind-Shape / Kind-Tensor ---------------------------------------------

@pytest.mark.parametrize("dtype", ["bool", "int8", "uint64", "float16", "float32x4"])
def test_base_types(dtype):
    type_of(annotated(TensorType((2,), dtype)))


@pytest.mark.parametrize("dtype", ["float", "int7", "complex64", ""])
def test_bad_base_types(dtype):
    expect_type_error(type_of, annotated(TensorType((2,), dtype)), prefix="ill-kinded type",
                      rule="Kind-BaseType")


@pytest.mark.parametrize("dim", [0, 5, ANY, n, 2 * n + 1, sympy.floor(n / 2), np.int64(3)])
def test_good_dims(dim):
    type_of(annotated(TensorType((dim, 2), "float32")))


@pytest.mark.parametrize("dim", [-1, True, 2.5, n / 2, sympy.Symbol("q"), sympy.Rational(1, 2),
                                 "n"])
def test_bad_dims(dim):
    expect_type_error(type_of, annotated(TensorType((dim,), "float32")),
                      prefix="ill-kinded type", rule="Kind-Shape")


def test_numpy_dims_are_normalized():
    assert check_dim(np.int32(4), None) == 4 and type(check_dim(np.int32(4), None)) is int
    assert check_dim(sympy.Integer(3), None) == 3


# --- Kind-Tuple / Kind-Function / Kind-Ref ------------------------------------------------

def test_nested_types():
    t = FuncType((TupleType((RefType(TensorType((), "int32")),)),), TupleType(()))
    type_of(annotated(t))


def test_ill_kinded_type_inside_a_tuple():
    t = TupleType((TensorType((-2,), "float32"),))
    expect_type_error(type_of, annotated(t), prefix="ill-kinded type", rule="Kind-Shape")


def test_function_type_params_are_in_scope():
    a = TypeVar("A")
    type_of(annotated(FuncType((a,), a, (a,))))


def test_function_type_params_must_be_type_variables():
    bad = FuncType((), TensorType((), "int32"), (TensorType((), "int32"),))  # type: ignore
    expect_type_error(type_of, annotated(bad), prefix="ill-kinded type", rule="Kind-Function")


def test_relation_constraint_in_a_function_type():
    from semantics import ops

    a, b = TypeVar("A"), TypeVar("B")
    rel = TypeRelation(ops.get("add").relation, (a, a, b), 2, None)
    x = Var("x", FuncType((a,), b, (a, b), (rel,)))
    type_of(Function((x,), const(1)))
    # a use instantiates the scheme and its relation: Broadcast(float32, float32) -> float32
    t = type_of(Function((x,), Call(x, (const(1.0),))))
    assert t.ret_type.dtype == "float32"
    bad = TypeRelation("not a relation", (a,), 0, None)
    expect_type_error(type_of, annotated(FuncType((a,), b, (a, b), (bad,))),
                      prefix="ill-kinded type", rule="Kind-Relation")


def test_relation_is_not_a_type():
    from semantics import ops

    rel = TypeRelation(ops.get("add").relation, (), 0, None)
    expect_type_error(type_of, annotated(rel), prefix="ill-kinded type", rule="Kind-Relation")


# --- Kind-TypeVar ---------------------------------------------------------------------------

def test_type_variable_out_of_scope():
    expect_type_error(type_of, annotated(TypeVar("A")), prefix="ill-kinded type",
                      rule="Kind-TypeVar", contains=("not in scope",))


def test_type_variable_of_the_wrong_kind():
    s = TypeVar("S", Kind.ShapeVar)
    x = Var("x", s)
    expect_type_error(type_of, Function((x,), x, None, (s,)), prefix="ill-kinded type")


def test_type_variable_of_an_enclosing_function_is_in_scope():
    a = TypeVar("A")
    y = Var("y", a)
    inner = Function((y,), y)
    x = Var("x", a)
    outer = Function((x,), Call(inner, (x,)), a, (a,))
    assert_type(outer, "fn [A](A) -> A")


# --- Kind-TypeCall ---------------------------------------------------------------------------

def test_type_call_arity():
    lst = GlobalTypeVar("List")
    mod = list_module()
    type_of(annotated(TypeCall(lst, (TensorType((), "int32"),))), mod)
    expect_type_error(type_of, annotated(TypeCall(lst, ())), mod, prefix="ill-kinded type",
                      rule="Kind-TypeCall", contains=("List expects 1 type argument, found 0",))
    expect_type_error(type_of, annotated(lst), mod, prefix="ill-kinded type",
                      rule="Kind-TypeCall")


def test_unknown_adt():
    expect_type_error(type_of, annotated(TypeCall(GlobalTypeVar("Nope"), ())),
                      prefix="ill-kinded type", rule="Kind-TypeCall",
                      contains=("undefined type Nope",))


def test_bare_name_of_an_adt_without_parameters():
    unit = GlobalTypeVar("U")
    u = Constructor("MkU", (), unit, 0)
    td = TypeData(unit, (), (u,))
    x = Var("x", unit)
    mod = IRModule({"main": Function((x,), x)}, {"U": td})
    check(mod)
    y = Var("y", TypeCall(unit, ()))
    mod2 = IRModule({"main": Function((y,), Call(Function((x,), x), (y,)))}, {"U": td})
    check(mod2)


def test_explicit_type_arguments_are_kind_checked():
    a = TypeVar("A")
    x = Var("x", a)
    ident = Function((x,), x, a, (a,))
    call = Call(ident, (const(1),), type_args=(TensorType((-1,), "int32"),))
    expect_type_error(type_of, call, prefix="ill-kinded type", rule="Kind-Shape")


def test_return_type_is_kind_checked():
    x = Var("x")
    fn = Function((x,), x, TensorType((), "bogus"))
    expect_type_error(type_of, fn, prefix="ill-kinded type", rule="Kind-BaseType")


# --- Kind-ADT --------------------------------------------------------------------------------

def _adt(name, tvars, ctors):
    header = GlobalTypeVar(name)
    built = tuple(Constructor(c, inputs(header), header, i) for i, (c, inputs) in enumerate(ctors))
    return TypeData(header, tvars, built)


def test_well_kinded_adt():
    a = TypeVar("A")
    td = _adt("Box", (a,), [("Box0", lambda h: (a, TypeCall(h, (a,))))])
    Kinder({"Box": td}).check_adts()


def test_adt_field_with_unbound_type_variable():
    a, b = TypeVar("A"), TypeVar("B")
    td = _adt("Bad", (a,), [("Mk", lambda h: (b,))])
    mod = IRModule({}, {"Bad": td})
    expect_type_error(check, mod, prefix="ill-kinded type", rule="Kind-TypeVar")


def test_adt_field_with_shape_variable():
    td = _adt("Bad", (), [("Mk", lambda h: (TensorType((n,), "float32"),))])
    expect_type_error(check, IRModule({}, {"Bad": td}), prefix="ill-kinded type",
                      rule="Kind-ADT", contains=("shape variable n",))


def test_adt_with_duplicate_parameters():
    a = TypeVar("A")
    td = _adt("Bad", (a, a), [("Mk", lambda h: ())])
    expect_type_error(check, IRModule({}, {"Bad": td}), prefix="ill-kinded type",
                      rule="Kind-ADT")


def test_adt_referring_to_another_adt_with_wrong_arity():
    a = TypeVar("A")
    other = _adt("Other", (a,), [("O", lambda h: (a,))])
    td = _adt("Bad", (), [("Mk", lambda h: (TypeCall(GlobalTypeVar("Other"), ()),))])
    expect_type_error(check, IRModule({}, {"Bad": td, "Other": other}),
                      prefix="ill-kinded type", rule="Kind-TypeCall")


def test_constructor_belonging_to_another_adt():
    header = GlobalTypeVar("T")
    ctor = Constructor("Mk", (), GlobalTypeVar("Elsewhere"), 0)
    expect_type_error(check, IRModule({}, {"T": TypeData(header, (), (ctor,))}),
                      prefix="ill-kinded type", rule="Kind-ADT")
