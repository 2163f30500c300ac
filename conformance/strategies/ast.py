"""Random ASTs over the whole grammar (docs/architecture.md#text), well scoped, maybe ill-typed.

These strategies feed syntax-level properties: ``parse(pretty(m))`` is
alpha-equal to ``m``; every traversal accepts every node kind. They cover

* every :mod:`semantics.expr` node kind: variables, globals, constants of
  every dtype (scalars and small tensors, with ``inf``/``nan``/``-0.0`` and
  integer extremes), operators (drawn from ``semantics.ops.list_ops()`` *at
  generation time*, so operators registered later are included) called with
  attributes of every value kind (ints, floats, strings, bools, lists,
  ``None``), constructors, calls, let chains and sequencing (``e1; e2``),
  functions with annotated/unannotated parameters, return types, type
  parameters and attributes (``Primitive=1``), tuples and projections,
  ``if``, ``match``/``match?`` with nested patterns, references, ``grad``;
* **graph sharing**: an already-built compound node is reused (the same
  object reachable twice), within one function body and only where every
  variable it mentions is in scope;
* ADT definitions with random constructors (recursive and polymorphic ones
  included) in :func:`ast_modules`;
* types of every form (:mod:`conformance.strategies.types`).

Scoping invariants (what makes print∘parse meaningful): every variable use
refers to a binder in scope — a ``let`` variable is visible in its value only
when the value is a function (§3) — or is a *deliberate free variable*
named ``fv_<i>`` (one object per name, never shadowed); pattern variables are
distinct within a pattern; parameters are distinct within a parameter list;
binder names come from a small pool, so shadowing and name collisions are
common (the printer must rename where capture would occur). Upper-case names
(ADTs, constructors, type variables) are distinct within a module.

Sizes are controlled by :class:`AstConfig` (depth, widths, let-chain length).
Generation recurses in Python only up to ``max_depth`` (a small bound chosen
by the caller, independent of any user input). Every choice is ordered so
Hypothesis shrinks towards small programs: leaves before compounds, constants
before everything, ``int32`` before other dtypes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from hypothesis import strategies as st

from conformance.strategies.names import (
    adt_names,
    attr_names,
    ctor_names,
    global_names,
    local_names,
    pick,
    type_var_names,
    unique_name,
)
from conformance.strategies.types import ORDERED_DTYPES, _type
from conformance.strategies.values import scalars, tensors
from semantics.expr import (
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
)
from semantics.module import IRModule
from semantics.types import GlobalTypeVar, Kind, Type, TypeData, TypeVar

__all__ = ["AstConfig", "ast_exprs", "ast_modules", "ast_patterns", "ast_types",
           "PRELUDE_ADT_STUBS"]


@dataclass(frozen=True)
class AstConfig:
    """Size and feature controls of the random AST generator."""

    max_depth: int = 4          # nesting depth of compound expressions
    max_width: int = 3          # tuple fields, call arguments, match clauses, parameters
    max_let_chain: int = 4      # bindings in one let chain
    type_depth: int = 2         # nesting depth of generated types
    free_vars: bool = True      # deliberate free variables ``%fv_i`` (and undefined globals)
    sharing: bool = True        # reuse already-built nodes (graph bindings)
    annotations: bool = True    # type annotations on binders / return types
    ops: tuple[str, ...] | None = None  # None: the registry's operators at generation time


def _stub(name: str) -> TypeData:
    return TypeData(GlobalTypeVar(name), (TypeVar("A", Kind.Type),), ())


# The prelude's ADT heads (names and arities only) for types outside a module.
PRELUDE_ADT_STUBS = (_stub("List"), _stub("Option"), _stub("Tree"))

FUNCTION_ATTRS = (("Primitive", 1), ("Inline", 1), ("Composite", "conv_bias"),
                  ("Compiler", "ext"), ("global_symbol", "f0"))

# Strategies built once (building strategies inside draws is what makes generation slow).
_FUNCTION_ATTR_LISTS = st.lists(st.sampled_from(FUNCTION_ATTRS), max_size=2,
                                unique_by=lambda kv: kv[0])
_ATTR_SCALAR = st.one_of(
    st.integers(-8, 64), st.booleans(), st.none(),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzNCHW0123456789_", max_size=6),
)
_ATTR_VALUE = st.one_of(_ATTR_SCALAR, st.lists(st.one_of(st.integers(-4, 8), st.floats(
    allow_nan=False, allow_infinity=False, width=32)), max_size=4))
_ATTR_NAME_LISTS = st.lists(attr_names(), max_size=3, unique=True)


class _Scope:
    """Variables in scope and the nodes that may be shared here (graph bindings).

    ``pool`` holds compound nodes built in this scope; a lookup walks the
    parents up to the enclosing function body (``boundary``), so a shared
    node never crosses a function boundary nor escapes its binders' scope.
    """

    __slots__ = ("vars", "pool", "parent", "boundary", "tvars")

    def __init__(self, vars_: tuple[Var, ...], parent: _Scope | None, boundary: bool,
                 tvars: tuple[TypeVar, ...]):
        self.vars = vars_
        self.pool: list[Expr] = []
        self.parent = parent
        self.boundary = boundary
        self.tvars = tvars

    def child(self, new_vars: Sequence[Var], *, boundary: bool = False,
              tvars: Sequence[TypeVar] = ()) -> _Scope:
        return _Scope(self.vars + tuple(new_vars), self, boundary, self.tvars + tuple(tvars))

    def shareable(self) -> list[Expr]:
        out: list[Expr] = []
        s: _Scope | None = self
        while s is not None:
            out.extend(s.pool)
            if s.boundary:
                break
            s = s.parent
        return out

    def visible(self) -> list[Var]:
        """In-scope variables, innermost binding of each name only (older ones are shadowed)."""
        seen: set[str] = set()
        out: list[Var] = []
        for v in reversed(self.vars):
            if v.name_hint not in seen:
                seen.add(v.name_hint)
                out.append(v)
        return out


_LEAVES = ("const", "var", "unit", "global", "op", "ctor")
_COMPOUND = ("call_op", "tuple", "let", "proj", "if", "fn", "call", "match", "ref_create",
             "ref_read", "ref_write", "seq", "ctor_call", "grad", "tensor_const", "shared")
_SHAREABLE = (Call, Tuple, TupleGetItem, If, RefCreate, RefRead, RefWrite)


class _AstGen:
    """One generation run: holds the draw function, config, ADTs, globals and free variables."""

    def __init__(self, draw: st.DrawFn, cfg: AstConfig, adts: Sequence[TypeData],
                 global_names_: Sequence[str], upper_taken: set[str]):
        self.draw = draw
        self.cfg = cfg
        self.adts = list(adts)
        self.ctors = [c for td in adts for c in td.constructors]
        self.globals = list(global_names_)
        self.free: dict[str, Var] = {}
        self.upper_taken = upper_taken
        self._ops: list[str] | None = None

    # --- names -----------------------------------------------------------------------------
    def local_name(self) -> str:
        return self.draw(local_names())

    def distinct_locals(self, n: int) -> list[str]:
        taken: set[str] = set()
        return [unique_name(self.draw(local_names()), taken) for _ in range(n)]

    def fresh_upper(self, strategy: st.SearchStrategy[str]) -> str:
        return unique_name(self.draw(strategy), self.upper_taken)

    # --- types -----------------------------------------------------------------------------
    def type_(self, scope: _Scope) -> Type:
        return _type(self.draw, list(scope.tvars), self.adts, self.cfg.type_depth, True, True,
                     True, True)

    def maybe_type(self, scope: _Scope) -> Type | None:
        if not self.cfg.annotations or not self.draw(st.booleans()):
            return None
        return self.type_(scope)

    # --- attributes ------------------------------------------------------------------------
    def attr_value(self) -> object:
        return self.draw(_ATTR_VALUE)

    def call_attrs(self) -> Attrs:
        names = self.draw(_ATTR_NAME_LISTS)
        return Attrs({n: self.attr_value() for n in names})

    # --- expressions -----------------------------------------------------------------------
    def op_names(self) -> list[str]:
        """The operators to call: the registry's at generation time (or ``cfg.ops``)."""
        if self._ops is None:
            if self.cfg.ops is not None:
                self._ops = list(self.cfg.ops)
            else:
                from semantics.ops import list_ops

                self._ops = list_ops()
        return self._ops

    def leaf(self, scope: _Scope) -> Expr:
        d = self.draw
        kinds = ["const"]
        visible = scope.visible()
        if visible or self.cfg.free_vars:
            kinds.append("var")
        kinds.append("unit")
        if self.globals or self.cfg.free_vars:
            kinds.append("global")
        if self.op_names():
            kinds.append("op")
        if self.ctors:
            kinds.append("ctor")
        kind = pick(d, kinds)
        if kind == "const":
            dtype = pick(d, ORDERED_DTYPES)
            return Constant(d(scalars(dtype)))
        if kind == "var":
            if visible and (not self.cfg.free_vars or d(st.integers(0, 5)) > 0):
                return pick(d, visible)
            i = d(st.integers(0, 2))
            return self.free.setdefault(f"fv_{i}", Var(f"fv_{i}"))
        if kind == "unit":
            return Tuple(())
        if kind == "global":
            if self.globals and (not self.cfg.free_vars or d(st.integers(0, 5)) > 0):
                return GlobalVar(pick(d, self.globals))
            return GlobalVar(pick(d, ("undefined_g", "missing")))
        if kind == "op":
            return Op(pick(d, self.op_names()))
        ctor = pick(d, self.ctors)
        # A nullary constructor written alone parses as the call ``C()`` (§3, as in TVM).
        return ctor if ctor.inputs else Call(ctor, ())

    def expr(self, scope: _Scope, depth: int) -> Expr:
        d = self.draw
        if depth <= 0:
            return self.leaf(scope)
        kinds = ["leaf", *_COMPOUND]
        if not self.op_names():
            kinds.remove("call_op")
        if not self.ctors:
            kinds.remove("ctor_call")
            kinds.remove("match")
            kinds.append("match")  # tuple/var/wildcard patterns still work
        if not (self.cfg.sharing and scope.shareable()):
            kinds.remove("shared")
        kind = pick(d, kinds)
        sub = depth - 1
        w = self.cfg.max_width
        if kind == "leaf":
            return self.leaf(scope)
        if kind == "shared":
            return pick(d, scope.shareable())
        if kind == "tensor_const":
            return Constant(d(tensors(max_rank=2, max_size=3)))
        if kind == "let":
            return self.let_chain(scope, sub)
        if kind == "seq":
            first = self.expr(scope, sub)
            return Let(Var("_"), first, self.expr(scope, sub))
        if kind == "fn":
            return self.function(scope, sub, rec_var=None)
        if kind == "match":
            return self.match(scope, sub)
        if kind == "call_op":
            name = pick(d, self.op_names())
            from semantics.ops import get

            n = get(name).num_inputs if self.cfg.ops is None else d(st.integers(1, 2))
            n = n if n >= 0 else 1
            args = tuple(self.expr(scope, sub) for _ in range(n))
            node: Expr = Call(Op(name), args, self.call_attrs())
        elif kind == "tuple":
            n = d(st.integers(1, w))
            node = Tuple(tuple(self.expr(scope, sub) for _ in range(n)))
        elif kind == "proj":
            node = TupleGetItem(self.expr(scope, sub), d(st.integers(0, 3)))
        elif kind == "if":
            node = If(self.expr(scope, sub), self.expr(scope, sub), self.expr(scope, sub))
        elif kind == "call":
            callee = self.expr(scope, sub)
            n = d(st.integers(0, w))
            node = Call(callee, tuple(self.expr(scope, sub) for _ in range(n)))
        elif kind == "ctor_call":
            ctor = pick(d, self.ctors)
            node = Call(ctor, tuple(self.expr(scope, sub) for _ in ctor.inputs))
        elif kind == "ref_create":
            node = RefCreate(self.expr(scope, sub))
        elif kind == "ref_read":
            node = RefRead(self.expr(scope, sub))
        elif kind == "ref_write":
            node = RefWrite(self.expr(scope, sub), self.expr(scope, sub))
        else:
            node = Grad(self.expr(scope, sub))
        if isinstance(node, _SHAREABLE):
            scope.pool.append(node)
        return node

    def let_chain(self, scope: _Scope, depth: int) -> Expr:
        d = self.draw
        n = d(st.integers(1, self.cfg.max_let_chain))
        bindings: list[tuple[Var, Expr]] = []
        cur = scope
        for _ in range(n):
            var = Var(self.local_name(), self.maybe_type(cur))
            if d(st.integers(0, 3)) == 0:
                value: Expr = self.function(cur, depth, rec_var=var)
            else:
                value = self.expr(cur, depth)
            bindings.append((var, value))
            cur = cur.child([var])
        body = self.expr(cur, depth)
        for var, value in reversed(bindings):
            body = Let(var, value, body)
        return body

    def function(self, scope: _Scope, depth: int, rec_var: Var | None) -> Function:
        d = self.draw
        n_tp = d(st.integers(0, 2)) if d(st.integers(0, 3)) == 0 else 0
        tparams = [TypeVar(self.fresh_upper(type_var_names()), Kind.Type) for _ in range(n_tp)]
        inner_types = scope.child([], tvars=tparams)
        n = d(st.integers(0, self.cfg.max_width))
        params = [Var(name, self.maybe_type(inner_types)) for name in self.distinct_locals(n)]
        ret = self.maybe_type(inner_types)
        attrs = Attrs(dict(d(_FUNCTION_ATTR_LISTS)))
        extra = [rec_var] if rec_var is not None else []
        body_scope = scope.child(extra + params, boundary=True, tvars=tparams)
        body = self.expr(body_scope, depth)
        return Function(tuple(params), body, ret, tuple(tparams), attrs)

    def pattern(self, scope: _Scope, depth: int, names: set[str]) -> Pattern:
        d = self.draw
        kinds = ["wildcard", "var", "tuple"]
        if self.ctors:
            kinds.append("ctor")
        if depth <= 0:
            kinds = [k for k in kinds if k != "tuple"]
        kind = pick(d, kinds)
        if kind == "wildcard":
            return PatternWildcard()
        if kind == "var":
            name = unique_name(d(local_names()), names)
            return PatternVar(Var(name))
        if kind == "tuple":
            n = d(st.integers(0, self.cfg.max_width))
            return PatternTuple(tuple(self.pattern(scope, depth - 1, names) for _ in range(n)))
        ctor = pick(d, self.ctors)
        if depth <= 0:
            return PatternConstructor(ctor, tuple(PatternWildcard() for _ in ctor.inputs))
        return PatternConstructor(ctor, tuple(self.pattern(scope, depth - 1, names)
                                              for _ in ctor.inputs))

    def match(self, scope: _Scope, depth: int) -> Expr:
        d = self.draw
        data = self.expr(scope, depth)
        n = d(st.integers(1, self.cfg.max_width))
        clauses = []
        for _ in range(n):
            lhs = self.pattern(scope, 2, set())
            from semantics.expr import pattern_vars

            rhs = self.expr(scope.child(pattern_vars(lhs)), depth)
            clauses.append(Clause(lhs, rhs))
        return Match(data, tuple(clauses), complete=d(st.booleans()))

    # --- ADTs ------------------------------------------------------------------------------
    def adt(self, max_ctors: int = 3) -> TypeData:
        d = self.draw
        header = GlobalTypeVar(self.fresh_upper(adt_names()))
        tvars = [TypeVar(self.fresh_upper(type_var_names()), Kind.Type)
                 for _ in range(d(st.integers(0, 2)))]
        self_stub = TypeData(header, tuple(tvars), ())
        known = self.adts + [self_stub]
        ctors = []
        for tag in range(d(st.integers(1, max_ctors))):
            arity = d(st.integers(0, 2))
            inputs = tuple(_type(d, tvars, known, 1, False, False, True, True)
                           for _ in range(arity))
            ctors.append(Constructor(self.fresh_upper(ctor_names()), inputs, header, tag))
        td = TypeData(header, tuple(tvars), tuple(ctors))
        self.adts.append(td)
        self.ctors.extend(ctors)
        return td


