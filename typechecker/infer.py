"""Constraint generation: one case per typing rule (RULES.md, "Typing"; paper §3.3.3 step 1).

:class:`Inferencer` walks an expression and gives every node a type that
may still contain inference variables (``IncompleteType``) and dimension
holes, emitting unifications (solved at once by the union-find of
:mod:`typechecker.unify`) and relation constraints (handed to the
:class:`~typechecker.solver.Solver`, which runs them as soon as their inputs
are known). Step 2 (solving to a fixpoint) and step 3 (annotating a new
program) are driven by :mod:`typechecker.program` and
:mod:`typechecker.annotate`.

**Traversal.** No Python recursion over expressions: each case is a
generator whose premises are ``yield child`` and which receives the child's
type; :meth:`Inferencer.run` drives the generators on an explicit stack. A
leaf (variable, global, constant, operator, constructor) or an already
inferred node is answered without pushing a generator, so a node shared by
several parents (graph bindings) is inferred once and the walk is linear in
the size of the DAG. Let spines are iterated inside one case, and
variables are looked up in a dict keyed by the ``Var`` object (binders are
unique objects), saved and restored around scopes for shadowing.

**Raw types and uses.** The type recorded for a node is its *raw* type,
which for a polymorphic value (a generalized let-bound function, a global,
a constructor, an operator, a function literal with type parameters) is a
type scheme: a ``FuncType`` with ``type_params``. Every *use* of a child's
type goes through :meth:`Inferencer.use`, which instantiates a scheme with
fresh variables (or with a call's explicit type arguments) — the
instantiation half of let-polymorphism. Global schemes are also implicitly
quantified over the shape variables of their signature: :attr:`shape_params`
records them per scheme object, and instantiation replaces each by a fresh
dimension hole. Only a ``let`` body passes its raw type through unchanged.

**Generalization** (Type-Let-Rec with a function value; globals in
:mod:`typechecker.program`) uses levels: after the value is inferred and
the solver has run, the variables of its type that are deeper than the
current level and do not occur in an unsolved constraint become fresh
``TypeVar``\\ s (bound in the union-find, so the body's node types mention
them) and are listed in the scheme's ``type_params``. Variables in unsolved
relation constraints stay monomorphic — like Haskell's monomorphism
restriction — so that a later use can still determine them.

Limit: a node shared between a let-bound function's body and code outside
it is typed once, in the first context reached (the body); if its type is
generalized there, the outer use sees the generalized type variables.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import sympy

from semantics.dtypes import SCALAR_DTYPES
from semantics.errors import RelayTypeError
from semantics.expr import (
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
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from semantics.ops.registry import Relation
from semantics.shapes import shape_var
from semantics.span import Span
from semantics.types import (
    FuncType,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeRelation,
    TypeVar,
    type_children,
    unit_type,
)
from typechecker import messages
from typechecker.kinding import ConstructorInfo, Kinder, shape_vars_of
from typechecker.patterns import bind_pattern
from typechecker.shape_solver import SHAPE_SOLVER
from typechecker.solver import Solver
from typechecker.unify import TypeStore, substitute

Case = Generator[Any, Type, Type]

BOOL = TensorType((), "bool")
UNIT = unit_type()

RULE_OF_NODE: dict[type, str] = {
    Var: "Type-Var", GlobalVar: "Type-Global", Constant: "Type-Constant", Op: "Type-Op",
    Constructor: "Type-ADT-Constructor", Call: "Type-Call", Let: "Type-Let",
    Function: "Type-Function", Tuple: "Type-Product", TupleGetItem: "Type-Projection",
    If: "Type-If", Match: "Type-ADT-Match", RefCreate: "Type-Ref", RefRead: "Type-Read-Ref",
    RefWrite: "Type-Write-Ref", Grad: "Type-Gradient",
}


@dataclass
class GlobalInfo:
    """A global definition during inference: its monomorphic type, then its scheme."""

    name: str
    fn: Function | None
    type: Type
    declared: bool
    generalized: bool = False


# --- the checker's own relations ------------------------------------------------------------

def _projection(args: tuple[Type, ...], index: Any, solver: Any) -> Type | None:
    # [Type-Projection]  Γ ⊢ e : (T0, ..., Tn-1)   0 <= i < n   ⟹   Γ ⊢ e.i : Ti
    t = args[0]
    if isinstance(t, IncompleteType):
        return None
    if not isinstance(t, TupleType):
        raise RelayTypeError(messages.mismatch(
            "Type-Projection", f"projection .{index}", "a tuple", messages.show(t)))
    if not 0 <= index < len(t.fields):
        raise RelayTypeError(messages.mismatch(
            "Type-Projection", f"projection .{index}", f"a tuple of at least {index + 1} fields",
            messages.show(t)))
    return t.fields[index]


def _gradient(args: tuple[Type, ...], attrs: Any, solver: Any) -> Type | None:
    # [Type-Gradient]  Γ ⊢ f : fn(T1, ..., Tn) -> O
    #                  ⟹   Γ ⊢ grad(f) : fn(T1, ..., Tn) -> (O, (T1, ..., Tn))
    f = args[0]
    if isinstance(f, IncompleteType):
        return None
    if not isinstance(f, FuncType) or f.type_params:
        raise RelayTypeError(messages.mismatch(
            "Type-Gradient", "argument of grad", "a monomorphic function fn(T1, ..., Tn) -> O",
            messages.show(f)))
    return FuncType(f.arg_types, TupleType((f.ret_type, TupleType(f.arg_types))))


PROJECTION = Relation("Projection", _projection, "the checker's tuple projection relation")
GRADIENT = Relation("Gradient", _gradient, "the checker's Type-Gradient relation")


class Inferencer:
    """Constraint generation over one program (see the module docstring)."""

    def __init__(self, kinder: Kinder):
        self.store = TypeStore(SHAPE_SOLVER)
        self.solver = Solver(self.store)
        self.kinder = kinder
        self.env: dict[Var, Type] = {}
        self.var_types: dict[Var, Type] = {}
        self.memo: dict[int, Type] = {}
        self.delta: dict[TypeVar, int] = {}
        self.globals: dict[str, GlobalInfo] = {}
        self.shape_params: dict[int, tuple[FuncType, tuple[sympy.Symbol, ...]]] = {}
        self.matches: list[tuple[Match, Type]] = []
        self.op_node_types: dict[int, Type] = {}
        self.nodes: list[Expr] = []
        self.default_span: Span | None = None
        self.load_fallback: Callable[[Inferencer], None] | None = None
        self._op_schemes: dict[str, tuple[FuncType, RelayTypeError | None]] = {}
        self._nullary: set[int] = set()
        self._op_errors: dict[int, RelayTypeError] = {}
        self._cases: dict[type, Callable[[Any], Case]] = {
            Call: self._infer_call, Let: self._infer_let, Function: self._infer_function,
            Tuple: self._infer_tuple, TupleGetItem: self._infer_tuple_getitem,
            If: self._infer_if, Match: self._infer_match, RefCreate: self._infer_ref_create,
            RefRead: self._infer_ref_read, RefWrite: self._infer_ref_write,
            Grad: self._infer_grad,
        }

    # --- the driver ---------------------------------------------------------------------------
    def run(self, root: Expr) -> Type:
        """The raw type of ``root`` (premises run on an explicit stack; shared nodes once)."""
        t = self._fast(root)
        if t is not None:
            return t
        stack: list[tuple[Case, Expr]] = [(self._case(root), root)]
        value: Any = None
        memo = self.memo
        while stack:
            gen, node = stack[-1]
            try:
                request = gen.send(value)
            except StopIteration as stop:
                stack.pop()
                value = stop.value
                memo[id(node)] = value
                self.nodes.append(node)
                continue
            t = self._fast(request)
            if t is not None:
                value = t
            else:
                stack.append((self._case(request), request))
                value = None
        return value

    def _case(self, node: Any) -> Case:
        case = self._cases.get(type(node))
        if case is None:
            raise RelayTypeError(f"malformed program: {type(node).__name__} is not an expression",
                                 getattr(node, "span", None) or self.default_span)
        return case(node)

    def _fast(self, node: Any) -> Type | None:
        """The type of a leaf or of an already-inferred node, without a generator."""
        tn = type(node)
        if tn is Var:
            # [Type-Var]  %x : T ∈ Γ   ⟹   Γ ⊢ %x : T
            t = self.env.get(node)
            if t is None:
                raise RelayTypeError(messages.unbound_variable("%" + str(node.name_hint)),
                                     node.span or self.default_span, code="Type-Var")
            return t
        t = self.memo.get(id(node))
        if t is not None:
            return t
        if tn is Constant:
            t = self._constant_type(node)
        elif tn is GlobalVar:
            t = self._global_type(node)
        elif tn is Constructor:
            # [Type-ADT-Constructor]  C(T1..Tn) ∈ D[V1..Vk]   ⟹   Γ ⊢ C : fn[V1..Vk](T1..Tn) -> D[V..]
            info = self.constructor_info(node, "Type-ADT-Constructor", node.span)
            t = info.scheme
            if not info.fields:
                self._nullary.add(id(t))
        elif tn is Op:
            t = self._op_scheme(node)[0]
        else:
            return None
        self.memo[id(node)] = t
        return t

    # --- helpers used by the cases ------------------------------------------------------------
    def annotation(self, t: Any, span: Span | None) -> Type:
        """A written type, kind-checked under the type variables in scope (Kind-* rules)."""
        if not isinstance(t, Type):
            raise RelayTypeError(messages.ill_kinded("Kind-Tensor", f"{t!r} is not a type"),
                                 span or self.default_span, code="Kind-Tensor")
        t = self.kinder.check(t, self.delta, span or self.default_span)
        if type(t) is TensorType:
            store = self.store
            if all(type(d) is int for d in t.shape) or not any(
                    store.dim_has_holes(d) for d in t.shape):
                return store.tensor(t.shape, t.dtype)
            return t
        self._adopt_incomplete(t)
        return t

    def _adopt_incomplete(self, t: Type) -> None:
        for b in self.store.blockers(t, deep=True):
            if type(b) is IncompleteType:
                self.store.adopt(b)

    def unify(self, expected: Type, found: Type, rule: str, what: str,
              span: Span | None) -> None:
        self.store.unify(expected, found, rule, what, span or self.default_span)
        if self.solver.queue:
            self.solver.solve()

    def check_against(self, ann: Type, node: Any, raw: Type, rule: str, what: str,
                      span: Span | None) -> None:
        """Unify a written type with a node's type (a polymorphic annotation is compared as is)."""
        if type(ann) is FuncType and ann.type_params:
            self.unify(ann, raw, rule, what, span)
        else:
            self.unify(ann, self.use(node, raw), rule, what, span)

    def bind(self, var: Var, t: Type) -> tuple[Var, Type | None]:
        """Bind ``var`` in Γ; returns what to restore when its scope ends."""
        old = self.env.get(var)
        self.env[var] = t
        self.var_types[var] = t
        return (var, old)

    def restore(self, saved: list[tuple[Var, Type | None]]) -> None:
        for var, old in reversed(saved):
            if old is None:
                self.env.pop(var, None)
            else:
                self.env[var] = old

    def push_type_params(self, params: Any, span: Span | None) -> tuple[TypeVar, ...]:
        if not isinstance(params, tuple) or not all(isinstance(p, TypeVar) for p in params):
            raise RelayTypeError(messages.ill_kinded(
                "Kind-TypeVar", "type parameters must be type variables"),
                span or self.default_span, code="Kind-TypeVar")
        for p in params:
            self.delta[p] = self.delta.get(p, 0) + 1
        return params

    def pop_type_params(self, params: tuple[TypeVar, ...]) -> None:
        for p in params:
            n = self.delta[p] - 1
            if n:
                self.delta[p] = n
            else:
                del self.delta[p]

    def use(self, node: Any, t: Type, explicit: tuple[Type, ...] = (),
            span: Span | None = None, callee: bool = False) -> Type:
        """The type of one use of ``node``: a scheme is instantiated (fresh or ``explicit``).

        A nullary constructor's scheme used other than as a callee is the
        value ``C()`` (Type-ADT-Constructor), so it becomes ``D[U...]``.
        """
        t = self.store.find(t)
        if type(t) is FuncType:
            entry = self.shape_params.get(id(t))
            nullary_value = not callee and id(t) in self._nullary
            if t.type_params or entry is not None:
                inst = self.instantiate(t, entry[1] if entry else (), explicit, node,
                                        span or getattr(node, "span", None))
                return inst.ret_type if nullary_value else inst  # type: ignore[attr-defined]
            if nullary_value:
                return t.ret_type
        if explicit:
            raise RelayTypeError(messages.arity("Type-Instantiate", "explicit type arguments", 0,
                                                len(explicit), "type argument"),
                                 span or self.default_span, code="Type-Instantiate")
        return t

    def instantiate(self, scheme: FuncType, shape_vars: tuple[sympy.Symbol, ...],
                    explicit: tuple[Type, ...], node: Any, span: Span | None) -> Type:
        """``scheme`` with its type parameters and shape variables replaced by fresh ones."""
        # [Type-Instantiate]  σ = fn[V..](T..) -> O where R..   θ = [U../V.., d../s..]   ⊨ θ(Ri)
        #                     ⟹   σ ≼ fn(θ(T1), ..., θ(Tn)) -> θ(O)
        store = self.store
        params = scheme.type_params
        if len(explicit) > len(params):
            raise RelayTypeError(messages.arity("Type-Instantiate", "explicit type arguments",
                                                len(params), len(explicit), "type argument"),
                                 span or self.default_span, code="Type-Instantiate")
        error = self._op_errors.get(id(scheme))
        if error is not None:
            raise RelayTypeError(error.message, span or self.default_span, code="Type-Op")
        tmap: dict[TypeVar, Type] = {}
        for i, p in enumerate(params):
            tmap[p] = explicit[i] if i < len(explicit) else store.fresh()
        dmap = {s: store.fresh_hole() for s in shape_vars}
        body = store.resolve(FuncType(scheme.arg_types, scheme.ret_type, (),
                                      scheme.type_constraints))
        inst = substitute(body, tmap, dmap)
        assert isinstance(inst, FuncType)
        label = _describe(node)
        rule = "Type-Op" if scheme.type_constraints else "Type-Call"
        for c in inst.type_constraints:
            n = c.num_inputs
            self.solver.relate(c.relation, tuple(c.args[:n]), c.attrs, rule=rule,
                               span=span or self.default_span, label=label, output=c.args[n])
        out = FuncType(inst.arg_types, inst.ret_type)
        return out

    def constructor_info(self, ctor: Any, rule: str, span: Span | None) -> ConstructorInfo:
        name = getattr(ctor, "name", None)
        info = self.kinder.constructor(name) if isinstance(name, str) else None
        if info is None:
            raise RelayTypeError(messages.undefined_constructor(str(name), rule),
                                 span or self.default_span, code=rule)
        return info

    def _constant_type(self, node: Constant) -> Type:
        # [Type-Constant]  Δ ⊢ s : Shape   Δ ⊢ bt : BaseType   ⟹   Γ ⊢ const(v, s, bt) : Tensor[s, bt]
        data = node.data
        np_dtype = getattr(data, "dtype", None)
        dtype = _DTYPE_NAMES.get(np_dtype)
        if dtype is None:
            dtype = getattr(np_dtype, "name", None)
            if dtype in SCALAR_DTYPES:
                _DTYPE_NAMES[np_dtype] = dtype
        if dtype not in SCALAR_DTYPES:
            raise RelayTypeError(messages.ill_kinded(
                "Kind-BaseType", f"a constant of element type {dtype} is not a Relay tensor"),
                node.span or self.default_span, code="Kind-BaseType")
        return self.store.tensor(tuple(int(d) for d in data.shape), dtype)

    def _global_type(self, node: GlobalVar) -> Type:
        # [Type-Global]  @g : T ∈ module   ⟹   Γ ⊢ @g : T
        info = self.globals.get(node.name_hint) if isinstance(node.name_hint, str) else None
        if info is None and self.load_fallback is not None:
            load, self.load_fallback = self.load_fallback, None
            load(self)
            info = self.globals.get(node.name_hint) if isinstance(node.name_hint, str) else None
        if info is None:
            raise RelayTypeError(messages.undefined_global("@" + str(node.name_hint)),
                                 node.span or self.default_span, code="Type-Global")
        return info.type

    def _opdef(self, node: Op, span: Span | None) -> Any:
        from semantics import ops

        try:
            return ops.get(node.name)
        except RelayTypeError as err:
            raise RelayTypeError(messages.with_rule(err.message, "Type-Op"),
                                 span or node.span or self.default_span, code="Type-Op") from None

    def _op_scheme(self, node: Op) -> tuple[FuncType, RelayTypeError | None]:
        # [Type-Op]  op : fn[T1..Tn, O](T1, ..., Tn) -> O where Rel_op(T1, ..., Tn, O)
        entry = self._op_schemes.get(node.name)
        if entry is not None:
            return entry
        opdef = self._opdef(node, node.span)
        n = opdef.num_inputs
        error = None
        if n < 0:
            n = 1
            error = RelayTypeError(messages.with_rule(
                f"operator {node.name} takes a variable number of arguments and cannot be used "
                "as a value", "Type-Op"))
        try:
            attrs = opdef.normalize_attrs({})
        except RelayTypeError as err:
            attrs = None
            error = error or RelayTypeError(messages.with_rule(
                f"{err.message}; operator {node.name} cannot be used as a value without "
                "attributes", "Type-Op"))
        params = tuple(TypeVar(f"T{i + 1}") for i in range(n)) + (TypeVar("O"),)
        relation = TypeRelation(opdef.relation, params, n, attrs)
        scheme = FuncType(params[:n], params[n], params, (relation,))
        entry = (scheme, error)
        self._op_schemes[node.name] = entry
        if error is not None:
            self._op_errors[id(scheme)] = error
        return entry

    def _site(self, node: Any, fallback: Span | None) -> Span | None:
        """Where to point for a sub-expression: variables carry their binder's span."""
        if type(node) is Var:
            return fallback or self.default_span
        return getattr(node, "span", None) or fallback or self.default_span

    def declared_type(self, fn: Function) -> FuncType | None:
        """The type a function literal declares when every parameter and the result are annotated."""
        if fn.ret_type is None or not all(
                isinstance(p, Var) and p.type_annotation is not None for p in fn.params):
            return None
        params = self.push_type_params(fn.type_params, fn.span)
        try:
            args = tuple(self.annotation(p.type_annotation, p.span or fn.span) for p in fn.params)
            ret = self.annotation(fn.ret_type, fn.span)
        finally:
            self.pop_type_params(params)
        t = FuncType(args, ret, params)
        if self.store.blockers(t, deep=False) or any(
                self.store.blockers(a, deep=True) for a in (*args, ret)):
            return None
        return t

    # --- generalization -----------------------------------------------------------------------
    def generalize(self, t: Type, level: int, explicit: tuple[TypeVar, ...],
                   holes_to_shape_vars: bool,
                   group: dict[TypeVar, None] | None = None) -> Type:
        """Quantify the variables of ``t`` deeper than ``level`` that no constraint still needs.

        ``group`` collects the type variables created for a set of definitions generalized
        together (a strongly connected component of globals): a variable they share becomes
        one parameter, listed by every member whose type mentions it.
        """
        store = self.store
        t = store.resolve(t)
        if type(t) is not FuncType:
            return t
        group = {} if group is None else group
        excluded = self.solver.pending_blockers() if self.solver.pending else set()
        tvars: list[IncompleteType] = []
        holes: list[Any] = []
        seen: set[int] = set()
        for b in store.blockers(t, deep=True):
            if id(b) in seen:
                continue
            seen.add(id(b))
            if b in excluded:
                if type(b) is IncompleteType and store.level.get(b, 0) > level:
                    store.level[b] = level
                continue
            if type(b) is IncompleteType:
                if store.level.get(b, 0) > level:
                    tvars.append(b)
            elif holes_to_shape_vars and store.hole_level.get(b, 0) > level:
                holes.append(b)
        taken = {p.name for p in explicit} | {p.name for p in group}
        for v in tvars:
            tv = TypeVar(_fresh_name(taken, _TYPE_NAMES))
            group[tv] = None
            store.bind(v, tv)
        if holes:
            taken_dims = shape_vars_of(t)
            for h in holes:
                store.bind_hole(h, shape_var(_fresh_name(taken_dims, _SHAPE_NAMES)))
        r = store.resolve(t)
        assert isinstance(r, FuncType)
        own = tuple(explicit) + tuple(v for v in type_vars_of(r) if v in group and
                                      v not in explicit)
        if own == r.type_params:
            return r
        return FuncType(r.arg_types, r.ret_type, own, r.type_constraints)

    # --- [Type-Call] / [Type-Call-Op] ---------------------------------------------------------
    def _infer_call(self, e: Call) -> Case:
        op = e.op
        args = e.args
        if not isinstance(args, tuple):
            raise RelayTypeError("malformed program: call arguments must be a tuple",
                                 e.span or self.default_span, code="Type-Call")
        span = e.span or self.default_span
        if type(op) is Op:
            # [Type-Call-Op]  op : fn(T1..Tn) -> O where Rel   Γ ⊢ ai : Ti   Rel(T1..Tn, O) holds
            #                 ⟹   Γ ⊢ op(a1, ..., an) : O
            opdef = self._opdef(op, span)
            try:
                attrs = normalized_attrs(opdef, e.attrs)
            except RelayTypeError as err:
                raise RelayTypeError(messages.with_rule(err.message, f"Type-Call-Op: {op.name}"),
                                     span, code="Type-Call-Op") from None
            except (TypeError, ValueError, AttributeError) as err:
                raise RelayTypeError(messages.with_rule(
                    f"bad attribute: malformed attributes for {op.name}: {err}",
                    f"Type-Call-Op: {op.name}"), span, code="Type-Call-Op") from None
            if e.type_args:
                raise RelayTypeError(messages.arity("Type-Call-Op", f"call to {op.name}", 0,
                                                    len(e.type_args), "type argument"),
                                     span, code="Type-Call-Op")
            if opdef.num_inputs >= 0 and opdef.num_inputs != len(args):
                raise RelayTypeError(messages.arity("Type-Call-Op", f"call to {op.name}",
                                                    opdef.num_inputs, len(args), "argument"),
                                     span, code="Type-Call-Op")
            arg_types = []
            for a in args:
                t = yield a
                arg_types.append(self.use(a, t))
            out = self.solver.relate(opdef.relation, tuple(arg_types), attrs,
                                     rule="Type-Call-Op", span=span, label=op.name)
            if id(op) not in self.op_node_types:
                self.op_node_types[id(op)] = FuncType(tuple(arg_types), out)
            return out
        # [Type-Call]  Γ ⊢ f : fn(T1..Tn) -> O   Γ ⊢ ai : Ti   ⟹   Γ ⊢ f(a1, ..., an) : O
        callee = yield op
        explicit = ()
        if e.type_args:
            if not isinstance(e.type_args, tuple):
                raise RelayTypeError("malformed program: type arguments must be a tuple", span,
                                     code="Type-Call")
            explicit = tuple(self.annotation(t, span) for t in e.type_args)
        ft = self.use(op, callee, explicit, span, callee=True)
        arg_types = []
        for a in args:
            t = yield a
            arg_types.append(self.use(a, t))
        ft = self.store.find(ft)
        name = _describe(op)
        if type(ft) is FuncType:
            if len(ft.arg_types) != len(arg_types):
                raise RelayTypeError(messages.arity("Type-Call", f"call to {name}",
                                                    len(ft.arg_types), len(arg_types),
                                                    "argument"), span, code="Type-Call")
            for i, (p, a, node) in enumerate(zip(ft.arg_types, arg_types, args, strict=False)):
                self.unify(p, a, "Type-Call", f"argument {i + 1} of {name}",
                           self._site(node, span))
            for c in ft.type_constraints:
                n = c.num_inputs
                self.solver.relate(c.relation, tuple(c.args[:n]), c.attrs, rule="Type-Call",
                                   span=span, label=name, output=c.args[n])
            return ft.ret_type
        if type(ft) is IncompleteType:
            ret = self.store.fresh()
            self.unify(ft, FuncType(tuple(arg_types), ret), "Type-Call", f"callee {name}", span)
            return ret
        expected = FuncType(tuple(arg_types), self.store.fresh())
        raise self.store.mismatch_error("Type-Call", f"callee {name}", span, expected, ft,
                                        "only functions can be called")

    # --- [Type-Let] / [Type-Let-Rec] ----------------------------------------------------------
    def _infer_let(self, e: Let) -> Case:
        store = self.store
        saved: list[tuple[Var, Type | None]] = []
        spine: list[Let] = []
        node: Any = e
        while type(node) is Let:
            if spine and id(node) in self.memo:
                break
            spine.append(node)
            var = node.var
            value = node.value
            span = node.span or self.default_span
            if not isinstance(var, Var):
                raise RelayTypeError("malformed program: a let must bind a Var", span,
                                     code="Type-Let")
            ann = None
            if var.type_annotation is not None:
                ann = self.annotation(var.type_annotation, var.span or span)
            if type(value) is Function and id(value) not in self.memo:
                # [Type-Let-Rec]  Γ, %f : T ⊢ fn : T   Γ, %f : Gen(T) ⊢ e : T'
                #                 ⟹   Γ ⊢ let %f = fn; e : T'
                declared = ann if ann is not None else self.declared_type(value)
                store.current_level += 1
                mono = declared if declared is not None else store.fresh()
                inner = self.bind(var, mono)
                try:
                    vt = yield value
                finally:
                    store.current_level -= 1
                    self.restore([inner])
                if ann is not None:
                    self.check_against(ann, value, vt, "Type-Let", f"value of %{var.name_hint}",
                                       self._site(value, span))
                    final = ann
                elif declared is not None:
                    final = vt
                else:
                    self.unify(mono, self.use(value, vt), "Type-Let-Rec",
                               f"recursive uses of %{var.name_hint}", self._site(value, span))
                    self.solver.solve()
                    final = self.generalize(vt, store.current_level, value.type_params, False)
                    self.memo[id(value)] = final
                saved.append(self.bind(var, final))
            else:
                # [Type-Let]  Γ ⊢ v : T   Γ, %x : T ⊢ e : T'   ⟹   Γ ⊢ let %x = v; e : T'
                vt = yield value
                if ann is not None:
                    self.check_against(ann, value, vt, "Type-Let", f"value of %{var.name_hint}",
                                       self._site(value, span))
                    t = ann
                elif type(value) in _NAMES and id(self.store.find(vt)) not in self._nullary:
                    t = vt  # a name keeps its scheme: each use of %x instantiates it
                else:
                    t = self.use(value, vt)
                saved.append(self.bind(var, t))
            node = node.body
        body_type = yield node
        if id(self.store.find(body_type)) in self._nullary:
            body_type = self.use(node, body_type)
        self.restore(saved)
        for let in spine[1:]:
            self.memo[id(let)] = body_type
        return body_type

    # --- [Type-Function] ----------------------------------------------------------------------
    def _infer_function(self, fn: Function) -> Case:
        # [Type-Function]  Γ, %x1 : T1, ..., %xn : Tn ⊢ body : O
        #                  ⟹   Γ ⊢ fn[V..](%x1: T1, ..., %xn: Tn) -> O { body } : fn[V..](T1..Tn) -> O
        span = fn.span or self.default_span
        params = self.push_type_params(fn.type_params, span)
        if not isinstance(fn.params, tuple) or not all(isinstance(p, Var) for p in fn.params):
            raise RelayTypeError("malformed program: function parameters must be Vars", span,
                                 code="Type-Function")
        saved = []
        arg_types = []
        for p in fn.params:
            t = (self.annotation(p.type_annotation, p.span or span)
                 if p.type_annotation is not None else self.store.fresh())
            arg_types.append(t)
            saved.append(self.bind(p, t))
        ret = self.annotation(fn.ret_type, span) if fn.ret_type is not None else None
        body_raw = yield fn.body
        body = self.use(fn.body, body_raw)
        if ret is not None:
            self.unify(ret, body, "Type-Function", "return type",
                       self._site(fn.body, getattr(fn.ret_type, "span", None) or span))
        else:
            ret = body
        self.restore(saved)
        self.pop_type_params(params)
        return FuncType(tuple(arg_types), ret, params)

    # --- [Type-Product] / [Type-Projection] ---------------------------------------------------
    def _infer_tuple(self, e: Tuple) -> Case:
        # [Type-Product]  ∀i. Γ ⊢ ei : Ti   ⟹   Γ ⊢ (e1, ..., en) : (T1, ..., Tn)
        fields = []
        for f in e.fields:
            t = yield f
            fields.append(self.use(f, t))
        t = TupleType(tuple(fields))
        if all(self.store.is_ground_fast(f) for f in fields):
            self.store.mark_ground(t)
        return t

    def _infer_tuple_getitem(self, e: TupleGetItem) -> Case:
        # [Type-Projection]  Γ ⊢ e : (T0, ..., Tn-1)   0 <= i < n   ⟹   Γ ⊢ e.i : Ti
        span = e.span or self.default_span
        raw = yield e.tuple_value
        t = self.store.find(self.use(e.tuple_value, raw))
        index = e.index
        if not isinstance(index, int) or isinstance(index, bool):
            raise RelayTypeError("malformed program: a projection index must be an integer",
                                 span, code="Type-Projection")
        return self.solver.relate(PROJECTION, (t,), index, rule="Type-Projection", span=span,
                                  label=f"projection .{index}", deep=False, internal=True)

    # --- [Type-If] ----------------------------------------------------------------------------
    def _infer_if(self, e: If) -> Case:
        # [Type-If]  Γ ⊢ c : Tensor[(), bool]   Γ ⊢ e1 : T   Γ ⊢ e2 : T
        #            ⟹   Γ ⊢ if (c) { e1 } else { e2 } : T
        span = e.span or self.default_span
        c = yield e.cond
        self.unify(BOOL, self.use(e.cond, c), "Type-If", "condition", self._site(e.cond, span))
        t1 = yield e.true_branch
        t1 = self.use(e.true_branch, t1)
        t2 = yield e.false_branch
        t2 = self.use(e.false_branch, t2)
        self.unify(t1, t2, "Type-If", "the else branch must have the type of the then branch",
                   self._site(e.false_branch, span))
        return t1

    # --- [Type-ADT-Match] ---------------------------------------------------------------------
    def _infer_match(self, e: Match) -> Case:
        # [Type-ADT-Match]  Γ ⊢ e : T   ∀i. ⊢ pi : T ⇝ Γi   Γ, Γi ⊢ ei : T'   (exhaustive)
        #                   ⟹   Γ ⊢ match (e) { p1 => e1 | ... } : T'
        span = e.span or self.default_span
        raw = yield e.data
        data = self.use(e.data, raw)
        if not isinstance(e.clauses, tuple) or not all(isinstance(c, Clause) for c in e.clauses):
            raise RelayTypeError("malformed program: match clauses", span, code="Type-ADT-Match")
        result: Type | None = None
        for i, clause in enumerate(e.clauses):
            cspan = clause.span or span
            bound = bind_pattern(self, clause.lhs, data, cspan)
            rt = yield clause.rhs
            rt = self.use(clause.rhs, rt)
            if result is None:
                result = rt
            else:
                self.unify(result, rt, "Type-ADT-Match", f"clause {i + 1} must have the type of "
                           "clause 1", self._site(clause.rhs, cspan))
            self.restore(bound)
        if e.complete:
            self.matches.append((e, data))
        return result if result is not None else self.store.fresh()

    # --- references ---------------------------------------------------------------------------
    def _infer_ref_create(self, e: RefCreate) -> Case:
        # [Type-Ref]  Γ ⊢ e : T   ⟹   Γ ⊢ ref(e) : Ref[T]
        t = yield e.value
        return RefType(self.use(e.value, t))

    def _infer_ref_read(self, e: RefRead) -> Case:
        # [Type-Read-Ref]  Γ ⊢ r : Ref[T]   ⟹   Γ ⊢ !r : T
        raw = yield e.ref
        t = self.store.find(self.use(e.ref, raw))
        if type(t) is RefType:
            return t.value
        value = self.store.fresh()
        self.unify(RefType(value), t, "Type-Read-Ref", "operand of ref_read",
                   self._site(e.ref, e.span))
        return value

    def _infer_ref_write(self, e: RefWrite) -> Case:
        # [Type-Write-Ref]  Γ ⊢ r : Ref[T]   Γ ⊢ v : T   ⟹   Γ ⊢ r := v : ()
        raw = yield e.ref
        r = self.use(e.ref, raw)
        raw = yield e.value
        v = self.use(e.value, raw)
        self.unify(r, RefType(v), "Type-Write-Ref", "the reference must hold the written value",
                   self._site(e.value, e.span))
        return UNIT

    # --- [Type-Gradient] ----------------------------------------------------------------------
    def _infer_grad(self, e: Grad) -> Case:
        # [Type-Gradient]  Γ ⊢ f : fn(T1..Tn) -> O   ⟹   Γ ⊢ grad(f) : fn(T1..Tn) -> (O, (T1..Tn))
        span = e.span or self.default_span
        raw = yield e.func
        f = self.store.find(self.use(e.func, raw))
        return self.solver.relate(GRADIENT, (f,), None, rule="Type-Gradient", span=span,
                                  label="grad", deep=False, internal=True)


