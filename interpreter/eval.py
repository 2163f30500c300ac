"""The big-step evaluator — the oracle (RULES.md, section "Evaluation"; paper appendix Fig. 14).

Design
------
**One case per rule.** Every rule of the evaluation section of
``semantics/RULES.md`` has exactly one case here, which opens with the rule as
written there and reports itself with ``self.fired(Rule.X, node)`` when it
applies (this feeds ``fuel``, ``trace`` and the derivation recorder of
``relay run --trace``). Put RULES.md and this file side by side: the rule's
premises are the case's ``yield``s, in the same order.

**A premise is a ``yield``.** ``v = yield Eval(e, env)`` asks the driver to
establish Γ ⊢ e ⇓ v and resumes the case with ``v``. The driver
(:meth:`Machine.run <interpreter.machine.Machine.run>`) keeps the suspended cases
on an explicit list, so the depth of a derivation is bounded by memory, never by
Python's recursion limit.
Rules without premises (constants, variables, globals, functions, operators,
constructors) are plain methods returning the value directly: they cost no
generator, and a premise whose expression is such a leaf is established in
place by the case (``leaf(x, env)`` instead of ``yield Eval(x, env)``: the same
rule fires in the same order, without a round trip through the driver; not
while a derivation is being recorded, where every judgment is reported).

**Tail positions return ``Tail(e, env)``.** The last premise of a rule whose
value is the conclusion's value (the body of a let, the chosen branch of an
``if``, the clause of a ``match``, the body of a called closure) is not
awaited: the case returns ``Tail(e, env)`` and the driver continues with ``e``
in place of the finished case. A tail-recursive loop therefore runs in
constant space, however many iterations it makes. A closure call returns
``Tail(body, env, call=node)``: the driver opens a new *activation* there.

**Depth.** ``max_depth`` bounds nested *non-tail* calls: an activation's depth
is one more than the depth of the activation whose suspended case awaits its
value, so a call in tail position keeps its caller's depth. Exceeding it is a
``RelayRuntimeError`` "stack exhausted" at the call.

**State.** Γ is :class:`interpreter.env.Env` (frames keyed by variable
identity, O(1) extension); the store Δ is the heap of
:class:`~interpreter.values.RefValue` cells (effects happen in the order the
premises are written, which is §5's left-to-right order); the sharing memo M
of Semantics-Shared lives in the activation's frame: nodes reachable along
more than one edge of a function body (graph bindings) are evaluated once per
activation (see :func:`~interpreter.machine.shared_nodes`).

**Speed.** Dispatch is one ``type(node) → method`` dict lookup; rule names are
read from a plain-class mirror of the :class:`~semantics.rules.Rule` enum
(an Enum attribute read costs more than a whole small rule); operator
attributes are normalized once per call node and the shared nodes once per
function body, both cached across evaluations (AST nodes are immutable);
``fired`` is bound at construction to the cheapest variant the requested
features allow.

**Errors.** Every failure a program can provoke is a ``RelayRuntimeError``
carrying the span of the node at fault: unbound variable, undefined global,
calling a non-function, wrong arity, projection of a non-tuple, a condition
that is not a scalar bool, non-exhaustive match, operator failures (e.g.
integer division by zero), out of fuel, stack exhausted. An operator that
returns something other than tensors is an :class:`InternalError` (a broken
registry contract, not a user error).

``grad(e)`` is a macro (paper appendix): it is expanded by the function
registered with :func:`register_grad_expander` (the ``ad`` package registers
one) and the expansion is evaluated in place (Semantics-Grad).

Modules
-------
This module holds the rule cases (:class:`Interpreter`: its dispatch tables, the
cases and the helpers they use) and nothing else, so it reads side by side with
RULES.md. The rest of the evaluator is next to it:

* :mod:`interpreter.machine`: the driver the cases run on (:class:`Eval` and
  :class:`Tail` requests, :class:`~interpreter.machine.Machine` with the explicit
  stack, the sharing memo frames, depth accounting and the ``fired`` bookkeeping of
  fuel, ``trace`` and the :class:`Recorder`; :func:`shared_nodes`);
* :mod:`interpreter.entry`: the public entry point (:func:`evaluate`,
  :func:`evaluate_recorded` for ``relay run --trace``, :func:`register_grad_expander`);
* :mod:`interpreter.convert`: Python arguments to values (with
  :mod:`interpreter.export` for results and :mod:`interpreter.linking` for the
  prelude); :mod:`interpreter.env` (Γ) and :mod:`interpreter.values`.

The names this module has always exported (``evaluate``, ``evaluate_recorded``,
``register_grad_expander``, ``Eval``, ``Tail``, ``Recorder``, ``shared_nodes``) are
re-exported from there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from interpreter.entry import (
    _GRAD_EXPANDER,
    evaluate,
    evaluate_recorded,
    register_grad_expander,
)
from interpreter.env import Env
from interpreter.machine import (
    _MISSING,
    Eval,
    Machine,
    Recorder,
    Rule,
    Tail,
    _NodeCache,
    shared_nodes,
)
from interpreter.values import (
    Closure,
    ConstructorFunction,
    ConstructorValue,
    OpValue,
    RefValue,
    value_str,
)
from semantics import ops
from semantics.errors import (
    InternalError,
    RelayError,
    RelayRuntimeError,
    non_exhaustive_match,
    unbound_variable,
    undefined_global,
)
from semantics.expr import (
    Call,
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

__all__ = ["Eval", "Interpreter", "Recorder", "Tail", "evaluate", "evaluate_recorded",
           "register_grad_expander", "shared_nodes"]


# Normalized attributes per operator call (the shared nodes are cached by the machine).
_ATTRS_CACHE = _NodeCache(16384)
_BOOL = np.dtype(bool)


# --- the interpreter --------------------------------------------------------------------------

class Interpreter(Machine):
    """Evaluates expressions of one module: the rule cases, run by :class:`Machine`.

    See the module docstring for the design.

    Args:
        mod: the program (globals and ADTs).
        fuel: the number of rule applications allowed (None: unbounded).
        trace: called as ``trace(rule_name, node)`` for every rule application.
        max_depth: the bound on nested non-tail calls.
        recorder: a :class:`Recorder` receiving the derivation (slower; no tail calls).
    """

    def __init__(self, mod: IRModule, *, fuel: int | None = None,
                 trace: Callable[[str, Any], Any] | None = None, max_depth: int = 100_000,
                 recorder: Recorder | None = None):
        super().__init__(mod, fuel=fuel, trace=trace, max_depth=max_depth, recorder=recorder)
        self._globals: dict[str, Closure] = {}
        self._ops: dict[str, OpValue] = {}
        self._nullary: dict[Constructor, ConstructorValue] = {}
        self._attrs = _ATTRS_CACHE
        self._grads: dict[Grad, Expr] = {}
        # Rules without premises: node -> value.
        self._axioms: dict[type, Callable[[Any, Env], Any]] = {
            Var: self._eval_var, GlobalVar: self._eval_global_var,
            Constant: self._eval_constant, Op: self._eval_op,
            Constructor: self._eval_constructor, Function: self._eval_function,
        }
        # Premises on leaves are established in place (same rule, no round trip through the
        # driver), except while recording a derivation, where every judgment is reported.
        self._direct = self._axioms if recorder is None else {}
        # Rules with premises: node -> generator (or a Tail, for Let-Rec).
        self._cases: dict[type, Callable[[Any, Env], Any]] = {
            Let: self._eval_let, Call: self._eval_call, Tuple: self._eval_tuple,
            TupleGetItem: self._eval_tuple_getitem, If: self._eval_if, Match: self._eval_match,
            RefCreate: self._eval_ref_create, RefRead: self._eval_ref_read,
            RefWrite: self._eval_ref_write, Grad: self._eval_grad,
        }
        # How a callee value is applied (Semantics-Call, -Call-Op, -ADT-Constructor).
        self._appliers: dict[type, Callable[[Any, list[Any], Any], Any]] = {
            Closure: self._call_closure, OpValue: self._call_op,
            ConstructorFunction: self._call_constructor,
            ConstructorValue: self._call_constructor,
        }
        self._patterns: dict[type, Callable[..., Any]] = {
            PatternWildcard: self._match_wildcard, PatternVar: self._match_var,
            PatternConstructor: self._match_constructor, PatternTuple: self._match_tuple,
        }

    def global_closure(self, gv: GlobalVar) -> Closure:
        """The closure of a global function (one per global per interpreter)."""
        c = self._globals.get(gv.name_hint)
        if c is None:
            fn = self.mod.functions.get(gv.name_hint)
            if fn is None:
                raise RelayRuntimeError(undefined_global("@" + gv.name_hint), gv.span)
            c = self._globals[gv.name_hint] = Closure(fn, Env(), None, "@" + gv.name_hint)
        return c

    # === rules without premises ==========================================================

    # [Semantics-Const]   ───────────────   Γ ⊢ const(t) ⇓ t
    def _eval_constant(self, e: Constant, env: Env) -> Any:
        self.fired(Rule.SEMANTICS_CONST, e)
        return e.data

    # [Semantics-Id]   Γ(x) = v   ⟹   Γ ⊢ x ⇓ v
    def _eval_var(self, e: Var, env: Env) -> Any:
        frame: Env | None = env
        while frame is not None:
            v = frame.vars.get(e, _MISSING)
            if v is not _MISSING:
                self.fired(Rule.SEMANTICS_ID, e)
                return v
            frame = frame.parent
        raise RelayRuntimeError(unbound_variable("%" + e.name_hint), e.span)

    # [Semantics-Global]   P(@g) = fn   ⟹   Γ ⊢ @g ⇓ ⟨fn, ∅⟩
    def _eval_global_var(self, e: GlobalVar, env: Env) -> Any:
        c = self._globals.get(e.name_hint) or self.global_closure(e)
        self.fired(Rule.SEMANTICS_GLOBAL, e)
        return c

    # [Semantics-Closure]   ───────────────   Γ ⊢ fn(x1, ..., xn) { e } ⇓ ⟨fn, Γ⟩
    def _eval_function(self, e: Function, env: Env) -> Any:
        self.fired(Rule.SEMANTICS_CLOSURE, e)
        return Closure(e, env)

    # [Semantics-Op]   ───────────────   Γ ⊢ op ⇓ op
    def _eval_op(self, e: Op, env: Env) -> Any:
        v = self._ops.get(e.name)
        if v is None:
            if not ops.exists(e.name):
                raise RelayRuntimeError(f"unknown operator {e.name}", e.span)
            v = self._ops[e.name] = OpValue(e.name, ops.get(e.name))
        self.fired(Rule.SEMANTICS_OP, e)
        return v

    # [Semantics-Constructor]   ───────────────   Γ ⊢ C ⇓ C      (C() when C is nullary)
    def _eval_constructor(self, e: Constructor, env: Env) -> Any:
        self.fired(Rule.SEMANTICS_CONSTRUCTOR, e)
        if e.inputs:
            return ConstructorFunction(e)
        v = self._nullary.get(e)
        if v is None:
            v = self._nullary[e] = ConstructorValue(e.name, (), e)
        return v

    # [Semantics-Shared]   e is shared    M(e) = v   ⟹   Γ; M ⊢ e ⇓ v; M
    def _eval_shared(self, e: Expr, v: Any) -> Any:
        self.fired(Rule.SEMANTICS_SHARED, e)
        return v

    # === rules with premises =============================================================

    # [Semantics-Product]   Γ ⊢ e1 ⇓ v1  ...  Γ ⊢ en ⇓ vn   ⟹   Γ ⊢ (e1, ..., en) ⇓ (v1, ..., vn)
    def _eval_tuple(self, e: Tuple, env: Env):
        direct = self._direct
        fields = []
        for field in e.fields:
            leaf = direct.get(type(field))
            fields.append(leaf(field, env) if leaf is not None else (yield Eval(field, env)))
        self.fired(Rule.SEMANTICS_PRODUCT, e)
        return tuple(fields)

    # [Semantics-Projection]   Γ ⊢ e ⇓ (v0, ..., vn-1)   0 ≤ i < n   ⟹   Γ ⊢ e.i ⇓ vi
    def _eval_tuple_getitem(self, e: TupleGetItem, env: Env):
        t = yield Eval(e.tuple_value, env)
        if type(t) is not tuple:
            raise RelayRuntimeError(
                f"projection .{e.index} of a value that is not a tuple: {value_str(t, limit=60)}",
                e.span)
        if not 0 <= e.index < len(t):
            raise RelayRuntimeError(
                f"projection .{e.index} out of range for a tuple of {len(t)} fields", e.span)
        self.fired(Rule.SEMANTICS_PROJECTION, e)
        return t[e.index]

    def _eval_if(self, e: If, env: Env):
        c = yield Eval(e.cond, env)
        if type(c) is not np.ndarray or c.dtype != _BOOL or c.ndim != 0:
            raise RelayRuntimeError(
                "the condition of an if must be a scalar bool (Tensor[(), bool]), got "
                + value_str(c, limit=60), e.cond.span or e.span)
        if c:
            return self._if_true(e, env)
        return self._if_false(e, env)

    # [Semantics-If-True]   Γ ⊢ c ⇓ True    Γ ⊢ e1 ⇓ v   ⟹   Γ ⊢ if (c) { e1 } else { e2 } ⇓ v
    def _if_true(self, e: If, env: Env) -> Tail:
        self.fired(Rule.SEMANTICS_IF_TRUE, e)
        return Tail(e.true_branch, env)

    # [Semantics-If-False]  Γ ⊢ c ⇓ False   Γ ⊢ e2 ⇓ v   ⟹   Γ ⊢ if (c) { e1 } else { e2 } ⇓ v
    def _if_false(self, e: If, env: Env) -> Tail:
        self.fired(Rule.SEMANTICS_IF_FALSE, e)
        return Tail(e.false_branch, env)

    def _eval_let(self, e: Let, env: Env) -> Any:
        """A let binding a function literal is recursive (§3); any other let is not."""
        if type(e.value) is Function:
            return self._eval_let_rec(e, env)
        return self._eval_let_value(e, env)

    # [Semantics-Let]   Γ ⊢ e1 ⇓ v1    Γ[x ↦ v1] ⊢ e2 ⇓ v   ⟹   Γ ⊢ let x = e1; e2 ⇓ v
    #                   (e1 not a function literal)
    def _eval_let_value(self, e: Let, env: Env):
        value = e.value
        leaf = self._direct.get(type(value))
        v1 = leaf(value, env) if leaf is not None else (yield Eval(value, env))
        self.fired(Rule.SEMANTICS_LET, e)
        return Tail(e.body, env.extend(e.var, v1))

    # [Semantics-Let-Rec]   c = ⟨fn, Γ, x⟩    Γ[x ↦ c] ⊢ e2 ⇓ v   ⟹   Γ ⊢ let x = fn; e2 ⇓ v
    def _eval_let_rec(self, e: Let, env: Env) -> Tail:
        c = Closure(e.value, env, e.var, "%" + e.var.name_hint)
        self.fired(Rule.SEMANTICS_LET_REC, e)
        return Tail(e.body, env.extend(e.var, c))

    def _eval_call(self, e: Call, env: Env):
        """The premises Semantics-Call, -Call-Op and -ADT-Constructor share: callee, then arguments
        left to right; the callee's value then selects the rule."""
        direct = self._direct
        op = e.op
        leaf = direct.get(type(op))
        f = leaf(op, env) if leaf is not None else (yield Eval(op, env))
        args = []
        for arg in e.args:
            leaf = direct.get(type(arg))
            args.append(leaf(arg, env) if leaf is not None else (yield Eval(arg, env)))
        applier = self._appliers.get(type(f))
        if applier is None:
            raise RelayRuntimeError(
                f"cannot call a value that is not a function: {value_str(f, limit=60)}",
                e.op.span or e.span)
        return applier(f, args, e)

    # [Semantics-Call]   Γ ⊢ e0 ⇓ c = ⟨fn(x1, ..., xn) { body }, Γc (, f)⟩
    #                    Γ ⊢ e1 ⇓ v1  ...  Γ ⊢ en ⇓ vn
    #                    Γc[f ↦ c][x1 ↦ v1, ..., xn ↦ vn]; ∅ ⊢ body ⇓ v
    #                    ⟹   Γ ⊢ e0<τ1, ..., τk>(e1, ..., en) ⇓ v        (type arguments erased)
    def _call_closure(self, c: Closure, args: list[Any], e: Any) -> Tail:
        fn = c.function
        params = fn.params
        if len(args) != len(params):
            raise RelayRuntimeError(
                f"wrong number of arguments: {c.name or 'the function'} expects "
                f"{len(params)}, got {len(args)}", getattr(e, "span", None))
        frame: dict[Var, Any] = dict(zip(params, args))
        if c.self_var is not None and c.self_var not in frame:
            frame[c.self_var] = c
        body = fn.body
        shared = self._shared.get(body)
        if shared is None:
            shared = self.shared_of(body)
        self.fired(Rule.SEMANTICS_CALL, e if e is not None else fn)
        return Tail(body, c.env.activation(frame, shared), e if e is not None else fn)

    # [Semantics-Call-Op]   Γ ⊢ e0 ⇓ op    Γ ⊢ e1 ⇓ v1  ...  Γ ⊢ en ⇓ vn
    #                       ⟦op⟧(v1, ..., vn; normalize_op(attrs)) = v
    #                       ⟹   Γ ⊢ e0(e1, ..., en; attrs) ⇓ v
    def _call_op(self, f: OpValue, args: list[Any], e: Any) -> Any:
        opdef = f.opdef
        span = getattr(e, "span", None)
        if opdef.num_inputs >= 0 and len(args) != opdef.num_inputs:
            raise RelayRuntimeError(
                f"wrong number of arguments: operator {f.name} expects {opdef.num_inputs}, "
                f"got {len(args)}", span)
        attrs = self._op_attrs(opdef, e)
        try:
            result = opdef.impl(*args, **attrs) if attrs else opdef.impl(*args)
        except RelayError as err:
            err.with_span(span)
            raise
        except (ArithmeticError, ValueError, TypeError, IndexError, MemoryError) as exc:
            # Dynamic shapes (Any) and unchecked programs reach numpy's own checks.
            raise RelayRuntimeError(f"operator {f.name} failed: {exc}", span) from exc
        if type(result) is not np.ndarray:
            result = _check_op_result(f.name, result)
        self.fired(Rule.SEMANTICS_CALL_OP, e if e is not None else f)
        return result

    def _op_attrs(self, opdef: Any, e: Any) -> dict[str, Any]:
        """The normalized attributes of an operator call (cached per call node)."""
        if type(e) is not Call:
            return dict(opdef.normalize_attrs({}))
        cached = self._attrs.get(e)
        if cached is not None and cached[0] is opdef:
            return cached[1]
        try:
            attrs = dict(opdef.normalize_attrs(e.attrs))
        except RelayError as err:
            err.with_span(e.span)
            raise
        self._attrs.put(e, (opdef, attrs))
        return attrs

    # [Semantics-ADT-Constructor]   Γ ⊢ e0 ⇓ C    Γ ⊢ e1 ⇓ v1  ...  Γ ⊢ en ⇓ vn    n = arity(C)
    #                               ⟹   Γ ⊢ e0(e1, ..., en) ⇓ C(v1, ..., vn)
    def _call_constructor(self, f: Any, args: list[Any], e: Any) -> Any:
        ctor = f.constructor
        if ctor is None or (type(f) is ConstructorValue and (f.fields or ctor.inputs)):
            raise RelayRuntimeError(
                f"cannot call a value that is not a function: {value_str(f, limit=60)}",
                getattr(e, "span", None))
        if len(args) != len(ctor.inputs):
            raise RelayRuntimeError(
                f"wrong number of arguments: constructor {ctor.name} expects "
                f"{len(ctor.inputs)}, got {len(args)}", getattr(e, "span", None))
        self.fired(Rule.SEMANTICS_ADT_CONSTRUCTOR, e if e is not None else ctor)
        return ConstructorValue(ctor.name, tuple(args), ctor)

    # [Semantics-ADT-Match]   Γ ⊢ e ⇓ v    v ⊭ p1  ...  v ⊭ pi-1    v ⊨ pi ⇒ σ    Γσ ⊢ ei ⇓ v'
    #                         ⟹   Γ ⊢ match (e) { p1 => e1 | ... | pm => em } ⇓ v'
    def _eval_match(self, e: Match, env: Env):
        data = e.data
        leaf = self._direct.get(type(data))
        v = leaf(data, env) if leaf is not None else (yield Eval(data, env))
        for clause in e.clauses:
            sigma = self._matches(clause.lhs, v)
            if sigma is not None:
                self.fired(Rule.SEMANTICS_ADT_MATCH, e)
                return Tail(clause.rhs, env.extend_many(sigma) if sigma else env)
        return self._match_fail(e, v)

    # [Semantics-Match-Fail]   Γ ⊢ e ⇓ v    v ⊭ p1  ...  v ⊭ pm
    #                          ⟹   Γ ⊢ match (e) { p1 => e1 | ... | pm => em } ⇓ error
    def _match_fail(self, e: Match, v: Any) -> Any:
        self.fired(Rule.SEMANTICS_MATCH_FAIL, e)
        raise RelayRuntimeError(non_exhaustive_match(value_str(v, limit=80)), e.span)

    # [Semantics-Ref-Create]   Γ; Δ ⊢ e ⇓ v; Δ'    ℓ ∉ dom(Δ')   ⟹   Γ; Δ ⊢ ref(e) ⇓ ℓ; Δ'[ℓ ↦ v]
    def _eval_ref_create(self, e: RefCreate, env: Env):
        v = yield Eval(e.value, env)
        self.fired(Rule.SEMANTICS_REF_CREATE, e)
        return RefValue(v)

    # [Semantics-Ref-Read]   Γ; Δ ⊢ e ⇓ ℓ; Δ'    Δ'(ℓ) = v   ⟹   Γ; Δ ⊢ !e ⇓ v; Δ'
    def _eval_ref_read(self, e: RefRead, env: Env):
        r = yield Eval(e.ref, env)
        if type(r) is not RefValue:
            raise RelayRuntimeError(
                f"ref_read of a value that is not a reference: {value_str(r, limit=60)}", e.span)
        self.fired(Rule.SEMANTICS_REF_READ, e)
        return r.value

    # [Semantics-Ref-Write]   Γ; Δ ⊢ e1 ⇓ ℓ; Δ'    Γ; Δ' ⊢ e2 ⇓ v; Δ''
    #                         ⟹   Γ; Δ ⊢ e1 := e2 ⇓ (); Δ''[ℓ ↦ v]
    def _eval_ref_write(self, e: RefWrite, env: Env):
        r = yield Eval(e.ref, env)
        v = yield Eval(e.value, env)
        if type(r) is not RefValue:
            raise RelayRuntimeError(
                f"ref_write to a value that is not a reference: {value_str(r, limit=60)}",
                e.span)
        r.value = v
        self.fired(Rule.SEMANTICS_REF_WRITE, e)
        return ()

    # [Semantics-Grad]   expand_P(grad(e)) = e'    Γ; ∅ ⊢ e' ⇓ v   ⟹   Γ ⊢ grad(e) ⇓ v
    def _eval_grad(self, e: Grad, env: Env) -> Tail:
        expansion = self._grads.get(e)
        if expansion is None:
            expansion = self._grads[e] = self._expand_grad(e)
        self.fired(Rule.SEMANTICS_GRAD, e)
        shared = self.shared_of(expansion)
        return Tail(expansion, Env({}, env, {} if shared else None, shared))

    def _expand_grad(self, e: Grad) -> Expr:
        if not _GRAD_EXPANDER:
            raise RelayRuntimeError(
                "grad(...) needs an automatic-differentiation expander (the `ad` package)",
                e.span)
        try:
            expansion = _GRAD_EXPANDER[0](e, self.mod)
        except RelayError as err:
            err.with_span(e.span)
            raise
        if not isinstance(expansion, Expr):
            raise InternalError(
                f"the grad expander returned {type(expansion).__name__}, not an expression")
        return expansion

    # === the matching judgment v ⊨ p ⇒ σ ==================================================

    def _matches(self, p: Pattern, v: Any) -> list[tuple[Var, Any]] | None:
        """σ when ``v ⊨ p ⇒ σ`` (firing the pattern rules used), None when ``v ⊭ p``."""
        if type(p) is PatternConstructor and (type(v) is not ConstructorValue
                                              or v.name != p.constructor.name):
            return None  # the common quick "no": another constructor
        sigma: list[tuple[Var, Any]] = []
        used: list[tuple[Any, Pattern]] = []
        work: list[tuple[Pattern, Any]] = [(p, v)]
        table = self._patterns
        while work:
            q, w = work.pop()
            if not table[type(q)](q, w, sigma, work, used):
                return None
        for rule, q in used:
            self.fired(rule, q)
        return sigma

    # [Semantics-Pattern-Wildcard]   ───────────────   v ⊨ _ ⇒ ∅
    def _match_wildcard(self, p: PatternWildcard, v: Any, sigma: list, work: list,
                        used: list) -> bool:
        used.append((Rule.SEMANTICS_PATTERN_WILDCARD, p))
        return True

    # [Semantics-Pattern-Var]   ───────────────   v ⊨ x ⇒ {x ↦ v}
    def _match_var(self, p: PatternVar, v: Any, sigma: list, work: list, used: list) -> bool:
        sigma.append((p.var, v))
        used.append((Rule.SEMANTICS_PATTERN_VAR, p))
        return True

    # [Semantics-Pattern-Constructor]   v = C(v1, ..., vn)    v1 ⊨ p1 ⇒ σ1  ...  vn ⊨ pn ⇒ σn
    #                                   ⟹   v ⊨ C(p1, ..., pn) ⇒ σ1 ∪ ... ∪ σn
    def _match_constructor(self, p: PatternConstructor, v: Any, sigma: list, work: list,
                           used: list) -> bool:
        if type(v) is not ConstructorValue or v.name != p.constructor.name \
                or len(v.fields) != len(p.patterns):
            return False
        used.append((Rule.SEMANTICS_PATTERN_CONSTRUCTOR, p))
        work.extend(zip(reversed(p.patterns), reversed(v.fields)))
        return True

    # [Semantics-Pattern-Tuple]   v = (v1, ..., vn)    v1 ⊨ p1 ⇒ σ1  ...  vn ⊨ pn ⇒ σn
    #                             ⟹   v ⊨ (p1, ..., pn) ⇒ σ1 ∪ ... ∪ σn
    def _match_tuple(self, p: PatternTuple, v: Any, sigma: list, work: list, used: list) -> bool:
        if type(v) is not tuple or len(v) != len(p.patterns):
            return False
        used.append((Rule.SEMANTICS_PATTERN_TUPLE, p))
        work.extend(zip(reversed(p.patterns), reversed(v)))
        return True


def _check_op_result(name: str, result: Any) -> Any:
    """An operator's result as tensors (0-d arrays for numpy scalars); InternalError otherwise."""
    if isinstance(result, np.ndarray):
        return result
    if isinstance(result, np.generic):
        return np.asarray(result)
    if type(result) is tuple:
        return tuple(_check_op_result(name, r) for r in result)
    raise InternalError(
        f"operator {name} returned {type(result).__name__}, not a tensor (registry contract)")
