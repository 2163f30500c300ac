"""Tests of alpha_equal, types_equal, dims_equal and structural_hash (semantics/alpha.py)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from semantics.alpha import alpha_equal, dims_equal, structural_hash, types_equal
from semantics.expr import (
    Attrs,
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
    RefCreate,
    RefRead,
    Tuple,
    TupleGetItem,
    Var,
    children,
    const,
    with_children,
)
from semantics.module import IRModule
from semantics.shapes import ANY, DimSolver, shape_var
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeData,
    TypeVar,
)
from semantics.visitor import run_recursive

F32 = TensorType((), "float32")
I32 = TensorType((), "int32")
n, m = shape_var("n"), shape_var("m")


def add(a, b):
    return Call(Op("add"), (a, b))


def both(a, b):
    """alpha_equal in both directions (it must be symmetric)."""
    ab, ba = alpha_equal(a, b), alpha_equal(b, a)
    assert ab == ba
    return ab


def rename(expr):
    """A copy of ``expr`` with a fresh variable for every binder and every free variable.

    Generator-driven (no Python recursion), memoized so that sharing is kept.
    """
    scopes: dict[int, list[Var]] = {}
    free: dict[int, Var] = {}
    memo: dict[int, object] = {}

    def fresh(v):
        nv = Var(v.name_hint + "_r", v.type_annotation)
        scopes.setdefault(id(v), []).append(nv)
        return nv

    def drop(vs):
        for v in vs:
            scopes[id(v)].pop()

    def go(e):
        if type(e) is Var:
            stack = scopes.get(id(e))
            if stack:
                return stack[-1]
            return free.setdefault(id(e), Var(e.name_hint + "_f", e.type_annotation))
        if id(e) in memo:
            return memo[id(e)]
        if type(e) is Let:
            if isinstance(e.value, Function):
                nv = fresh(e.var)
                value = yield go(e.value)
            else:
                value = yield go(e.value)
                nv = fresh(e.var)
            body = yield go(e.body)
            drop([e.var])
            out = Let(nv, value, body)
        elif type(e) is Function:
            params = tuple(fresh(p) for p in e.params)
            body = yield go(e.body)
            drop(e.params)
            out = Function(params, body, e.ret_type, e.type_params, e.attrs)
        elif type(e) is Match:
            data = yield go(e.data)
            clauses = []
            for c in e.clauses:
                lhs, bound = copy_pattern(c.lhs)
                rhs = yield go(c.rhs)
                drop(bound)
                clauses.append(Clause(lhs, rhs))
            out = Match(data, tuple(clauses), e.complete)
        else:
            kids = []
            for k in children(e):
                kids.append((yield go(k)))
            out = with_children(e, tuple(kids)) if kids else e
        memo[id(e)] = out
        return out

    def copy_pattern(p):
        bound = []

        def cp(q):
            if isinstance(q, PatternVar):
                bound.append(q.var)
                return PatternVar(fresh(q.var))
            if isinstance(q, PatternConstructor):
                return PatternConstructor(q.constructor, tuple(cp(s) for s in q.patterns))
            if isinstance(q, PatternTuple):
                return PatternTuple(tuple(cp(s) for s in q.patterns))
            return PatternWildcard()

        return cp(p), bound

    return run_recursive(go(expr))


# --- renaming and scoping --------------------------------------------------------------------

def test_bound_variables_may_be_renamed():
    x, y = Var("x"), Var("y")
    assert both(Function((x,), x), Function((y,), y))
    a, b, c, d = Var("a"), Var("b"), Var("c"), Var("d")
    assert not both(Function((a, b), a), Function((c, d), d))


def test_let_and_shadowing():
    x1, x2 = Var("x"), Var("x")
    shadowed = Let(x1, const(1), Let(x2, x1, x2))
    a, b = Var("a"), Var("b")
    assert both(shadowed, Let(a, const(1), Let(b, a, b)))
    a, b = Var("a"), Var("b")
    assert not both(shadowed, Let(a, const(1), Let(b, a, a)))


def test_let_value_does_not_see_its_own_variable():
    x = Var("x")
    y, z = Var("y"), Var("z")
    # in `let %x = %x; %x` the value's %x is free (it is not the binder)
    assert both(Let(x, x, x), Let(y, z, y))
    y2 = Var("y")
    assert both(Let(x, x, x), Let(y2, y2, y2))


def test_recursive_let_sees_its_variable():
    f, g, h = Var("f"), Var("g"), Var("h")
    rec_f = Let(f, Function((), Call(f, ())), f)
    assert both(rec_f, Let(g, Function((), Call(g, ())), g))
    assert not both(rec_f, Let(g, Function((), Call(h, ())), g))


def test_pattern_variables_are_binders():
    box = GlobalTypeVar("Box")
    mk = Constructor("Mk", (I32, I32), box, 0)
    x, y, a, b = Var("x"), Var("y"), Var("a"), Var("b")
    m1 = Match(Var("v"), (Clause(PatternConstructor(mk, (PatternVar(x), PatternVar(y))), x),))
    v2 = Var("w")
    m2 = Match(v2, (Clause(PatternConstructor(mk, (PatternVar(a), PatternVar(b))), a),))
    m3 = Match(v2, (Clause(PatternConstructor(mk, (PatternVar(a), PatternVar(b))), b),))
    assert both(m1, m2)
    assert not both(m1, m3)
    m4 = Match(v2, (Clause(PatternConstructor(mk, (PatternVar(a), PatternWildcard())), a),))
    assert not both(m1, m4)
    m5 = Match(v2, (Clause(PatternConstructor(mk, (PatternVar(a), PatternVar(b))), a),),
               complete=False)
    assert not both(m2, m5)


def test_free_variables_map_bijectively():
    x, y, a = Var("x"), Var("y"), Var("a")
    assert both(Tuple((x, x)), Tuple((a, a)))
    a2, b2 = Var("a"), Var("b")
    assert not both(Tuple((x, y)), Tuple((a2, a2)))
    assert not both(Tuple((x, x)), Tuple((a2, b2)))
    assert alpha_equal(Tuple((x, y)), Tuple((x, y)), map_free_vars=False)
    assert not alpha_equal(Tuple((x,)), Tuple((a,)), map_free_vars=False)


def test_free_variable_is_not_a_bound_one():
    x, free = Var("x"), Var("z")
    y = Var("y")
    assert not both(Function((x,), x), Function((y,), free))


# --- annotations, attributes, constants ------------------------------------------------------

def test_annotations_present_on_one_side_differ():
    assert not both(Function((Var("x", F32),), const(1)), Function((Var("x"),), const(1)))
    assert not both(Function((Var("x", F32),), const(1)), Function((Var("x", I32),), const(1)))
    assert both(Function((Var("x", F32),), const(1)), Function((Var("y", F32),), const(1)))
    assert not both(Function((), const(1), F32), Function((), const(1)))
    assert not both(Let(Var("x", F32), const(1), const(2)), Let(Var("x"), const(1), const(2)))


def test_attrs_compare_by_value():
    x = Var("x")

    def call(**attrs):
        return Call(Op("nn.relu"), (x,), Attrs(attrs))

    assert both(call(a=1, b=(1, 2)), call(b=[1, 2], a=1))
    assert both(call(a=1), call(a=1.0))
    assert not both(call(a=1), call(a=True))
    assert not both(call(a=1), call(a=2))
    assert not both(call(a=1), call(b=1))
    assert not both(call(a="x"), call(a="y"))
    assert not both(call(a=None), call(a=0))
    assert both(call(a=float("nan")), call(a=float("nan")))
    assert not both(call(a=1), call())
    assert not both(Function((), x, attrs=Attrs({"Primitive": 1})), Function((), x))


def test_constants_compare_by_dtype_shape_and_bits():
    assert both(const(1.5), const(1.5))
    assert not both(const(1.5), const(1.5, "float64"))
    assert not both(const(0.0), const(-0.0))
    assert both(const(np.nan), const(np.nan))
    payload = Constant(np.array(0x7FC00001, dtype=np.uint32).view(np.float32))
    assert not both(const(np.nan), payload)
    assert not both(Constant(np.zeros((2, 3), "float32")), Constant(np.zeros((3, 2), "float32")))
    assert both(Constant(np.arange(6).reshape(2, 3)), Constant(np.arange(6).reshape(2, 3)))
    assert not both(Constant(np.arange(6)), Constant(np.arange(1, 7)))


def test_leaves_compare_by_name():
    assert both(GlobalVar("f"), GlobalVar("f"))
    assert not both(GlobalVar("f"), GlobalVar("g"))
    assert not both(Op("add"), Op("subtract"))
    box = GlobalTypeVar("Box")
    assert both(Constructor("A", (), box, 0), Constructor("A", (), box, 0))
    assert not both(Constructor("A", (), box, 0), Constructor("B", (), box, 0))
    assert not both(GlobalVar("f"), Var("f"))


def test_structure_differences():
    x = Var("x")
    assert not both(TupleGetItem(x, 0), TupleGetItem(x, 1))
    assert not both(Tuple((x,)), Tuple((x, x)))
    assert not both(If(x, const(1), const(2)), If(x, const(2), const(1)))
    assert not both(RefCreate(x), RefRead(x))
    assert not both(Call(Op("add"), (x, x), type_args=(F32,)), Call(Op("add"), (x, x)))
    assert both(Call(Op("add"), (x, x), type_args=(F32,)),
                Call(Op("add"), (x, x), type_args=(F32,)))


# --- sharing ---------------------------------------------------------------------------------

def test_sharing_is_compared():
    x = Var("x")
    shared = add(x, x)
    dag = Tuple((shared, shared))
    tree = Tuple((add(x, x), add(x, x)))
    assert both(dag, Tuple((add(x, x),) * 2))
    assert not both(dag, tree)
    assert both(tree, Tuple((add(x, x), add(x, x))))


def test_effects_make_sharing_observable():
    r = Var("r")
    read = RefRead(r)
    once = Function((r,), Tuple((read, read)))
    twice = Function((r,), Tuple((RefRead(r), RefRead(r))))
    assert not both(once, twice)


def test_doubling_chain_compares_and_hashes_in_linear_time():
    def chain(leaf):
        cur = leaf
        for _ in range(60):
            cur = add(cur, cur)
        return cur

    a, b = chain(Var("x")), chain(Var("y"))
    assert both(a, b)
    assert structural_hash(a) == structural_hash(b)
    assert not both(a, chain(const(1)))


# --- types -----------------------------------------------------------------------------------

def test_symbolic_dims():
    assert dims_equal(n + n, 2 * n)
    assert not dims_equal(n + 1, n)
    assert dims_equal(ANY, ANY)
    assert not dims_equal(ANY, 3)
    assert dims_equal(3, sympy.Integer(3))
    assert dims_equal(sympy.Symbol("n"), n)  # shape variables compare by name
    assert not dims_equal(n, m)
    assert types_equal(TensorType((n + n, 3), "float32"), TensorType((2 * n, 3), "float32"))
    assert not types_equal(TensorType((n + 1,), "float32"), TensorType((n,), "float32"))
    assert not types_equal(TensorType((n,), "float32"), TensorType((n,), "float16"))
    assert not types_equal(TensorType((n,), "float32"), TensorType((n, 1), "float32"))


def test_dims_equal_uses_the_given_solver():
    class Always(DimSolver):
        def equal(self, a, b):
            return True

    assert not dims_equal(n, m)
    assert dims_equal(n, m, Always())
    assert types_equal(TensorType((n,), "int8"), TensorType((m,), "int8"), solver=Always())


def test_type_parameters_are_bound():
    a, b = TypeVar("A"), TypeVar("B")
    assert types_equal(FuncType((a,), a, (a,)), FuncType((b,), b, (b,)))
    c, d = TypeVar("C"), TypeVar("D")
    assert not types_equal(FuncType((a, b), a, (a, b)), FuncType((c, d), d, (c, d)))
    shape_b = TypeVar("B", Kind.ShapeVar)
    assert not types_equal(FuncType((a,), a, (a,)), FuncType((shape_b,), shape_b, (shape_b,)))


def test_free_type_variables():
    a, b = TypeVar("A"), TypeVar("A")
    assert types_equal(a, a)
    assert not types_equal(a, b)
    assert types_equal(a, b, map_free_vars=True)
    assert alpha_equal(TupleType((a, a)), TupleType((b, b)))
    assert not alpha_equal(TupleType((a, a)), TupleType((a, b)))


def test_other_types():
    box = GlobalTypeVar("Box")
    assert types_equal(TupleType((F32, I32)), TupleType((F32, I32)))
    assert not types_equal(TupleType((F32, I32)), TupleType((I32, F32)))
    assert types_equal(RefType(F32), RefType(F32))
    assert not types_equal(RefType(F32), F32)
    assert types_equal(TypeCall(box, (F32,)), TypeCall(GlobalTypeVar("Box"), (F32,)))
    assert not types_equal(TypeCall(box, (F32,)), TypeCall(box, (I32,)))
    assert types_equal(box, TypeCall(GlobalTypeVar("Box"), ()))  # a parameterless ADT
    assert structural_hash(box) == structural_hash(TypeCall(box, ()))
    hole = IncompleteType()
    assert types_equal(hole, hole)
    assert not types_equal(hole, IncompleteType())
    assert alpha_equal(hole, IncompleteType())


def test_type_data():
    def adt(tv_name, ctor_name="Mk"):
        header = GlobalTypeVar("Box")
        tv = TypeVar(tv_name)
        return TypeData(header, (tv,), (Constructor(ctor_name, (tv,), header, 0),))

    assert types_equal(adt("A"), adt("B"))
    assert not types_equal(adt("A"), adt("A", "Other"))


def test_function_type_parameters_scope_over_annotations():
    a, b = TypeVar("A"), TypeVar("B")
    x, y = Var("x", a), Var("y", b)
    assert both(Function((x,), x, a, (a,)), Function((y,), y, b, (b,)))
    z = Var("z", a)
    assert not both(Function((z,), z, a, (a, b)), Function((y,), y, b, (a, b)))


# --- modules, patterns, clauses --------------------------------------------------------------

def test_modules():
    def mod(name="main", value=1):
        x = Var("x")
        return IRModule({name: Function((x,), add(x, const(value)))})

    assert both(mod(), mod())
    assert not both(mod(), mod("other"))
    assert not both(mod(), mod(value=2))
    header = GlobalTypeVar("Box")
    td = TypeData(header, (), (Constructor("Mk", (), header, 0),))
    assert not both(mod(), mod().with_type(td))
    assert structural_hash(mod()) == structural_hash(mod())


def test_patterns_and_clauses_alone():
    x, y = Var("x"), Var("y")
    assert alpha_equal(PatternTuple((PatternVar(x), PatternWildcard())),
                       PatternTuple((PatternVar(y), PatternWildcard())))
    assert not alpha_equal(PatternVar(Var("x", F32)), PatternVar(Var("y")))
    assert alpha_equal(Clause(PatternVar(x), x), Clause(PatternVar(y), y))
    assert not alpha_equal(Clause(PatternVar(x), x), Clause(PatternVar(y), Var("z")))


def test_mixed_kinds_are_unequal_and_non_nodes_rejected():
    assert not alpha_equal(Var("x"), F32)
    assert not alpha_equal(F32, Var("x"))
    with pytest.raises(TypeError):
        alpha_equal(1, 1)
    with pytest.raises(TypeError):
        structural_hash("x")
    with pytest.raises(TypeError):
        types_equal(Var("x"), F32)


# --- hashing ---------------------------------------------------------------------------------

def test_hash_ignores_bound_names_but_not_structure():
    x, y = Var("x"), Var("y")
    assert structural_hash(Function((x,), x)) == structural_hash(Function((y,), y))
    a, b = Var("a"), Var("b")
    assert structural_hash(Function((a, b), a)) != structural_hash(Function((a, b), b))
    assert structural_hash(const(1)) != structural_hash(const(2))
    assert structural_hash(TensorType((n + n,), "float32")) == \
        structural_hash(TensorType((2 * n,), "float32"))


def test_renamed_copy_is_equal_and_hashes_alike():
    f, x, v = Var("f"), Var("x"), Var("v")
    s = add(x, v)
    e = Let(f, Function((x,), Tuple((s, s))), Call(f, (const(1),)))
    copy = rename(e)
    assert copy is not e
    assert both(e, copy)
    assert structural_hash(e) == structural_hash(copy)


@settings(max_examples=60)
@given(data=st.data())
def test_hash_consistency_on_renamed_random_programs(data):
    from conformance.strategies.ast import ast_exprs

    e = data.draw(ast_exprs(max_depth=3))
    copy = rename(e)
    assert alpha_equal(e, copy)
    assert alpha_equal(copy, e)
    assert structural_hash(e) == structural_hash(copy)
