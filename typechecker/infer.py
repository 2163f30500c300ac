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

**Generalization** happens for a ``let`` of a function literal (Type-Let-Rec)
here and for globals in :mod:`typechecker.program`, after the solver has
run, by :func:`typechecker.schemes.generalize` (levels; variables of unsolved
relation constraints stay monomorphic, so a later use can determine them).
A ``let`` of a *name* (variable, global, operator, constructor) keeps the
name's scheme; any other ``let`` value is instantiated (value restriction).

Limit: a node shared between a let-bound function's body and code outside
it is typed once, in the first context reached (the body); if its type is
generalized there, the outer use sees the generalized type variables.
"""

from __future__ import annotations

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
from semantics.rules import Rule
from semantics.span import Span
from semantics.types import (
    FuncType,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeVar,
    unit_type,
)
from typechecker import messages, schemes
from typechecker.builtin_relations import GRADIENT, PROJECTION
from typechecker.kinding import ConstructorInfo, Kinder, written_shape_names
from typechecker.patterns import bind_pattern
from typechecker.shape_solver import SHAPE_SOLVER
from typechecker.solver import Solver
from typechecker.unify import TypeStore

Case = Generator[Any, Type, Type]

BOOL = TensorType((), "bool")
UNIT = unit_type()

RULE_OF_NODE: dict[type, Rule] = {
    Var: Rule.TYPE_VAR, GlobalVar: Rule.TYPE_GLOBAL, Constant: Rule.TYPE_CONSTANT, Op: Rule.TYPE_OP,
    Constructor: Rule.TYPE_ADT_CONSTRUCTOR, Call: Rule.TYPE_CALL, Let: Rule.TYPE_LET,
    Function: Rule.TYPE_FUNCTION, Tuple: Rule.TYPE_PRODUCT, TupleGetItem: Rule.TYPE_PROJECTION,
    If: Rule.TYPE_IF, Match: Rule.TYPE_ADT_MATCH, RefCreate: Rule.TYPE_REF,
    RefRead: Rule.TYPE_READ_REF, RefWrite: Rule.TYPE_WRITE_REF, Grad: Rule.TYPE_GRADIENT,
}


@dataclass
class GlobalInfo:
    """A global definition during inference: its monomorphic type, then its scheme."""

    name: str
    fn: Function | None
    type: Type
    declared: bool
    generalized: bool = False


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
        self.def_roots: list[Expr] = []
        self.generated_shape_names: set[str] = set()
        self._written_names: dict[int, set[str]] = {}
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
                                     node.span or self.default_span, code=Rule.TYPE_VAR)
            return t
        t = self.memo.get(id(node))
        if t is not None:
            return t
        if tn is Constant:
            t = self._constant_type(node)
        elif tn is GlobalVar:
            t = self._global_type(node)
        elif tn is Constructor:
            # [Type-ADT-Constructor]  C(T1..Tn) ∈ D[V1..Vk]
            #                         ⟹   Γ ⊢ C : fn[V1..Vk](T1..Tn) -> D[V1..Vk]
            info = self.constructor_info(node, Rule.TYPE_ADT_CONSTRUCTOR, node.span)
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
            raise RelayTypeError(messages.ill_kinded(Rule.KIND_TENSOR, f"{t!r} is not a type"),
                                 span or self.default_span, code=Rule.KIND_TENSOR)
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

    def unify(self, expected: Type, found: Type, rule: Rule, what: str,
              span: Span | None) -> None:
        self.store.unify(expected, found, rule, what, span or self.default_span)
        if self.solver.queue:
            self.solver.solve()

    def check_against(self, ann: Type, node: Any, raw: Type, rule: Rule, what: str,
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
                Rule.KIND_TYPEVAR, "type parameters must be type variables"),
                span or self.default_span, code=Rule.KIND_TYPEVAR)
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
            raise RelayTypeError(messages.arity(Rule.TYPE_INSTANTIATE, "explicit type arguments", 0,
                                                len(explicit), "type argument"),
                                 span or self.default_span, code=Rule.TYPE_INSTANTIATE)
        return t

    def result_type(self, body: Any, raw: Type, annotated: bool) -> Type:
        """The result type of a function whose body is ``body`` (of raw type ``raw``).

        A body that is just a name (``fn () { add }``, ``def @main() { @id }``) with no
        written return type returns the name's scheme itself, like a ``let`` of a name: its
        instances are taken where the result is used. Instantiating it here would leave the
        operator's relation unsolved for ever ("underconstrained").
        """
        if not annotated and type(body) in _NAMES:
            t = self.store.find(raw)
            if type(t) is FuncType and t.type_params and id(t) not in self._nullary \
                    and id(t) not in self._op_errors:
                return t
        return self.use(body, raw)

    def instantiate(self, scheme: FuncType, shape_vars: tuple[sympy.Symbol, ...],
                    explicit: tuple[Type, ...], node: Any, span: Span | None) -> Type:
        """``scheme`` at a fresh instance (Type-Instantiate; see :mod:`typechecker.schemes`)."""
        return schemes.instantiate(self.store, self.solver, scheme, shape_vars, explicit,
                                   describe_node(node), span or self.default_span,
                                   self._op_errors.get(id(scheme)))

    def constructor_info(self, ctor: Any, rule: Rule, span: Span | None) -> ConstructorInfo:
        name = getattr(ctor, "name", None)
        info = self.kinder.constructor(name) if isinstance(name, str) else None
        if info is None:
            raise RelayTypeError(messages.undefined_constructor(str(name), rule),
                                 span or self.default_span, code=rule)
        return info

    def _constant_type(self, node: Constant) -> Type:
        # [Type-Constant]  Δ ⊢ s : Shape   Δ ⊢ bt : BaseType
        #                  ⟹   Γ ⊢ const(v, s, bt) : Tensor[s, bt]
        data = node.data
        np_dtype = getattr(data, "dtype", None)
        dtype = _DTYPE_NAMES.get(np_dtype)
        if dtype is None:
            dtype = getattr(np_dtype, "name", None)
            if dtype in SCALAR_DTYPES:
                _DTYPE_NAMES[np_dtype] = dtype
        if dtype not in SCALAR_DTYPES:
            raise RelayTypeError(messages.ill_kinded(
                Rule.KIND_BASETYPE, f"a constant of element type {dtype} is not a Relay tensor"),
                node.span or self.default_span, code=Rule.KIND_BASETYPE)
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
                                 node.span or self.default_span, code=Rule.TYPE_GLOBAL)
        return info.type

    def _opdef(self, node: Op, span: Span | None) -> Any:
        from semantics import ops

        try:
            return ops.get(node.name)
        except RelayTypeError as err:
            raise RelayTypeError(messages.with_rule(err.message, Rule.TYPE_OP),
                                 span or node.span or self.default_span,
                                 code=Rule.TYPE_OP) from None

    def _op_scheme(self, node: Op) -> tuple[FuncType, RelayTypeError | None]:
        # [Type-Op]  op : fn[T1..Tn, O](T1, ..., Tn) -> O where Rel_op(T1, ..., Tn, O)
        entry = self._op_schemes.get(node.name)
        if entry is None:
            entry = schemes.operator_scheme(self._opdef(node, node.span))
            self._op_schemes[node.name] = entry
            if entry[1] is not None:
                self._op_errors[id(entry[0])] = entry[1]
        return entry

    def _site(self, node: Any, fallback: Span | None) -> Span | None:
        """Where to point for a sub-expression: variables carry their binder's span."""
        if type(node) is Var:
            return fallback or self.default_span
        return getattr(node, "span", None) or fallback or self.default_span

    def declared_type(self, fn: Function) -> FuncType | None:
        """The type a function literal declares (every parameter and the result annotated)."""
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
                   group: dict[TypeVar, None] | None = None) -> Type:
        """Gen(Γ, t) by levels (see :func:`typechecker.schemes.generalize`).

        Shape variables created for dimension holes are recorded as the scheme's implicitly
        quantified shape parameters (instantiated afresh at each use).
        """
        taken = set(self.generated_shape_names)
        for root in self.def_roots:
            names = self._written_names.get(id(root))
            if names is None:
                names = self._written_names[id(root)] = written_shape_names(root)
            taken |= names
        scheme, new_dims = schemes.generalize(self.store, self.solver, t, level, explicit,
                                              taken, group)
        self.generated_shape_names.update(d.name for d in new_dims)
        if new_dims and type(scheme) is FuncType:
            known = self.shape_params.get(id(scheme))
            dims = tuple(known[1]) if known else ()
            self.shape_params[id(scheme)] = (scheme, dims + new_dims)
        return scheme

    # --- [Type-Call] / [Type-Call-Op] ---------------------------------------------------------
    def _infer_call(self, e: Call) -> Case:
        """A call of an operator is Type-Call-Op; any other call is Type-Call."""
        if not isinstance(e.args, tuple):
            raise RelayTypeError("malformed program: call arguments must be a tuple",
                                 e.span or self.default_span, code=Rule.TYPE_CALL)
        if type(e.op) is Op:
            return self._infer_call_op(e)
        return self._infer_call_fn(e)

    def _infer_call_op(self, e: Call) -> Case:
        # [Type-Call-Op]  op : fn(T1..Tn) -> O where Rel   Γ ⊢ ai : Ti   Rel(T1..Tn, O) holds
        #                 ⟹   Γ ⊢ op(a1, ..., an) : O
        op = e.op
        assert type(op) is Op
        args = e.args
        span = e.span or self.default_span
        opdef = self._opdef(op, span)
        try:
            attrs = schemes.normalized_attrs(opdef, e.attrs)
        except RelayTypeError as err:
            raise RelayTypeError(messages.with_rule(err.message, f"Type-Call-Op: {op.name}"),
                                 span, code=Rule.TYPE_CALL_OP) from None
        except (TypeError, ValueError, AttributeError) as err:
            raise RelayTypeError(messages.with_rule(
                f"bad attribute: malformed attributes for {op.name}: {err}",
                f"Type-Call-Op: {op.name}"), span, code=Rule.TYPE_CALL_OP) from None
        if e.type_args:
            raise RelayTypeError(messages.arity(Rule.TYPE_CALL_OP, f"call to {op.name}", 0,
                                                len(e.type_args), "type argument"),
                                 span, code=Rule.TYPE_CALL_OP)
        if opdef.num_inputs >= 0 and opdef.num_inputs != len(args):
            raise RelayTypeError(messages.arity(Rule.TYPE_CALL_OP, f"call to {op.name}",
                                                opdef.num_inputs, len(args), "argument"),
                                 span, code=Rule.TYPE_CALL_OP)
        arg_types = []
        for a in args:
            t = yield a
            arg_types.append(self.use(a, t))
        out = self.solver.relate(opdef.relation, tuple(arg_types), attrs,
                                 rule=Rule.TYPE_CALL_OP, span=span, label=op.name)
        if id(op) not in self.op_node_types:
            self.op_node_types[id(op)] = FuncType(tuple(arg_types), out)
        return out

    def _infer_call_fn(self, e: Call) -> Case:
        # [Type-Call]  Γ ⊢ f : fn(T1..Tn) -> O   Γ ⊢ ai : Ti   ⟹   Γ ⊢ f(a1, ..., an) : O
        op = e.op
        args = e.args
        span = e.span or self.default_span
        callee = yield op
        explicit: tuple[Type, ...] = ()
        if e.type_args:
            if not isinstance(e.type_args, tuple):
                raise RelayTypeError("malformed program: type arguments must be a tuple", span,
                                     code=Rule.TYPE_CALL)
            explicit = tuple(self.annotation(t, span) for t in e.type_args)
        ft = self.use(op, callee, explicit, span, callee=True)
        arg_types = []
        for a in args:
            t = yield a
            arg_types.append(self.use(a, t))
        ft = self.store.find(ft)
        name = describe_node(op)
        if type(ft) is FuncType:
            if len(ft.arg_types) != len(arg_types):
                raise RelayTypeError(messages.arity(Rule.TYPE_CALL, f"call to {name}",
                                                    len(ft.arg_types), len(arg_types),
                                                    "argument"), span, code=Rule.TYPE_CALL)
            for i, (p, at, node) in enumerate(zip(ft.arg_types, arg_types, args, strict=False)):
                self.unify(p, at, Rule.TYPE_CALL, f"argument {i + 1} of {name}",
                           self._site(node, span))
            for c in ft.type_constraints:
                n = c.num_inputs
                self.solver.relate(c.relation, tuple(c.args[:n]), c.attrs, rule=Rule.TYPE_CALL,
                                   span=span, label=name, output=c.args[n])
            return ft.ret_type
        if type(ft) is IncompleteType:
            ret = self.store.fresh()
            self.unify(ft, FuncType(tuple(arg_types), ret), Rule.TYPE_CALL,
                       name if name == "the callee" else f"callee {name}", span)
            return ret
        raise RelayTypeError(messages.not_a_function(
            _subject(op, "the callee"), messages.show(self.store.for_display(ft))),
            self._site(op, span), code=Rule.TYPE_CALL)

    # --- [Type-Let] / [Type-Let-Rec] ----------------------------------------------------------
    def _infer_let(self, e: Let) -> Case:
        """A let spine, iterated here: each binding is Type-Let-Rec or Type-Let (below)."""
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
                                     code=Rule.TYPE_LET)
            ann = None
            if var.type_annotation is not None:
                ann = self.annotation(var.type_annotation, var.span or span)
            if type(value) is Function and id(value) not in self.memo:
                bound = yield from self._infer_let_rec(node, value, ann, span)
            else:
                bound = yield from self._infer_let_value(node, ann, span)
            saved.append(self.bind(var, bound))
            node = node.body
        body_type = yield node
        if id(self.store.find(body_type)) in self._nullary:
            body_type = self.use(node, body_type)
        self.restore(saved)
        for let in spine[1:]:
            self.memo[id(let)] = body_type
        return body_type

    def _infer_let_rec(self, let: Let, value: Function, ann: Type | None,
                       span: Span | None) -> Case:
        """The type a ``let`` of a function literal binds (generalized unless annotated)."""
        # [Type-Let-Rec]  Γ, %f : T ⊢ fn : T   Γ, %f : Gen(T) ⊢ e : T'
        #                 ⟹   Γ ⊢ let %f = fn; e : T'
        store = self.store
        var = let.var
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
            self.check_against(ann, value, vt, Rule.TYPE_LET_REC, f"value of %{var.name_hint}",
                               self._site(value, span))
            return ann
        if declared is not None:
            return vt
        self.unify(mono, self.use(value, vt), Rule.TYPE_LET_REC,
                   f"recursive uses of %{var.name_hint}", self._site(value, span))
        self.solver.solve()
        final = self.generalize(vt, store.current_level, value.type_params)
        self.memo[id(value)] = final
        return final

    def _infer_let_value(self, let: Let, ann: Type | None, span: Span | None) -> Case:
        """The type a ``let`` of any other value binds (a name keeps its scheme)."""
        # [Type-Let]  Γ ⊢ v : T   Γ, %x : T ⊢ e : T'   ⟹   Γ ⊢ let %x = v; e : T'
        value = let.value
        vt = yield value
        if ann is not None:
            self.check_against(ann, value, vt, Rule.TYPE_LET, f"value of %{let.var.name_hint}",
                               self._site(value, span))
            return ann
        if type(value) in _NAMES and id(self.store.find(vt)) not in self._nullary:
            return vt  # a name keeps its scheme: each use of %x instantiates it
        return self.use(value, vt)

    # --- [Type-Function] ----------------------------------------------------------------------
    def _infer_function(self, fn: Function) -> Case:
        # [Type-Function]  Γ, %x1 : T1, ..., %xn : Tn ⊢ body : O
        #                  ⟹   Γ ⊢ fn[V..](%x1: T1, ..., %xn: Tn) -> O { body }
        #                          : fn[V..](T1, ..., Tn) -> O
        span = fn.span or self.default_span
        params = self.push_type_params(fn.type_params, span)
        if not isinstance(fn.params, tuple) or not all(isinstance(p, Var) for p in fn.params):
            raise RelayTypeError("malformed program: function parameters must be Vars", span,
                                 code=Rule.TYPE_FUNCTION)
        saved = []
        arg_types = []
        for p in fn.params:
            t = (self.annotation(p.type_annotation, p.span or span)
                 if p.type_annotation is not None else self.store.fresh())
            arg_types.append(t)
            saved.append(self.bind(p, t))
        ret = self.annotation(fn.ret_type, span) if fn.ret_type is not None else None
        body_raw = yield fn.body
        body = self.result_type(fn.body, body_raw, ret is not None)
        if ret is not None:
            self.unify(ret, body, Rule.TYPE_FUNCTION, "return type",
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
                                 span, code=Rule.TYPE_PROJECTION)
        return self.solver.relate(PROJECTION, (t,), index, rule=Rule.TYPE_PROJECTION, span=span,
                                  label=f"projection .{index}", deep=False, internal=True)

    # --- [Type-If] ----------------------------------------------------------------------------
    def _infer_if(self, e: If) -> Case:
        # [Type-If]  Γ ⊢ c : Tensor[(), bool]   Γ ⊢ e1 : T   Γ ⊢ e2 : T
        #            ⟹   Γ ⊢ if (c) { e1 } else { e2 } : T
        span = e.span or self.default_span
        c = yield e.cond
        self.unify(BOOL, self.use(e.cond, c), Rule.TYPE_IF, "condition", self._site(e.cond, span))
        t1 = yield e.true_branch
        t1 = self.use(e.true_branch, t1)
        t2 = yield e.false_branch
        t2 = self.use(e.false_branch, t2)
        self.unify(t1, t2, Rule.TYPE_IF, "the else branch must have the type of the then branch",
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
            raise RelayTypeError("malformed program: match clauses", span, code=Rule.TYPE_ADT_MATCH)
        result: Type | None = None
        for i, clause in enumerate(e.clauses):
            cspan = clause.span or span
            bound = bind_pattern(self, clause.lhs, data, cspan)
            rt = yield clause.rhs
            rt = self.use(clause.rhs, rt)
            if result is None:
                result = rt
            else:
                self.unify(result, rt, Rule.TYPE_ADT_MATCH, f"clause {i + 1} must have the type of "
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
        if type(t) is not IncompleteType:
            span = e.span or self.default_span
            raise RelayTypeError(messages.not_a_reference(
                messages.written_as(span, "ref_read", "!"), _subject(e.ref, "the operand"),
                messages.show(self.store.for_display(t)), Rule.TYPE_READ_REF),
                self._site(e.ref, span), code=Rule.TYPE_READ_REF)
        value = self.store.fresh()
        self.unify(RefType(value), t, Rule.TYPE_READ_REF, "the operand of `!`",
                   self._site(e.ref, e.span))
        return value

    def _infer_ref_write(self, e: RefWrite) -> Case:
        # [Type-Write-Ref]  Γ ⊢ r : Ref[T]   Γ ⊢ v : T   ⟹   Γ ⊢ r := v : ()
        span = e.span or self.default_span
        raw = yield e.ref
        r = self.store.find(self.use(e.ref, raw))
        if type(r) is not RefType and type(r) is not IncompleteType:
            raise RelayTypeError(messages.not_a_reference(
                messages.written_as(span, "ref_write", ":="), _subject(e.ref, "the target"),
                messages.show(self.store.for_display(r)), Rule.TYPE_WRITE_REF,
                " to write to"), self._site(e.ref, span), code=Rule.TYPE_WRITE_REF)
        raw = yield e.value
        v = self.use(e.value, raw)
        target = _subject(e.ref, "the reference")
        if type(r) is RefType:
            self.unify(r.value, v, Rule.TYPE_WRITE_REF, f"the value written to {target}",
                       self._site(e.value, span))
        else:
            self.unify(r, RefType(v), Rule.TYPE_WRITE_REF, f"the value written to {target}",
                       self._site(e.value, span))
        return UNIT

    # --- [Type-Gradient] ----------------------------------------------------------------------
    def _infer_grad(self, e: Grad) -> Case:
        # [Type-Gradient]  Γ ⊢ f : fn(T1..Tn) -> O   ⟹   Γ ⊢ grad(f) : fn(T1..Tn) -> (O, (T1..Tn))
        span = e.span or self.default_span
        raw = yield e.func
        f = self.store.find(self.use(e.func, raw))
        return self.solver.relate(GRADIENT, (f,), None, rule=Rule.TYPE_GRADIENT, span=span,
                                  label="grad", deep=False, internal=True)


_NAMES = (Var, GlobalVar, Op, Constructor)
_DTYPE_NAMES: dict[Any, str] = {}


def describe_node(node: Any) -> str:
    tn = type(node)
    if tn is GlobalVar:
        return "@" + str(node.name_hint)
    if tn is Var:
        return "%" + str(node.name_hint)
    if tn is Op or tn is Constructor:
        return str(node.name)
    return "the callee"


def _subject(node: Any, fallback: str) -> str:
    """A sub-expression in the program's words: a name, a scalar constant, or ``fallback``."""
    tn = type(node)
    if tn is Constant and getattr(node.data, "ndim", None) == 0:
        from semantics.printer import pretty

        return pretty(node)
    if tn in _NAMES:
        return describe_node(node)
    return fallback
