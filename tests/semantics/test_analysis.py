"""Tests of the variable analyses (semantics/analysis.py)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

from semantics.analysis import (
    all_vars,
    bound_vars,
    constructors_used,
    free_shape_vars,
    free_type_vars,
    free_vars,
    global_vars,
)
from semantics.expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefWrite,
    Tuple,
    Var,
    const,
)
from semantics.shapes import ANY, shape_var
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    RefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeData,
    TypeVar,
)

I32 = TensorType((), "int32")


def add(a, b):
    return Call(Op("add"), (a, b))


def ids(vs):
    return [id(v) for v in vs]


def test_free_vars_in_first_occurrence_order():
    x, y, z = Var("x"), Var("y"), Var("z")
    e = Tuple((add(y, x), z, x, y))
    assert ids(free_vars(e)) == ids([y, x, z])


def test_function_parameters_are_bound():
    x, y = Var("x"), Var("y")
    assert ids(free_vars(Function((x,), add(x, y)))) == ids([y])
    assert free_vars(Function((x, y), add(x, y))) == []


def test_let_scoping():
    x, y = Var("x"), Var("y")
    assert ids(free_vars(Let(x, y, x))) == ids([y])
    # a non-function value does not see its own variable
    assert ids(free_vars(Let(x, add(x, const(1)), x))) == ids([x])
    # a function value does (recursion)
    f = Var("f")
    assert free_vars(Let(f, Function((), Call(f, ())), f)) == []


def test_variable_used_after_its_scope_is_free():
    x = Var("x")
    e = Tuple((Function((x,), x), x))
    assert ids(free_vars(e)) == ids([x])


def test_match_binds_pattern_variables_in_its_clause_only():
    box = GlobalTypeVar("Box")
    mk = Constructor("Mk", (I32, I32), box, 0)
    a, b, d = Var("a"), Var("b"), Var("d")
    m = Match(d, (
        Clause(PatternConstructor(mk, (PatternVar(a), PatternWildcard())), add(a, b)),
        Clause(PatternTuple((PatternVar(b),)), a),
    ))
    assert ids(free_vars(m)) == ids([d, b, a])
    assert ids(bound_vars(m)) == ids([a, b])
    assert ids(all_vars(m)) == ids([d, a, b])


def test_shared_nodes_are_walked_once():
    x, y = Var("x"), Var("y")
    s = add(x, y)
    cur = s
    for _ in range(60):
        cur = add(cur, cur)
    assert ids(free_vars(cur)) == ids([x, y])


def test_bound_and_all_vars():
    x, y, f = Var("x"), Var("y"), Var("f")
    e = Let(f, Function((x,), add(x, y)), Call(f, (const(1),)))
    assert ids(bound_vars(e)) == ids([f, x])
    assert ids(all_vars(e)) == ids([f, x, y])


def test_free_type_vars_of_types():
    a, b = TypeVar("A"), TypeVar("B")
    assert free_type_vars(FuncType((a,), b, (a,))) == [b]
    assert free_type_vars(TupleType((RefType(a), b, a))) == [a, b]
    header = GlobalTypeVar("Box")
    td = TypeData(header, (a,), (Constructor("Mk", (a, b), header, 0),))
    assert free_type_vars(td) == [b]


def test_free_type_vars_of_expressions():
    a, b = TypeVar("A"), TypeVar("B")
    x = Var("x", a)
    fn = Function((x,), x, b, (a,))
    assert free_type_vars(fn) == [b]
    y = Var("y", TupleType((a,)))
    assert free_type_vars(Let(y, const(1), y)) == [a]
    assert free_type_vars(Call(Op("zeros"), (), type_args=(b,))) == [b]
    assert free_type_vars(Clause(PatternVar(Var("p", a)), const(1))) == [a]


def test_free_shape_vars():
    n, m = shape_var("n"), shape_var("m")
    t = TupleType((TensorType((n, 2 * m, ANY, 3), "float32"), TensorType((n + 1,), "int8")))
    assert free_shape_vars(t) == ["n", "m"]
    x = Var("x", TensorType((sympy.floor(n / 2),), "float32"))
    assert free_shape_vars(Function((x,), x)) == ["n"]


def test_global_vars_and_constructors():
    box = GlobalTypeVar("Box")
    mk = Constructor("Mk", (I32,), box, 0)
    empty = Constructor("Empty", (), box, 1)
    e = Tuple((Call(GlobalVar("f"), (Call(mk, (const(1),)),)), GlobalVar("g"), GlobalVar("f"),
               Match(Var("v"), (Clause(PatternConstructor(empty), const(0)),))))
    assert [g.name_hint for g in global_vars(e)] == ["f", "g"]
    assert [c.name for c in constructors_used(e)] == ["Mk", "Empty"]


def test_every_node_kind_is_accepted():
    x = Var("x")
    e = If(x, RefWrite(x, Constant(np.zeros(2))), Tuple(()))
    assert ids(free_vars(e)) == ids([x])
    assert free_type_vars(e) == []
    assert bound_vars(e) == []


def test_analyses_reject_non_nodes():
    with pytest.raises(TypeError):
        free_type_vars(3)
    with pytest.raises(TypeError):
        free_shape_vars("x")


def test_type_call_of_a_type_var_argument():
    a = TypeVar("A")
    assert free_type_vars(TypeCall(GlobalTypeVar("List"), (a,))) == [a]
