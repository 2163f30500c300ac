"""Structural equality up to renaming of bound variables, and a hash consistent with it.

:func:`alpha_equal` decides whether two programs (expressions, types,
patterns, clauses or modules) are the same up to the names of bound
variables (ARCHITECTURE.md §4); :func:`types_equal` compares types with
symbolic dims; :func:`structural_hash` is a hash with
``alpha_equal(a, b) ⇒ structural_hash(a) == structural_hash(b)``.

What is compared, node by node:

* **Variables.** Binding sites (``let``, parameters, pattern variables) map
  the two variables to each other for the binder's *scope* (the scoping of
  :mod:`semantics.analysis`: a ``let`` variable is in scope in its value only
  when the value is a function literal). A use compares through the innermost
  mapping in scope. Variables used outside any binder's scope are *free* and
  are mapped bijectively on first encounter (TVM's ``map_free_vars=True``), so
  ``parse(pretty(e))`` is alpha-equal to ``e`` even when ``e`` has free
  variables; ``map_free_vars=False`` requires free variables to be identical.
* **Annotations** (variable types, return types, call type arguments) are
  compared when present; a type on one side only makes the programs
  different, as in TVM's structural equality.
* **Leaves.** ``GlobalVar``, ``Op`` and ``Constructor`` by name; ``Constant``
  by dtype, shape and exact bytes (a NaN equals a NaN with the same bits,
  ``0.0`` differs from ``-0.0``); attributes by value (numbers numerically,
  so ``1`` equals ``1.0``; ``NaN`` equals ``NaN``; bools, strings, ``None``
  and lists exactly).
* **Sharing.** Graph bindings denote sharing and sharing is observable once
  references exist (RULES.md: a shared node is evaluated once per evaluation
  of its scope, so its effects happen once). The non-leaf nodes of the two
  DAGs must therefore correspond *one to one*: a node shared in ``a`` must be
  shared identically in ``b``; a DAG is not equal to its tree unfolding.
  Leaves (variables, globals, operators, constructors, constants) are values
  and their sharing is not compared.
* **Types.** Type parameters (``fn [A]``, ``fn [A](A) -> A``, ``type T[A]``)
  are bound like variables (kinds must agree); free type variables are
  mapped bijectively by :func:`alpha_equal` and compared by identity by
  :func:`types_equal` (the type checker's view: two distinct parameters are
  different types). ADTs (``GlobalTypeVar``) compare by name, and a bare
  ``GlobalTypeVar`` ``Name`` equals the argument-less type call ``Name[]``
  (both denote a parameterless ADT; the parser builds the latter). Dims compare
  symbolically (:func:`dims_equal`): ``n + n`` equals ``2*n``, free shape
  variables by name, ``?`` only equals ``?``. ``IncompleteType`` holes are
  mapped like free type variables (bijectively by :func:`alpha_equal`, by
  identity by :func:`types_equal`).
* **Modules** are equal when they define the same global and type names and
  the definitions are pairwise equal.

Algorithm: an explicit worklist of node pairs with bind/unbind actions
(HOUSE_STYLE habit 4), memoized on the pair of identities (the sharing
bijection doubles as the memo), so comparing two DAGs is linear in their
size even when the tree unfolding is exponential. Types are shallow and are
compared recursively. :func:`structural_hash` walks the same order: bound
variables hash by binding position (a counter, De Bruijn-like), free ones by
first-encounter index; every node's hash is memoized by identity. Hashes are
built from integers only (names via CRC-32), so they are stable across
processes.

Limits: results are exact for *well-formed* programs — each variable object
is bound at most once per scope chain and a node shared between scopes only
refers to variables bound in all of them (TVM's well-formedness). Symbolic
dims the SymPy-based :class:`~semantics.shapes.DimSolver` cannot decide count
as different.
"""

from __future__ import annotations

import functools
import math
import zlib
from typing import Any

import sympy

from semantics.expr import (
    EMPTY_ATTRS,
    Attrs,
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Grad,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
    pattern_vars,
)
from semantics.module import IRModule
from semantics.shapes import ANY, DEFAULT_SOLVER, Dim, DimSolver, shape_var
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeRelation,
    TypeVar,
)

__all__ = ["alpha_equal", "dims_equal", "structural_hash", "types_equal"]

Node = Any  # Expr | Type | Pattern | Clause | IRModule

_LEAVES = (Var, GlobalVar, Op, Constructor, Constant)


# --- dims -------------------------------------------------------------------------------------

def _as_sym(d: Dim) -> sympy.Expr:
    """``d`` as a SymPy expression whose symbols are canonical shape variables (by name)."""
    if isinstance(d, int):
        return sympy.Integer(d)
    e = sympy.sympify(d)
    subs = {s: shape_var(s.name) for s in e.free_symbols if s != shape_var(s.name)}
    return e.xreplace(subs) if subs else e


