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
(:meth:`Interpreter.run`) keeps the suspended cases on an explicit list, so the
depth of a derivation is bounded by memory, never by Python's recursion limit.
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
activation (see :func:`shared_nodes`).

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
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from interpreter.env import Env
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
    children,
)
from semantics.module import IRModule
from semantics.rules import Rule as _RuleEnum
from semantics.visitor import post_order

__all__ = ["Eval", "Interpreter", "Recorder", "Tail", "evaluate", "evaluate_recorded",
           "register_grad_expander", "shared_nodes"]


class Rule:
    """The members of :class:`semantics.rules.Rule`, as plain class attributes (fast to read)."""


for _member in _RuleEnum:
    setattr(Rule, _member.name, _member)


def Eval(expr: Expr, env: Env) -> tuple[Expr, Env]:  # noqa: N802 - names the judgment requested
    """The request a case ``yield``s for a premise Γ ⊢ e ⇓ v."""
    return (expr, env)


class Tail:
    """A case's instruction to continue with ``expr`` in ``env`` (a tail premise).

    ``call`` is the Call node (or the function, for an application from Python)
    when the tail premise is a closure's body: a new activation begins there.
    """

    __slots__ = ("expr", "env", "call")

    def __init__(self, expr: Expr, env: Env, call: Expr | None = None):
        self.expr = expr
        self.env = env
        self.call = call


class Recorder(Protocol):
    """Receives the derivation as it is built (used by ``relay run --trace``).

    ``open(node)`` starts the judgment for ``node``; ``rule(rule, node)`` reports a
    rule application (for the open judgment, or a pattern judgment inside it);
    ``close(value)`` ends the innermost open judgment with its value. While a
    recorder is attached, tail premises are awaited like the others, so the
    derivation is a proper tree (and tail calls count towards ``max_depth``).
    """

    def open(self, node: Expr) -> None: ...
    def rule(self, rule: Any, node: Any) -> None: ...
    def close(self, value: Any) -> None: ...


# --- the grad hook ----------------------------------------------------------------------------

GradExpander = Callable[[Grad, IRModule], Expr]
_GRAD_EXPANDER: list[GradExpander] = []


def register_grad_expander(fn: GradExpander | None) -> None:
    """Install the expansion of the ``grad(e)`` macro (Semantics-Grad).

    Args:
        fn: called as ``fn(grad_node, module)``; returns the expression that
            ``grad_node`` stands for (evaluated in ``grad_node``'s environment).
            The ``ad`` package registers its reverse-mode expander on import.
            ``None`` removes the current expander.
    """
    _GRAD_EXPANDER.clear()
    if fn is not None:
        _GRAD_EXPANDER.append(fn)


# --- sharing ----------------------------------------------------------------------------------

_LEAF_TYPES = (Var, GlobalVar, Constant, Op, Constructor)


def _not_function(node: Expr) -> bool:
    return type(node) is not Function


def shared_nodes(body: Expr) -> frozenset[Expr]:
    """The nodes of ``body`` reachable along more than one edge (graph bindings).

    Nested function bodies are not entered (each function has its own set) and
    leaves (variables, constants, globals, operators, constructors) are left out:
    evaluating them again is free of effects and O(1). These are the nodes
    Semantics-Shared evaluates once per activation.
    """
    order = post_order(body, _not_function)
    uses: dict[int, int] = {}
    for node in order:
        if type(node) is Function:
            continue
        for kid in children(node):
            uses[id(kid)] = uses.get(id(kid), 0) + 1
    return frozenset(n for n in order
                     if uses.get(id(n), 0) > 1 and not isinstance(n, _LEAF_TYPES))


class _NodeCache(dict):
    """Facts derived from AST nodes, shared by all evaluations (nodes are immutable).

    Keys are the nodes themselves (identity-hashed and held strongly, so an entry can
    never be confused with a later node at a reused address); when ``limit`` entries
    are exceeded the cache is simply emptied, which keeps it bounded.
    """

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def put(self, key: Any, value: Any) -> Any:
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value


# Shared nodes per function body, and normalized attributes per operator call.
_SHARED_CACHE = _NodeCache(2048)
_ATTRS_CACHE = _NodeCache(16384)


def _remember(memo: dict[Expr, Any], node: Expr):
    """A driver frame storing the value of a shared node when it arrives (Semantics-Shared)."""
    value = yield
    memo[node] = value
    return value