def ast_exprs(config: AstConfig | None = None, *, adts: Sequence[TypeData] = (),
              global_names_: Sequence[str] = (), **overrides: object) -> st.SearchStrategy[Expr]:
    """Random, well-scoped expressions over the whole grammar.

    Args:
        config: size/feature controls (keyword ``overrides`` replace its fields,
            e.g. ``ast_exprs(max_depth=2)``).
        adts: ADT definitions whose constructors may appear (none by default:
            a bare expression's text can only name the prelude's).
        global_names_: names of globals that may be referenced.
    Returns:
        A strategy of :class:`semantics.expr.Expr`; free variables are named ``fv_<i>``.
    """
    cfg = replace(config or AstConfig(), **overrides)  # type: ignore[arg-type]

    @st.composite
    def build(draw: st.DrawFn) -> Expr:
        taken = {td.header.name for td in adts} | {c.name for td in adts for c in td.constructors}
        gen = _AstGen(draw, cfg, adts, global_names_, taken)
        return gen.expr(_Scope((), None, True, ()), cfg.max_depth)

    return build()


def ast_types(*, adts: Sequence[TypeData] = PRELUDE_ADT_STUBS, type_vars: Sequence[TypeVar] = (),
              max_depth: int = 3) -> st.SearchStrategy[Type]:
    """Types of every form: tensors with int/``?``/symbolic dims and every dtype (lanes too),
    tuples, functions with type parameters, ``Ref``, and type calls of ``adts`` (the prelude's
    ``List``/``Option``/``Tree`` heads by default)."""

    @st.composite
    def build(draw: st.DrawFn) -> Type:
        return _type(draw, list(type_vars), list(adts), max_depth, True, True, True, True)

    return build()