@functools.lru_cache(maxsize=4096)
def _default_sym_equal(e1: sympy.Expr, e2: sympy.Expr) -> bool:
    return DEFAULT_SOLVER.equal(e1, e2) is True


def dims_equal(d1: Dim, d2: Dim, solver: DimSolver | None = None) -> bool:
    """Whether two dims are provably equal: ``?`` only to ``?``, others symbolically.

    Args:
        d1, d2: dims (``int``, ``ANY`` or SymPy expressions over shape variables).
        solver: the :class:`DimSolver` deciding symbolic equalities (default:
            SymPy only); an undecided equality counts as different.
    Returns:
        True when the dims are equal.
    """
    if d1 is ANY or d2 is ANY:
        return d1 is d2
    if isinstance(d1, int) and isinstance(d2, int):
        return d1 == d2
    e1, e2 = _as_sym(d1), _as_sym(d2)
    if e1 == e2:
        return True
    if solver is None or solver is DEFAULT_SOLVER:
        return _default_sym_equal(e1, e2)
    return solver.equal(e1, e2) is True


@functools.lru_cache(maxsize=4096)
def _sym_key(e: sympy.Expr) -> int:
    """Hash key of a symbolic dim: its value when it simplifies to an integer, else a constant.

    Every symbolic dim that is not a constant shares one key, so that dims the
    solver proves equal (``n + n``, ``2*n``) always hash alike.
    """
    simple = sympy.simplify(e)
    if simple.is_Integer:
        return int(simple)
    return -2


def _dim_key(d: Dim) -> int:
    if d is ANY:
        return -1
    if isinstance(d, int):
        return d
    return _sym_key(_as_sym(d))


# --- attribute values -------------------------------------------------------------------------

def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _attr_value_equal(x: object, y: object) -> bool:
    if _is_number(x) and _is_number(y):
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            return True
        return x == y
    if isinstance(x, tuple) and isinstance(y, tuple):
        return len(x) == len(y) and all(_attr_value_equal(a, b) for a, b in zip(x, y))
    return type(x) is type(y) and x == y


def _attrs_equal(a: Attrs | None, b: Attrs | None) -> bool:
    if a is b:
        return True
    if a is None or b is None:
        return False
    if not isinstance(a, Attrs) or not isinstance(b, Attrs):
        return bool(a == b)
    if len(a) != len(b):
        return False
    if not len(a):
        return True
    for key, value in a.items():
        if key not in b or not _attr_value_equal(value, b[key]):
            return False
    return True


@functools.lru_cache(maxsize=8192)
def _str_hash(s: str) -> int:
    return zlib.crc32(s.encode("utf-8", "surrogatepass"))


def _attr_value_hash(v: object) -> int:
    if isinstance(v, bool):
        return hash((1, int(v)))
    if _is_number(v):
        if isinstance(v, float) and math.isnan(v):
            return 7
        return hash(v)  # hash(1) == hash(1.0): numbers compare numerically
    if isinstance(v, str):
        return hash((2, _str_hash(v)))
    if v is None:
        return 3
    if isinstance(v, tuple):
        return hash((4, *(_attr_value_hash(x) for x in v)))
    return 5


def _attrs_hash(a: Attrs | None) -> int:
    if a is None or a is EMPTY_ATTRS or not isinstance(a, Attrs) or not len(a):
        return 0
    return hash(tuple(sorted((_str_hash(k), _attr_value_hash(v)) for k, v in a.items())))


def _relation_name(rel: object) -> str:
    return str(getattr(rel, "name", rel))


def _constants_equal(c1: Constant, c2: Constant) -> bool:
    d1, d2 = c1.data, c2.data
    return d1.dtype == d2.dtype and d1.shape == d2.shape and d1.tobytes() == d2.tobytes()


# --- equality ---------------------------------------------------------------------------------

_CMP, _BIND, _UNBIND, _UNBIND_T = 0, 1, 2, 3