def _await(expr: Expr, env: Env):
    """A driver frame awaiting a tail premise (recording mode only: no tail calls)."""
    value = yield (expr, env)
    return value


_REMEMBER_CODE = _remember.__code__
_GENERATOR = types.GeneratorType
_MISSING = object()
_BOOL = np.dtype(bool)


class _CallbackError(Exception):
    """Wraps an exception raised by the user's ``trace`` callable, to re-raise it unchanged."""

    def __init__(self, original: BaseException):
        super().__init__(str(original))
        self.original = original


# --- the interpreter --------------------------------------------------------------------------

class Interpreter:
    """Evaluates expressions of one module. See the module docstring for the design.

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
        self.mod = mod
        self.fuel = fuel
        self.trace = trace
        self.max_depth = max_depth
        self.recorder = recorder
        self.steps = 0
        self._globals: dict[str, Closure] = {}
        self._ops: dict[str, OpValue] = {}
        self._nullary: dict[Constructor, ConstructorValue] = {}
        self._shared = _SHARED_CACHE
        self._attrs = _ATTRS_CACHE
        self._grads: dict[Grad, Expr] = {}
        if fuel is None and trace is None and recorder is None:
            self.fired = self._fired_count
        else:
            self.fired = self._fired_observed
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

    # --- bookkeeping --------------------------------------------------------------------
    def _fired_count(self, rule: Any, node: Any) -> None:
        self.steps += 1

    def _fired_observed(self, rule: Any, node: Any) -> None:
        self.steps += 1
        if self.fuel is not None and self.steps > self.fuel:
            raise RelayRuntimeError(
                f"out of fuel: the evaluation needs more than {self.fuel} rule applications",
                getattr(node, "span", None))
        if self.trace is not None:
            try:
                self.trace(rule.value, node)
            except BaseException as exc:  # noqa: BLE001 - the user's callback; re-raised as is
                raise _CallbackError(exc) from exc
        if self.recorder is not None:
            self.recorder.rule(rule, node)

    def shared_of(self, body: Expr) -> frozenset[Expr]:
        """The shared nodes of a function body (computed once per body)."""
        found = self._shared.get(body)
        if found is None:
            found = self._shared.put(body, shared_nodes(body))
        return found

    def root_env(self, expr: Expr) -> Env:
        """The environment of a top-level evaluation of ``expr`` (its own sharing scope)."""
        shared = self.shared_of(expr)
        return Env({}, None, {} if shared else None, shared)

    # --- the driver ---------------------------------------------------------------------
    def run(self, expr: Expr, env: Env, depth: int = 0) -> Any:
        """Γ ⊢ expr ⇓ v: drive the cases on an explicit stack and return ``v``.

        ``depth`` is the activation depth of ``env`` (0 at the top level).
        """
        axioms = self._axioms
        cases = self._cases
        rec = self.recorder
        max_depth = self.max_depth
        gens: list[Any] = []
        depths: list[int] = []
        e = expr
        while True:
            # -- establish Γ ⊢ e ⇓ ? : a value now, or a suspended case pushed --------------
            shared = env.shared
            if shared and e in shared:
                memo = env.memo
                hit = memo.get(e, _MISSING)
                if hit is not _MISSING:
                    if rec is not None:
                        rec.open(e)
                    value = self._eval_shared(e, hit)
                    if rec is not None:
                        rec.close(value)
                    result = value
                    pending = False
                else:
                    frame = _remember(memo, e)
                    next(frame)
                    gens.append(frame)
                    depths.append(depth)
                    pending = True
            else:
                pending = True
            if pending:
                if rec is not None:
                    rec.open(e)
                axiom = axioms.get(type(e))
                if axiom is not None:
                    result = axiom(e, env)
                    if rec is not None:
                        rec.close(result)
                else:
                    case = cases.get(type(e))
                    if case is None:
                        raise InternalError(f"no evaluation rule for {type(e).__name__}")
                    result = case(e, env)
                    if type(result) is _GENERATOR:
                        gens.append(result)
                        depths.append(depth)
                        result = None
                    elif type(result) is Tail:
                        # A rule with no premise left but a tail one (Semantics-Let-Rec).
                        if rec is not None:
                            frame = _await(result.expr, result.env)
                            gens.append(frame)
                            depths.append(depth)
                            result = None
                        else:
                            e = result.expr
                            env = result.env
                            continue
            # -- deliver `result` to the innermost suspended case ----------------------------
            while gens:
                try:
                    request = gens[-1].send(result)
                except StopIteration as stop:
                    done = gens.pop()
                    d = depths.pop()
                    outcome = stop.value
                    if type(outcome) is Tail:
                        if outcome.call is not None:
                            # A new activation, one deeper than the one awaiting its value.
                            d = (d if rec is not None else depths[-1] if depths else 0) + 1
                            if d > max_depth:
                                raise RelayRuntimeError(
                                    f"stack exhausted: more than {max_depth} nested calls",
                                    outcome.call.span) from None
                        if rec is not None:
                            frame = _await(outcome.expr, outcome.env)
                            gens.append(frame)
                            depths.append(d)
                            result = None
                            continue
                        e = outcome.expr
                        env = outcome.env
                        depth = d
                        break
                    result = outcome
                    if rec is not None and done.gi_code is not _REMEMBER_CODE:
                        rec.close(result)
                    continue
                e, env = request
                depth = depths[-1]
                break
            else:
                return result

    def apply(self, f: Any, args: list[Any], node: Expr | None = None) -> Any:
        """Apply a function value to argument values (an application made from Python)."""
        applier = self._appliers.get(type(f))
        if applier is None:
            raise RelayRuntimeError(
                f"cannot call a value that is not a function: {value_str(f, limit=60)}",
                getattr(node, "span", None))
        outcome = applier(f, args, node)
        if type(outcome) is Tail:
            if self.max_depth < 1:
                raise RelayRuntimeError(
                    f"stack exhausted: more than {self.max_depth} nested calls",
                    getattr(node, "span", None))
            return self.run(outcome.expr, outcome.env, 1)
        return outcome

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


# --- the public entry point -------------------------------------------------------------------

def evaluate(p: Any, *args: Any, entry: str = "main", check: bool = True,
             fuel: int | None = None, trace: Callable[[str, Any], Any] | None = None,
             max_depth: int = 100_000) -> Any:
    """Run a program with the big-step semantics (ARCHITECTURE.md §4).

    Args:
        p: an :class:`IRModule` (its ``entry`` function is applied to ``args``), an
            expression (closed; when ``args`` are given it must evaluate to a function, which
            is applied to them) or module text (parsed with ``semantics.parse``). Prelude
            definitions the program uses are available.
        args: numpy arrays, Python scalars (converted to the parameter's declared dtype),
            tuples, :class:`~interpreter.values.ConstructorValue` s (resolved by name).
        entry: the global to run when ``p`` is a module or text.
        check: type-check the program first (``typechecker.check``).
        fuel: the number of rule applications allowed (None: no bound).
        trace: called as ``trace(rule_name, node)`` for every rule application, with the
            rule's name in ``semantics/RULES.md``.
        max_depth: the bound on nested non-tail calls.
    Returns:
        The value: an ndarray of exactly the Relay dtype (0-d for scalars), a tuple, a
        ConstructorValue, a Closure, a RefValue or an OpValue.
    Raises:
        ParseError: malformed program text.
        RelayTypeError: ``check`` is on and the program is ill-typed.
        RelayRuntimeError: wrong arguments, or the evaluation fails (non-exhaustive match,
            integer division by zero, out of fuel, stack exhausted, ...).
    """
    _check_options(entry, fuel, trace, max_depth)
    return _guarded(p, args, entry, check, fuel, trace, max_depth, None)


def evaluate_recorded(p: Any, *args: Any, recorder: Recorder, entry: str = "main",
                      check: bool = True, fuel: int | None = None,
                      max_depth: int = 100_000) -> Any:
    """:func:`evaluate` reporting the derivation to ``recorder`` (``relay run --trace``).

    While recording, tail premises are awaited like the others (the derivation is a tree),
    so tail calls count towards ``max_depth``. Raises as :func:`evaluate` does.
    """
    _check_options(entry, fuel, None, max_depth)
    return _guarded(p, args, entry, check, fuel, None, max_depth, recorder)


def _guarded(p: Any, args: tuple[Any, ...], entry: str, check: bool, fuel: int | None,
             trace: Callable[[str, Any], Any] | None, max_depth: int,
             recorder: Recorder | None) -> Any:
    """Run :func:`_evaluate`; only RelayErrors (and InternalErrors, for bugs) get out."""
    try:
        with np.errstate(all="ignore"):
            return _evaluate(p, args, entry, check, fuel, trace, max_depth, recorder)
    except _CallbackError as err:
        raise err.original from None
    except (RelayError, InternalError):
        raise
    except RecursionError as exc:  # pragma: no cover - would be an interpreter bug
        raise InternalError(f"the interpreter recursed too deeply: {exc}") from exc
    except Exception as exc:
        raise InternalError(f"evaluation failed unexpectedly: {type(exc).__name__}: {exc}") \
            from exc


def _check_options(entry: Any, fuel: Any, trace: Any, max_depth: Any) -> None:
    if not isinstance(entry, str):
        raise RelayRuntimeError(f"entry must be a global's name, got {entry!r}")
    if fuel is not None and (isinstance(fuel, bool) or not isinstance(fuel, int) or fuel < 0):
        raise RelayRuntimeError(f"fuel must be a non-negative integer or None, got {fuel!r}")
    if trace is not None and not callable(trace):
        raise RelayRuntimeError(f"trace must be callable, got {trace!r}")
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
        raise RelayRuntimeError(f"max_depth must be a positive integer, got {max_depth!r}")


def _evaluate(p: Any, args: tuple[Any, ...], entry: str, check: bool, fuel: int | None,
              trace: Callable[[str, Any], Any] | None, max_depth: int,
              recorder: Recorder | None) -> Any:
    from interpreter.convert import (
        convert_arguments,
        export_value,
        prelude_for_expr,
        with_prelude,
    )

    if isinstance(p, str):
        from semantics.parser import parse

        p = parse(p)
    if isinstance(p, IRModule):
        mod = with_prelude(p)
        fn = mod.functions.get(entry.lstrip("@"))
        if fn is None:
            raise RelayRuntimeError(f"the module has no global @{entry.lstrip('@')}")
        where = "@" + entry.lstrip("@")
        if len(args) != len(fn.params):
            raise RelayRuntimeError(
                f"wrong number of arguments: {where} expects {len(fn.params)}, got {len(args)}",
                fn.span)
        param_types = _type_check(mod, fn, entry.lstrip("@")) if check else None
        values = convert_arguments(fn.params, args, mod, where, param_types)
        interp = Interpreter(mod, fuel=fuel, trace=trace, max_depth=max_depth,
                             recorder=recorder)
        gv = GlobalVar(entry.lstrip("@"), span=fn.span)
        closure = interp.global_closure(gv)
        interp.fired(Rule.SEMANTICS_GLOBAL, gv)
        return export_value(interp.apply(closure, values, fn))
    if isinstance(p, Expr):
        mod = prelude_for_expr(p)
        param_types = None
        if check:
            wrapped = IRModule.from_expr(p, mod.functions, mod.types)
            param_types = _type_check(wrapped, wrapped["main"], "main")
        interp = Interpreter(mod, fuel=fuel, trace=trace, max_depth=max_depth,
                             recorder=recorder)
        value = interp.run(p, interp.root_env(p), 0)
        if args:
            if type(value) is Closure:
                where = value.name or "the function"
                types_ = param_types if value.function is p else None
                value = interp.apply(
                    value, convert_arguments(value.params, args, mod, where, types_), p)
            elif type(value) in (OpValue, ConstructorFunction):
                value = interp.apply(value, [convert_value_untyped(a, mod) for a in args], p)
            else:
                raise RelayRuntimeError(
                    "arguments were given, but the expression's value is not a function: "
                    + value_str(value, limit=60), p.span)
        return export_value(value)
    raise RelayRuntimeError(
        "evaluate expects an IRModule, an expression or program text, got "
        + type(p).__name__)


def convert_value_untyped(x: Any, mod: IRModule) -> Any:
    """A Python argument as a value when no parameter type is known (operators, constructors)."""
    from interpreter.convert import convert_value

    return convert_value(x, None, mod)


def _type_check(mod: IRModule, fn: Function, name: str) -> list[Any] | None:
    """Type-check ``mod``; return the entry's parameter types when some are not annotated."""
    try:
        import typechecker
    except ImportError as exc:
        raise InternalError(f"check=True needs the type checker: {exc}") from exc
    if all(param.type_annotation is not None for param in fn.params):
        typechecker.check(mod)
        return None
    inferred = typechecker.infer(mod)
    return [getattr(param, "checked_type", None) for param in inferred[name].params]
