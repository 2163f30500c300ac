"""semantics.type_visitor: the iterative TypeVisitor / TypeMutator every type walk uses."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conformance.strategies.types import well_kinded_types
from semantics import types_equal
from semantics.analysis import free_type_vars
from semantics.shapes import shape_var
from semantics.type_visitor import TypeMutator, TypeVisitor, type_kids
from semantics.types import (
    FuncType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeVar,
)
from typechecker.unify import substitute

A = TypeVar("A", Kind.Type)
B = TypeVar("B", Kind.Type)
INT = TensorType((), "int32")


class _Identity(TypeMutator):
    pass


class _Count(TypeVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.entered: list[Type] = []

    def enter(self, t: Type) -> bool:
        self.entered.append(t)
        return True


class _IntToFloat(TypeMutator):
    def enter(self, t: Type) -> Type | None:
        if type(t) is TensorType and t.dtype == "int32":
            return TensorType(t.shape, "float32")
        return None


def _size(t: Type) -> int:
    n, stack = 0, [t]
    while stack:
        u = stack.pop()
        n += 1
        stack.extend(type_kids(u))
    return n


@given(well_kinded_types(type_vars=(A, B), max_depth=4))
def test_identity_mutation_returns_the_same_object(t):
    assert _Identity().mutate(t) is t


@given(well_kinded_types(type_vars=(A, B), max_depth=4))
def test_visitor_enters_every_node_of_a_tree_in_pre_order(t):
    walk = _Count()
    walk.visit(t)
    # a generated type is a tree unless it shares leaves (hash-consed tensors): at most size
    assert walk.entered[0] is t
    assert len(walk.entered) <= _size(t)


@given(well_kinded_types(type_vars=(A, B), max_depth=4), well_kinded_types(max_depth=2))
def test_substitution_replaces_exactly_the_free_occurrences(t, replacement):
    out = substitute(t, {A: replacement}, {})
    assert A not in free_type_vars(out)
    if A not in free_type_vars(t):
        assert types_equal(out, t)
    # substituting back a fresh variable and then the replacement again is the same
    c = TypeVar("C", Kind.Type)
    assert types_equal(substitute(substitute(t, {A: c}, {}), {c: replacement}, {}), out)


def test_binder_hides_its_parameter_from_substitution():
    inner = FuncType((A,), A, (A,))
    t = TupleType((A, inner))
    out = substitute(t, {A: INT}, {})
    assert out.fields[0] is INT
    assert out.fields[1] is inner  # bound A untouched, node reused


def test_unchanged_subtrees_are_shared_and_changed_ones_rebuilt():
    keep = TupleType((B, B))
    t = TupleType((keep, RefType(INT)))
    out = _IntToFloat().mutate(t)
    assert out is not t and out.fields[0] is keep
    assert out.fields[1].value.dtype == "float32"


def test_dims_are_rewritten_through_mutate_dim():
    n = shape_var("n")
    t = TupleType((TensorType((n, 3), "float32"), A))
    out = substitute(t, {}, {n: 7})
    assert out.fields[0].shape == (7, 3) and out.fields[1] is A


def test_deep_types_do_not_recurse():
    t: Type = A
    for _ in range(50_000):
        t = RefType(t)
    out = substitute(t, {A: INT}, {})
    walk = _Count()
    walk.visit(out)
    assert len(walk.entered) == 50_001
    assert walk.entered[-1] is INT


def test_shared_dag_is_walked_linearly():
    # 2**200 paths, 201 distinct nodes
    t: Type = A
    for _ in range(200):
        t = TupleType((t, t))
    walk = _Count()
    walk.visit(t)
    assert len(walk.entered) == 201
    out = substitute(t, {A: INT}, {})
    u = out
    for _ in range(200):
        assert u.fields[0] is u.fields[1]
        u = u.fields[0]
    assert u is INT


@given(st.integers(0, 3))
def test_bind_and_unbind_are_balanced(k):
    seen: list[int] = []

    class Scopes(TypeVisitor):
        def bind(self, params):
            super().bind(params)
            seen.append(len(self.bound))

    t: Type = A
    for _ in range(k):
        t = FuncType((t,), t, (A, B))
    walker = Scopes()
    walker.visit(t)
    assert walker.bound == {}
    assert len(seen) == k