class _Comparer:
    """State of one comparison: scoped variable maps, free-variable and node bijections."""

    def __init__(self, map_free_vars: bool, solver: DimSolver | None):
        self.map_free = map_free_vars
        self.solver = solver
        self.var_ab: dict[int, list[Var]] = {}
        self.var_ba: dict[int, list[Var]] = {}
        self.free_ab: dict[int, Var] = {}
        self.free_ba: dict[int, Var] = {}
        self.tv_ab: dict[int, list[TypeVar]] = {}
        self.tv_ba: dict[int, list[TypeVar]] = {}
        self.free_tv_ab: dict[int, TypeVar] = {}
        self.free_tv_ba: dict[int, TypeVar] = {}
        self.node_ab: dict[int, Expr] = {}
        self.node_ba: dict[int, Expr] = {}
        self.constants: dict[tuple[int, int], bool] = {}

    # variables ------------------------------------------------------------------------------
    def bind_vars(self, xs: tuple[Var, ...] | list[Var], ys: tuple[Var, ...] | list[Var]) -> bool:
        if len(xs) != len(ys):
            return False
        for x, y in zip(xs, ys):
            if not self.opt_types(x.type_annotation, y.type_annotation):
                return False
        for x, y in zip(xs, ys):
            self.var_ab.setdefault(id(x), []).append(y)
            self.var_ba.setdefault(id(y), []).append(x)
        return True

    def unbind_vars(self, xs: tuple[Var, ...] | list[Var], ys: tuple[Var, ...] | list[Var]
                    ) -> None:
        for x, y in zip(xs, ys):
            _pop(self.var_ab, id(x))
            _pop(self.var_ba, id(y))

    def var_use(self, x: Var, y: Var) -> bool:
        sx, sy = self.var_ab.get(id(x)), self.var_ba.get(id(y))
        if sx or sy:
            return bool(sx) and bool(sy) and sx[-1] is y and sy[-1] is x  # type: ignore[index]
        if not self.map_free:
            return x is y
        fx, fy = self.free_ab.get(id(x)), self.free_ba.get(id(y))
        if fx is None and fy is None:
            if not self.opt_types(x.type_annotation, y.type_annotation):
                return False
            self.free_ab[id(x)] = y
            self.free_ba[id(y)] = x
            return True
        return fx is y and fy is x

    # types ----------------------------------------------------------------------------------
    def bind_type_vars(self, xs: tuple[TypeVar, ...], ys: tuple[TypeVar, ...]) -> bool:
        if len(xs) != len(ys) or any(x.kind != y.kind for x, y in zip(xs, ys)):
            return False
        for x, y in zip(xs, ys):
            self.tv_ab.setdefault(id(x), []).append(y)
            self.tv_ba.setdefault(id(y), []).append(x)
        return True

    def unbind_type_vars(self, xs: tuple[TypeVar, ...], ys: tuple[TypeVar, ...]) -> None:
        for x, y in zip(xs, ys):
            _pop(self.tv_ab, id(x))
            _pop(self.tv_ba, id(y))

    def opt_types(self, t1: Type | None, t2: Type | None) -> bool:
        if t1 is None or t2 is None:
            return t1 is t2
        return self.types(t1, t2)

    def type_var(self, x: TypeVar, y: TypeVar) -> bool:
        if x.kind != y.kind:
            return False
        sx, sy = self.tv_ab.get(id(x)), self.tv_ba.get(id(y))
        if sx or sy:
            return bool(sx) and bool(sy) and sx[-1] is y and sy[-1] is x  # type: ignore[index]
        if not self.map_free:
            return x is y
        fx, fy = self.free_tv_ab.get(id(x)), self.free_tv_ba.get(id(y))
        if fx is None and fy is None:
            self.free_tv_ab[id(x)] = y
            self.free_tv_ba[id(y)] = x
            return True
        return fx is y and fy is x

    def types(self, t1: Type, t2: Type) -> bool:
        cls = type(t1)
        if cls is not type(t2):
            return _nullary_adt_name(t1) is not None and \
                _nullary_adt_name(t1) == _nullary_adt_name(t2)
        if cls is TensorType:
            if t1 is t2:
                return True
            return (t1.dtype == t2.dtype and len(t1.shape) == len(t2.shape)  # type: ignore
                    and all(dims_equal(a, b, self.solver)
                            for a, b in zip(t1.shape, t2.shape)))  # type: ignore[attr-defined]
        if cls is TupleType:
            return self.type_lists(t1.fields, t2.fields)  # type: ignore[attr-defined]
        if cls is TypeVar:
            return self.type_var(t1, t2)  # type: ignore[arg-type]
        if cls is GlobalTypeVar:
            return t1.name == t2.name  # type: ignore[attr-defined]
        if cls is TypeCall:
            return (t1.func.name == t2.func.name  # type: ignore[attr-defined]
                    and self.type_lists(t1.args, t2.args))  # type: ignore[attr-defined]
        if cls is RefType:
            return self.types(t1.value, t2.value)  # type: ignore[attr-defined]
        if cls is FuncType:
            return self._func_types(t1, t2)  # type: ignore[arg-type]
        if cls is TypeRelation:
            return (_relation_name(t1.relation) == _relation_name(t2.relation)  # type: ignore
                    and t1.num_inputs == t2.num_inputs  # type: ignore[attr-defined]
                    and _attrs_equal(t1.attrs, t2.attrs)  # type: ignore[attr-defined]
                    and self.type_lists(t1.args, t2.args))  # type: ignore[attr-defined]
        if cls is TypeData:
            return self._type_data(t1, t2)  # type: ignore[arg-type]
        if cls is IncompleteType:
            if t1 is t2:
                return True
            if not self.map_free or t1.kind != t2.kind:  # type: ignore[attr-defined]
                return False
            fx, fy = self.free_tv_ab.get(id(t1)), self.free_tv_ba.get(id(t2))
            if fx is None and fy is None:
                self.free_tv_ab[id(t1)] = t2  # type: ignore[assignment]
                self.free_tv_ba[id(t2)] = t1  # type: ignore[assignment]
                return True
            return fx is t2 and fy is t1
        raise TypeError(f"types_equal: not a type: {cls.__name__}")

    def type_lists(self, xs: tuple[Type, ...], ys: tuple[Type, ...]) -> bool:
        return len(xs) == len(ys) and all(self.types(x, y) for x, y in zip(xs, ys))

    def _func_types(self, t1: FuncType, t2: FuncType) -> bool:
        if len(t1.arg_types) != len(t2.arg_types) or \
                len(t1.type_constraints) != len(t2.type_constraints):
            return False
        if not self.bind_type_vars(t1.type_params, t2.type_params):
            return False
        try:
            return (self.type_lists(t1.arg_types, t2.arg_types)
                    and self.types(t1.ret_type, t2.ret_type)
                    and self.type_lists(t1.type_constraints, t2.type_constraints))
        finally:
            self.unbind_type_vars(t1.type_params, t2.type_params)

    def _type_data(self, d1: TypeData, d2: TypeData) -> bool:
        if d1.header.name != d2.header.name or len(d1.constructors) != len(d2.constructors):
            return False
        if not self.bind_type_vars(d1.type_vars, d2.type_vars):
            return False
        try:
            for c1, c2 in zip(d1.constructors, d2.constructors):
                if c1.name != c2.name or c1.tag != c2.tag or \
                        not self.type_lists(c1.inputs, c2.inputs):
                    return False
            return True
        finally:
            self.unbind_type_vars(d1.type_vars, d2.type_vars)

    # patterns -------------------------------------------------------------------------------
    def patterns(self, p1: Pattern, p2: Pattern, pairs: list[tuple[Var, Var]]) -> bool:
        """Compare pattern shapes; collect the (a, b) variable pairs they bind, left to right."""
        local_ab: dict[int, Var] = {}
        local_ba: dict[int, Var] = {}
        stack: list[tuple[Pattern, Pattern]] = [(p1, p2)]
        while stack:
            a, b = stack.pop()
            cls = type(a)
            if cls is not type(b):
                return False
            if cls is PatternWildcard:
                continue
            if cls is PatternVar:
                x, y = a.var, b.var  # type: ignore[attr-defined]
                if local_ab.get(id(x), y) is not y or local_ba.get(id(y), x) is not x:
                    return False
                if id(x) not in local_ab:
                    local_ab[id(x)] = y
                    local_ba[id(y)] = x
                    pairs.append((x, y))
                continue
            if cls is PatternConstructor:
                c1, c2 = a.constructor, b.constructor  # type: ignore[attr-defined]
                if c1.name != c2.name or len(a.patterns) != len(b.patterns):  # type: ignore
                    return False
                stack.extend(reversed(tuple(zip(a.patterns, b.patterns))))  # type: ignore
                continue
            if cls is PatternTuple:
                if len(a.patterns) != len(b.patterns):  # type: ignore[attr-defined]
                    return False
                stack.extend(reversed(tuple(zip(a.patterns, b.patterns))))  # type: ignore
                continue
            raise TypeError(f"alpha_equal: not a pattern: {cls.__name__}")
        return True

    # expressions ----------------------------------------------------------------------------
    def exprs(self, a: Expr, b: Expr) -> bool:
        stack: list[tuple[int, Any, Any]] = [(_CMP, a, b)]
        while stack:
            action, x, y = stack.pop()
            if action == _UNBIND:
                self.unbind_vars(x, y)
                continue
            if action == _BIND:
                if not self.bind_vars(x, y):
                    return False
                continue
            if action == _UNBIND_T:
                self.unbind_type_vars(x, y)
                continue
            cls = type(x)
            if cls is not type(y):
                return False
            if cls in _LEAVES:
                if not self._leaf(x, y):
                    return False
                continue
            # Non-leaf nodes must correspond one to one (sharing); the bijection is the memo.
            seen = self.node_ab.get(id(x))
            if seen is not None:
                if seen is y:
                    continue
                return False
            if id(y) in self.node_ba:
                return False
            self.node_ab[id(x)] = y
            self.node_ba[id(y)] = x
            if not self._push_children(x, y, stack):
                return False
        return True

    def _leaf(self, x: Expr, y: Expr) -> bool:
        cls = type(x)
        if cls is Var:
            return self.var_use(x, y)  # type: ignore[arg-type]
        if cls is GlobalVar:
            return x.name_hint == y.name_hint  # type: ignore[attr-defined]
        if cls is Op:
            return x.name == y.name  # type: ignore[attr-defined]
        if cls is Constructor:
            return (x.name == y.name  # type: ignore[attr-defined]
                    and x.belong_to.name == y.belong_to.name)  # type: ignore[attr-defined]
        key = (id(x), id(y))
        verdict = self.constants.get(key)
        if verdict is None:
            verdict = _constants_equal(x, y)  # type: ignore[arg-type]
            self.constants[key] = verdict
        return verdict

    def _push_children(self, x: Expr, y: Expr, stack: list[tuple[int, Any, Any]]) -> bool:
        cls = type(x)
        if cls is Call:
            if len(x.args) != len(y.args) or not _attrs_equal(x.attrs, y.attrs):  # type: ignore
                return False
            if (x.type_args or y.type_args) and \
                    not self.type_lists(x.type_args, y.type_args):  # type: ignore[attr-defined]
                return False
            for pair in reversed(tuple(zip((x.op, *x.args), (y.op, *y.args)))):  # type: ignore
                stack.append((_CMP, *pair))
            return True
        if cls is Let:
            xv, yv = (x.var,), (y.var,)  # type: ignore[attr-defined]
            stack.append((_UNBIND, xv, yv))
            stack.append((_CMP, x.body, y.body))  # type: ignore[attr-defined]
            if isinstance(x.value, Function):  # type: ignore[attr-defined]
                stack.append((_CMP, x.value, y.value))  # type: ignore[attr-defined]
                stack.append((_BIND, xv, yv))
            else:
                stack.append((_BIND, xv, yv))
                stack.append((_CMP, x.value, y.value))  # type: ignore[attr-defined]
            return True
        if cls is Function:
            return self._push_function(x, y, stack)  # type: ignore[arg-type]
        if cls is Tuple or cls is If or cls is RefCreate or cls is RefRead or \
                cls is RefWrite or cls is Grad:
            xs, ys = children(x), children(y)
            if len(xs) != len(ys):
                return False
            for pair in reversed(tuple(zip(xs, ys))):
                stack.append((_CMP, *pair))
            return True
        if cls is TupleGetItem:
            if x.index != y.index:  # type: ignore[attr-defined]
                return False
            stack.append((_CMP, x.tuple_value, y.tuple_value))  # type: ignore[attr-defined]
            return True
        if cls is Match:
            if x.complete != y.complete or \
                    len(x.clauses) != len(y.clauses):  # type: ignore[attr-defined]
                return False
            for c1, c2 in reversed(tuple(zip(x.clauses, y.clauses))):  # type: ignore
                pairs: list[tuple[Var, Var]] = []
                if not self.patterns(c1.lhs, c2.lhs, pairs):
                    return False
                xs_, ys_ = [p[0] for p in pairs], [p[1] for p in pairs]
                stack.append((_UNBIND, xs_, ys_))
                stack.append((_CMP, c1.rhs, c2.rhs))
                stack.append((_BIND, xs_, ys_))
            stack.append((_CMP, x.data, y.data))  # type: ignore[attr-defined]
            return True
        raise TypeError(f"alpha_equal: not an expression: {cls.__name__}")

    def _push_function(self, x: Function, y: Function, stack: list[tuple[int, Any, Any]]
                       ) -> bool:
        if len(x.params) != len(y.params) or not _attrs_equal(x.attrs, y.attrs):
            return False
        if not self.bind_type_vars(x.type_params, y.type_params):
            return False
        stack.append((_UNBIND_T, x.type_params, y.type_params))
        if not self.opt_types(x.ret_type, y.ret_type):
            return False
        stack.append((_UNBIND, x.params, y.params))
        stack.append((_CMP, x.body, y.body))
        stack.append((_BIND, x.params, y.params))
        return True

    # entry points ---------------------------------------------------------------------------
    def clauses(self, c1: Clause, c2: Clause) -> bool:
        pairs: list[tuple[Var, Var]] = []
        if not self.patterns(c1.lhs, c2.lhs, pairs):
            return False
        xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
        if not self.bind_vars(xs, ys):
            return False
        return self.exprs(c1.rhs, c2.rhs)

    def modules(self, m1: IRModule, m2: IRModule) -> bool:
        if set(m1.functions) != set(m2.functions) or set(m1.types) != set(m2.types):
            return False
        for name in sorted(m1.types):
            if not self.types(m1.types[name], m2.types[name]):
                return False
        for name in sorted(m1.functions):
            if not self.exprs(m1.functions[name], m2.functions[name]):
                return False
        return True


