"""Alpha-equality of expressions, patterns, clauses and modules: :func:`alpha_equal`.

Part of :mod:`semantics.alpha` ("Variables", "Annotations", "Sharing",
"Modules"): an explicit worklist of node pairs with bind/unbind actions
(HOUSE_STYLE habit 4), memoized on the pair of identities; the bijection
between the two DAGs' non-leaf nodes doubles as the memo, so sharing must
correspond one to one and comparing DAGs is linear in their size.
"""

from __future__ import annotations

from typing import Any

from semantics.expr import (
    Call,
    Clause,
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
from semantics.shapes import DimSolver
from semantics.structural.leaves import LEAVES, Node, attrs_equal, constants_equal, pop_binding
from semantics.structural.types import TypeComparer, shape_var_names
from semantics.types import Type

# --- equality ---------------------------------------------------------------------------------

_CMP, _BIND, _UNBIND, _UNBIND_T, _END_DEF = 0, 1, 2, 3, 4

_Annotations = tuple[Type | None, ...]


class _Comparer(TypeComparer):
    """State of one comparison: scoped variable maps, free-variable and node bijections."""

    def __init__(self, map_free_vars: bool, solver: DimSolver | None):
        super().__init__(map_free_vars, solver)
        self.var_ab: dict[int, list[Var]] = {}
        self.var_ba: dict[int, list[Var]] = {}
        self.free_ab: dict[int, Var] = {}
        self.free_ba: dict[int, Var] = {}
        self.node_ab: dict[int, Expr] = {}
        self.node_ba: dict[int, Expr] = {}
        self.constants: dict[tuple[int, int], bool] = {}
        # the roots being compared, until their free shape names are computed
        self.roots: tuple[Expr, _Annotations, Expr, _Annotations] | None = None

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
            pop_binding(self.var_ab, id(x))
            pop_binding(self.var_ba, id(y))

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
    def exprs(self, a: Expr, b: Expr, outside_a: tuple[Type | None, ...] = (),
              outside_b: tuple[Type | None, ...] = ()) -> bool:
        """Compare two roots (``outside_*``: more annotations written outside the roots)."""
        if not self.shapes.active():   # the free shape names are found at the first function
            self.roots = (a, outside_a, b, outside_b)
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
            if action == _END_DEF:
                if not self.exit_definition():
                    return False
                continue
            cls = type(x)
            if cls is not type(y):
                return False
            if cls in LEAVES:
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

    def _leaf(self, x: Any, y: Any) -> bool:
        cls = type(x)
        if cls is Var:
            return self.var_use(x, y)
        if cls is GlobalVar:
            return x.name_hint == y.name_hint
        if cls is Op:
            return x.name == y.name
        if cls is Constructor:
            return (x.name == y.name
                    and x.belong_to.name == y.belong_to.name)
        key = (id(x), id(y))
        verdict = self.constants.get(key)
        if verdict is None:
            verdict = constants_equal(x, y)
            self.constants[key] = verdict
        return verdict

    def _push_children(self, x: Any, y: Any, stack: list[tuple[int, Any, Any]]) -> bool:
        cls = type(x)
        if cls is Call:
            if len(x.args) != len(y.args) or not attrs_equal(x.attrs, y.attrs):
                return False
            if (x.type_args or y.type_args) and \
                    not self.type_lists(x.type_args, y.type_args):
                return False
            for pair in reversed(tuple(zip((x.op, *x.args), (y.op, *y.args)))):
                stack.append((_CMP, *pair))
            return True
        if cls is Let:
            xv, yv = (x.var,), (y.var,)
            stack.append((_UNBIND, xv, yv))
            stack.append((_CMP, x.body, y.body))
            if isinstance(x.value, Function):
                stack.append((_CMP, x.value, y.value))
                stack.append((_BIND, xv, yv))
            else:
                stack.append((_BIND, xv, yv))
                stack.append((_CMP, x.value, y.value))
            return True
        if cls is Function:
            return self._push_function(x, y, stack)
        if cls is Tuple or cls is If or cls is RefCreate or cls is RefRead or \
                cls is RefWrite or cls is Grad:
            xs, ys = children(x), children(y)
            if len(xs) != len(ys):
                return False
            for pair in reversed(tuple(zip(xs, ys))):
                stack.append((_CMP, *pair))
            return True
        if cls is TupleGetItem:
            if x.index != y.index:
                return False
            stack.append((_CMP, x.tuple_value, y.tuple_value))
            return True
        if cls is Match:
            if x.complete != y.complete or \
                    len(x.clauses) != len(y.clauses):
                return False
            for c1, c2 in reversed(tuple(zip(x.clauses, y.clauses))):
                pairs: list[tuple[Var, Var]] = []
                if not self.patterns(c1.lhs, c2.lhs, pairs):
                    return False
                xs_, ys_ = [p[0] for p in pairs], [p[1] for p in pairs]
                stack.append((_UNBIND, xs_, ys_))
                stack.append((_CMP, c1.rhs, c2.rhs))
                stack.append((_BIND, xs_, ys_))
            stack.append((_CMP, x.data, y.data))
            return True
        raise TypeError(f"alpha_equal: not an expression: {cls.__name__}")

    def _push_function(self, x: Function, y: Function, stack: list[tuple[int, Any, Any]]
                       ) -> bool:
        if len(x.params) != len(y.params) or not attrs_equal(x.attrs, y.attrs):
            return False
        if not self.bind_type_vars(x.type_params, y.type_params):
            return False
        stack.append((_UNBIND_T, x.type_params, y.type_params))
        # A definition binds the shape variables written in it (semantics.structural.types).
        stack.append((_END_DEF, None, None))
        if self.roots is not None and not self.shapes.active():
            root_a, outside_a, root_b, outside_b = self.roots
            self.roots = None
            self.shapes.free_a = _outside_shape_names(root_a, outside_a)
            self.shapes.free_b = _outside_shape_names(root_b, outside_b)
        if not self.enter_definition(x.type_params, y.type_params):
            return False
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
        return self.exprs(c1.rhs, c2.rhs, tuple(x.type_annotation for x in xs),
                          tuple(y.type_annotation for y in ys))

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


def _outside_shape_names(root: Expr, extra: tuple[Type | None, ...]) -> frozenset[str]:
    """Names of the shape variables written in ``root`` outside every function literal (and in
    ``extra``): no definition binds them, so they are free (an iterative walk of the DAG)."""
    if type(root) is Function and not extra:
        return frozenset()
    found: list[Type | None] = list(extra)
    seen: set[int] = set()
    stack: list[Expr] = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        cls = type(node)
        if cls is Function:
            continue
        if cls is Var:
            found.append(node.type_annotation)  # type: ignore[attr-defined]
        elif cls is Let:
            found.append(node.var.type_annotation)  # type: ignore[attr-defined]
        elif cls is Call:
            found.extend(node.type_args)  # type: ignore[attr-defined]
        elif cls is Match:
            for clause in node.clauses:  # type: ignore[attr-defined]
                found.extend(v.type_annotation for v in pattern_vars(clause.lhs))
        stack.extend(children(node))
    return frozenset(shape_var_names(found))


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