def ast_patterns(*, adts: Sequence[TypeData] = (), max_depth: int = 3
                 ) -> st.SearchStrategy[Pattern]:
    """Nested patterns (wildcard, variable, tuple, constructor of ``adts`` with its arity)."""

    @st.composite
    def build(draw: st.DrawFn) -> Pattern:
        taken = {td.header.name for td in adts}
        gen = _AstGen(draw, AstConfig(), adts, (), taken)
        return gen.pattern(_Scope((), None, True, ()), max_depth, set())

    return build()


def ast_modules(config: AstConfig | None = None, *, max_adts: int = 2, max_globals: int = 3,
                **overrides: object) -> st.SearchStrategy[IRModule]:
    """Random modules: ADT definitions (random constructors, recursive and polymorphic ones
    included) and global functions (``main`` plus up to ``max_globals`` others) whose bodies
    are random well-scoped expressions that may reference every global and constructor.
    Free variables are off by default here (a definition's text has no place for them)."""
    base = config or AstConfig(free_vars=False)
    cfg = replace(base, **overrides)  # type: ignore[arg-type]

    @st.composite
    def build(draw: st.DrawFn) -> IRModule:
        gen = _AstGen(draw, cfg, (), (), set())
        for _ in range(draw(st.integers(0, max_adts))):
            gen.adt()
        taken = {"main"}
        names = ["main"] + [unique_name(draw(global_names()), taken)
                            for _ in range(draw(st.integers(0, max_globals)))]
        gen.globals = names
        functions = {}
        for name in names:
            functions[name] = gen.function(_Scope((), None, True, ()), cfg.max_depth, None)
        return IRModule(functions, {td.header.name: td for td in gen.adts})

    return build()