def _nullary_adt_name(t: Type) -> str | None:
    """``Name`` for the types ``Name`` (a bare ``GlobalTypeVar``) and ``Name[]`` (a
    ``TypeCall`` without arguments), which both denote a parameterless ADT; else None."""
    if type(t) is GlobalTypeVar:
        return t.name  # type: ignore[attr-defined]
    if type(t) is TypeCall and not t.args:  # type: ignore[attr-defined]
        return t.func.name  # type: ignore[attr-defined]
    return None


def _pop(table: dict[int, list[Any]], key: int) -> None:
    stack = table[key]
    stack.pop()
    if not stack:
        del table[key]


def alpha_equal(a: Node, b: Node, *, map_free_vars: bool = True) -> bool:
    """Whether ``a`` and ``b`` are equal up to renaming of bound variables.

    Args:
        a, b: two expressions, types, patterns, clauses or modules.
        map_free_vars: map free variables (and free type variables) of ``a``
            to those of ``b`` bijectively (default); if False they must be
            the same objects.
    Returns:
        True when equal (see the module docstring for what is compared,
        including sharing).
    Raises:
        TypeError: an argument is not a Relay node.
    """
    cmp = _Comparer(map_free_vars, None)
    if isinstance(a, IRModule):
        return isinstance(b, IRModule) and cmp.modules(a, b)
    if isinstance(a, Expr):
        return isinstance(b, Expr) and cmp.exprs(a, b)
    if isinstance(a, Type):
        return isinstance(b, Type) and cmp.types(a, b)
    if isinstance(a, Pattern):
        if not isinstance(b, Pattern):
            return False
        pairs: list[tuple[Var, Var]] = []
        return cmp.patterns(a, b, pairs) and cmp.bind_vars([p[0] for p in pairs],
                                                           [p[1] for p in pairs])
    if isinstance(a, Clause):
        return isinstance(b, Clause) and cmp.clauses(a, b)
    raise TypeError(f"alpha_equal: not a Relay node: {type(a).__name__}")