_NAMES = (Var, GlobalVar, Op, Constructor)
_DTYPE_NAMES: dict[Any, str] = {}
_ATTRS_CACHE: dict[tuple[str, str], Any] = {}


def normalized_attrs(opdef: Any, attrs: Any) -> Any:
    """``opdef.normalize_attrs(attrs)``, cached by operator and the exact text of the attrs."""
    if not attrs:
        key = (opdef.name, "")
    else:
        key = (opdef.name, repr(attrs))
    out = _ATTRS_CACHE.get(key)
    if out is None or out[0] is not opdef:
        out = (opdef, opdef.normalize_attrs(attrs))
        if len(_ATTRS_CACHE) > 4096:
            _ATTRS_CACHE.clear()
        _ATTRS_CACHE[key] = out
    return out[1]


_TYPE_NAMES = tuple(string.ascii_uppercase)
_SHAPE_NAMES = ("n", "m", "k", "p", "q", "r", "s", "t", "u", "v", "w")


def type_vars_of(t: Type) -> list[TypeVar]:
    """The type variables occurring free in ``t``, in order of first appearance."""
    out: list[TypeVar] = []
    seen: set[int] = set()
    stack: list[tuple[Type, frozenset[int]]] = [(t, frozenset())]
    while stack:
        u, bound = stack.pop()
        tu = type(u)
        if tu is TypeVar:
            if id(u) not in seen and id(u) not in bound:
                seen.add(id(u))
                out.append(u)  # type: ignore[arg-type]
        elif tu is FuncType:
            inner = bound | {id(p) for p in u.type_params}  # type: ignore[attr-defined]
            kids = [*u.arg_types, u.ret_type]  # type: ignore[attr-defined]
            stack.extend((k, inner) for k in reversed(kids))
        else:
            stack.extend((k, bound) for k in reversed(type_children(u)))
    return out


def _fresh_name(taken: set[str], names: tuple[str, ...]) -> str:
    for n in names:
        if n not in taken:
            taken.add(n)
            return n
    i = 1
    while True:
        for n in names:
            cand = f"{n}{i}"
            if cand not in taken:
                taken.add(cand)
                return cand
        i += 1


def _describe(node: Any) -> str:
    tn = type(node)
    if tn is GlobalVar:
        return "@" + str(node.name_hint)
    if tn is Var:
        return "%" + str(node.name_hint)
    if tn is Op or tn is Constructor:
        return str(node.name)
    return "the callee"