def types_equal(t1: Type, t2: Type, *, map_free_vars: bool = False,
                solver: DimSolver | None = None) -> bool:
    """Whether two types are equal: dims symbolically, bound type parameters up to renaming.

    Args:
        t1, t2: types.
        map_free_vars: map free type variables bijectively instead of by identity.
        solver: decides symbolic dims (default: SymPy; the type checker may pass its Z3 solver).
    Returns:
        True when equal.
    Raises:
        TypeError: an argument is not a type.
    """
    if not isinstance(t1, Type) or not isinstance(t2, Type):
        raise TypeError("types_equal: arguments must be types")
    return _Comparer(map_free_vars, solver).types(t1, t2)


# --- hashing ----------------------------------------------------------------------------------

_H_ENTER, _H_EXIT, _H_BIND, _H_UNBIND, _H_UNBIND_T = 0, 1, 2, 3, 4

_TAG = {cls: i + 11 for i, cls in enumerate((
    Var, GlobalVar, Op, Constructor, Constant, Call, Let, Function, Tuple, TupleGetItem, If, Match,
    RefCreate, RefRead, RefWrite, Grad, TensorType, TupleType, FuncType, RefType, TypeVar,
    GlobalTypeVar, TypeCall, IncompleteType, TypeRelation, TypeData, PatternWildcard, PatternVar,
    PatternConstructor, PatternTuple, Clause, IRModule))}


class _Hasher:
    """Hash state: binder counters (scoped), first-encounter numbering of free variables."""

    def __init__(self) -> None:
        self.counter = 0
        self.bound: dict[int, list[int]] = {}
        self.free: dict[int, int] = {}
        self.tv_bound: dict[int, list[int]] = {}
        self.tv_free: dict[int, int] = {}
        self.memo: dict[int, int] = {}
        self.var_ann: dict[int, int] = {}

    # types ----------------------------------------------------------------------------------
    def opt_type(self, t: Type | None) -> int:
        return 0 if t is None else self.type(t)

    def bind_tvs(self, tvs: tuple[TypeVar, ...]) -> None:
        for tv in tvs:
            self.counter += 1
            self.tv_bound.setdefault(id(tv), []).append(self.counter)

    def unbind_tvs(self, tvs: tuple[TypeVar, ...]) -> None:
        for tv in tvs:
            _pop(self.tv_bound, id(tv))

    def type(self, t: Type) -> int:
        cls = type(t)
        tag = _TAG.get(cls, 0)
        if cls is TensorType:
            return hash((tag, _str_hash(t.dtype), *(_dim_key(d) for d in t.shape)))  # type: ignore
        if cls is TupleType:
            return hash((tag, *(self.type(f) for f in t.fields)))  # type: ignore[attr-defined]
        if cls is TypeVar:
            scope = self.tv_bound.get(id(t))
            kind = _str_hash(t.kind.value)  # type: ignore[attr-defined]
            if scope:
                return hash((tag, 1, scope[-1], kind))
            index = self.tv_free.setdefault(id(t), len(self.tv_free))
            return hash((tag, 2, index, kind))
        if cls is GlobalTypeVar:  # hashes as the TypeCall ``Name[]`` it equals
            return hash((_TAG[TypeCall], _str_hash(t.name)))  # type: ignore[attr-defined]
        if cls is TypeCall:
            return hash((tag, _str_hash(t.func.name),  # type: ignore[attr-defined]
                         *(self.type(a) for a in t.args)))  # type: ignore[attr-defined]
        if cls is RefType:
            return hash((tag, self.type(t.value)))  # type: ignore[attr-defined]
        if cls is FuncType:
            self.bind_tvs(t.type_params)  # type: ignore[attr-defined]
            try:
                return hash((tag, len(t.type_params),  # type: ignore[attr-defined]
                             *(self.type(a) for a in t.arg_types),  # type: ignore[attr-defined]
                             self.type(t.ret_type),  # type: ignore[attr-defined]
                             *(self.type(c) for c in t.type_constraints)))  # type: ignore
            finally:
                self.unbind_tvs(t.type_params)  # type: ignore[attr-defined]
        if cls is TypeRelation:
            return hash((tag, _str_hash(_relation_name(t.relation)),  # type: ignore
                         t.num_inputs, *(self.type(a) for a in t.args)))  # type: ignore
        if cls is TypeData:
            self.bind_tvs(t.type_vars)  # type: ignore[attr-defined]
            try:
                return hash((tag, _str_hash(t.header.name), len(t.type_vars),  # type: ignore
                             *(hash((_str_hash(c.name), c.tag,
                                     *(self.type(i) for i in c.inputs)))
                               for c in t.constructors)))  # type: ignore[attr-defined]
            finally:
                self.unbind_tvs(t.type_vars)  # type: ignore[attr-defined]
        if cls is IncompleteType:
            return tag
        raise TypeError(f"structural_hash: not a type: {cls.__name__}")

    # patterns -------------------------------------------------------------------------------
    def pattern(self, p: Pattern) -> int:
        """Hash of a pattern's shape and variable annotations (variables are binders)."""
        out: list[int] = []
        stack: list[Pattern] = [p]
        while stack:
            q = stack.pop()
            cls = type(q)
            out.append(_TAG.get(cls, 0))
            if cls is PatternVar:
                out.append(self.opt_type(q.var.type_annotation))  # type: ignore[attr-defined]
            elif cls is PatternConstructor:
                out.append(_str_hash(q.constructor.name))  # type: ignore[attr-defined]
                out.append(len(q.patterns))  # type: ignore[attr-defined]
                stack.extend(reversed(q.patterns))  # type: ignore[attr-defined]
            elif cls is PatternTuple:
                out.append(len(q.patterns))  # type: ignore[attr-defined]
                stack.extend(reversed(q.patterns))  # type: ignore[attr-defined]
            elif cls is not PatternWildcard:
                raise TypeError(f"structural_hash: not a pattern: {cls.__name__}")
        return hash(tuple(out))

    # expressions ----------------------------------------------------------------------------
    def bind(self, vs: tuple[Var, ...] | list[Var]) -> None:
        for v in vs:
            self.counter += 1
            self.bound.setdefault(id(v), []).append(self.counter)

    def unbind(self, vs: tuple[Var, ...] | list[Var]) -> None:
        for v in vs:
            _pop(self.bound, id(v))

    def leaf(self, node: Expr) -> int:
        cls = type(node)
        tag = _TAG[cls]
        if cls is Var:
            scope = self.bound.get(id(node))
            if scope:
                return hash((tag, 1, scope[-1]))
            index = self.free.get(id(node))
            if index is None:
                index = self.free[id(node)] = len(self.free)
                self.var_ann[id(node)] = self.opt_type(node.type_annotation)  # type: ignore
            return hash((tag, 2, index, self.var_ann[id(node)]))
        if cls is GlobalVar:
            return hash((tag, _str_hash(node.name_hint)))  # type: ignore[attr-defined]
        if cls is Op or cls is Constructor:
            return hash((tag, _str_hash(node.name)))  # type: ignore[attr-defined]
        known = self.memo.get(id(node))
        if known is None:
            data = node.data  # type: ignore[attr-defined]
            known = hash((tag, _str_hash(data.dtype.str), *data.shape,
                          zlib.crc32(data.tobytes())))
            self.memo[id(node)] = known
        return known

    def expr(self, root: Expr) -> int:
        values: list[int] = []
        stack: list[tuple[int, Any, Any]] = [(_H_ENTER, root, None)]
        while stack:
            action, node, extra = stack.pop()
            if action == _H_EXIT:
                count, head = extra
                if count:
                    kids = values[-count:]
                    del values[-count:]
                else:
                    kids = []
                h = hash((*head, *kids))
                self.memo[id(node)] = h
                values.append(h)
                continue
            if action == _H_BIND:
                self.bind(node)
                continue
            if action == _H_UNBIND:
                self.unbind(node)
                continue
            if action == _H_UNBIND_T:
                self.unbind_tvs(node)
                continue
            cls = type(node)
            if cls in _LEAVES:
                values.append(self.leaf(node))
                continue
            known = self.memo.get(id(node))
            if known is not None:
                values.append(known)
                continue
            self._enter(node, stack)
        return values[-1]

    def _enter(self, node: Expr, stack: list[tuple[int, Any, Any]]) -> None:
        cls = type(node)
        tag = _TAG.get(cls)
        if tag is None:
            raise TypeError(f"structural_hash: not an expression: {cls.__name__}")
        if cls is Let:
            var = (node.var,)  # type: ignore[attr-defined]
            head = (tag, self.opt_type(node.var.type_annotation))  # type: ignore[attr-defined]
            stack.append((_H_EXIT, node, (2, head)))
            stack.append((_H_UNBIND, var, None))
            stack.append((_H_ENTER, node.body, None))  # type: ignore[attr-defined]
            if isinstance(node.value, Function):  # type: ignore[attr-defined]
                stack.append((_H_ENTER, node.value, None))  # type: ignore[attr-defined]
                stack.append((_H_BIND, var, None))
            else:
                stack.append((_H_BIND, var, None))
                stack.append((_H_ENTER, node.value, None))  # type: ignore[attr-defined]
            return
        if cls is Function:
            fn: Function = node  # type: ignore[assignment]
            self.bind_tvs(fn.type_params)
            head = (tag, len(fn.type_params), *(_str_hash(tv.kind.value) for tv in fn.type_params),
                    *(self.opt_type(p.type_annotation) for p in fn.params),
                    self.opt_type(fn.ret_type), _attrs_hash(fn.attrs))
            stack.append((_H_EXIT, node, (1, head)))
            stack.append((_H_UNBIND_T, fn.type_params, None))
            stack.append((_H_UNBIND, fn.params, None))
            stack.append((_H_ENTER, fn.body, None))
            stack.append((_H_BIND, fn.params, None))
            return
        if cls is Match:
            m: Match = node  # type: ignore[assignment]
            head = (tag, int(m.complete), *(self.pattern(c.lhs) for c in m.clauses))
            stack.append((_H_EXIT, node, (1 + len(m.clauses), head)))
            for clause in reversed(m.clauses):
                bound = pattern_vars(clause.lhs)
                stack.append((_H_UNBIND, bound, None))
                stack.append((_H_ENTER, clause.rhs, None))
                stack.append((_H_BIND, bound, None))
            stack.append((_H_ENTER, m.data, None))
            return
        if cls is Call:
            head = (tag, len(node.args), _attrs_hash(node.attrs),  # type: ignore[attr-defined]
                    *(self.type(t) for t in node.type_args))  # type: ignore[attr-defined]
        elif cls is TupleGetItem:
            head = (tag, node.index)  # type: ignore[attr-defined]
        else:
            head = (tag,)
        kids = children(node)
        stack.append((_H_EXIT, node, (len(kids), head)))
        for kid in reversed(kids):
            stack.append((_H_ENTER, kid, None))

    def module(self, mod: IRModule) -> int:
        parts: list[int] = [_TAG[IRModule]]
        for name in sorted(mod.types):
            parts.append(_str_hash(name))
            parts.append(self.type(mod.types[name]))
        for name in sorted(mod.functions):
            parts.append(_str_hash(name))
            parts.append(self.expr(mod.functions[name]))
        return hash(tuple(parts))


def structural_hash(node: Node) -> int:
    """A hash consistent with :func:`alpha_equal`: alpha-equal nodes hash alike.

    Bound variables hash by binding position, free variables by first
    encounter, shared nodes once (linear in the DAG). Symbolic dims that are
    not constants share one hash key (they may be equal in non-obvious ways).

    Args:
        node: an expression, type, pattern, clause or module.
    Returns:
        An integer, stable across processes.
    Raises:
        TypeError: ``node`` is not a Relay node.
    """
    h = _Hasher()
    if isinstance(node, IRModule):
        return h.module(node)
    if isinstance(node, Expr):
        return h.expr(node)
    if isinstance(node, Type):
        return h.type(node)
    if isinstance(node, Pattern):
        return h.pattern(node)
    if isinstance(node, Clause):
        head = h.pattern(node.lhs)
        h.bind(pattern_vars(node.lhs))
        return hash((_TAG[Clause], head, h.expr(node.rhs)))
    raise TypeError(f"structural_hash: not a Relay node: {type(node).__name__}")
