"""Compiled premises and cases: the rule cases of :mod:`interpreter.eval`, specialized per node.

The evaluator's cases (:class:`interpreter.eval.Interpreter`) are written once per rule and
dispatch on the *type* of the node at every step. AST nodes are immutable, so everything
that dispatch decides about a node can be decided once: this module turns a node into a
Python closure, cached per node (:class:`~interpreter.machine.NodeCache`), that does what
the cases do for that node — the same rules, fired on the same nodes in the same order,
the same values, effects and errors (with the same spans) — without looking anything up
again. Two kinds of closures:

* a **value code** ``code(interp, env)`` (:func:`value_code`) establishes a premise Γ ⊢ e ⇓ v
  *in place* (see "Premises in place" in :mod:`interpreter.eval`): for a leaf (variable,
  constant, global, operator, constructor), and for a tree of at most ``INLINE_HEIGHT``
  levels of operator and constructor calls, projections, tuples and function literals over
  leaves in which no node occurs twice (:func:`inline_plan`). It returns the value, or
  :data:`~interpreter.machine.PENDING` — before firing anything — when the premise needs
  the driver: a node of the tree is graph-shared in the current activation
  (Semantics-Shared goes through the driver's memo), or the expression is of another kind
  (a closure call, a ``let``, an ``if``, ...; its code always answers PENDING). A tree
  code composes its children's codes: callee, arguments left to right, then the call's
  rule (Semantics-Call-Op / -ADT-Constructor); the tuple, then Semantics-Projection; the
  fields left to right, then Semantics-Product; the literal's Semantics-Closure.
  Recursion is bounded by ``INLINE_HEIGHT`` (compilation and evaluation alike).

* a **step** ``step(interp, e, env)`` (:func:`step_of`) is what the driver
  (:meth:`Machine._drive <interpreter.machine.Machine>`) runs for a node, and answers
  what a case answers: a value, a :class:`~interpreter.machine.Tail`, or a generator
  awaiting premises through the driver. Leaves and the rarer nodes get the generic case
  itself. A ``let`` begins a **chain**: the maximal sequence of ``let``s along the
  bodies. The step of its k-th ``let`` runs lets k, k+1, ... in place — each
  binding's value code, then Semantics-Let (or Semantics-Let-Rec for a function literal)
  and Γ[x ↦ v] — which is exactly what the driver does when the case of one ``let``
  returns ``Tail(body, Γ[x ↦ v])`` and the body is the next ``let``. It hands control back
  to the driver where the driver would do something else: at a ``let`` that is
  graph-shared (``Tail`` to it: the driver's memo) or whose value needs the driver (that
  ``let``'s generic case, which awaits the premise), and at the chain's body, which it
  runs with the body's own step when the body is not graph-shared (a step never runs
  another chain, so no recursion grows with the program). A call's step establishes the
  callee and the arguments with their value codes and applies the callee's value
  (Semantics-Call returns the body's ``Tail``); an ``if``'s and a ``match``'s step
  establish the condition / scrutinee in place and run the rule's case.

Nothing here is used while a derivation is recorded (every judgment is reported there,
see :class:`~interpreter.machine.Recorder`): the interpreter then uses the generic cases
only. The equivalence of the two paths (same rule sequence, same outcomes) is what
``tests/interpreter/test_interpreter_inplace.py`` checks, on golden, targeted and
generated programs.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice
from typing import Any

import numpy as np

from interpreter.env import Env
from interpreter.machine import MISSING, PENDING, NodeCache, Rule, Tail
from interpreter.values import Closure, OpValue
from semantics.errors import InternalError, RelayError, RelayRuntimeError, unbound_variable
from semantics.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)

__all__ = ["INLINE_HEIGHT", "OP_FAILURES", "Cases", "Code", "Step", "inline_plan", "lookup_parent",
           "op_failed", "step_of", "value_code"]

Code = Callable[[Any, Env], Any]
"""A value code: ``code(interp, env)`` is the value of its node, or PENDING."""

Step = Callable[[Any, Any, Env], Any]
"""A step: ``step(interp, node, env)`` answers what the node's case answers."""

INLINE_HEIGHT = 6
"""How deep an expression established in place may be (it bounds the recursion)."""

_LEAF_NODES = (Var, GlobalVar, Constant, Op, Constructor)
_CALLEES = (Op, Constructor)
OP_FAILURES = (ArithmeticError, ValueError, TypeError, IndexError, MemoryError)
"""What Semantics-Call-Op reports as "operator ... failed" (as ``Interpreter._call_op`` does)."""


def op_failed(f: OpValue, exc: BaseException, span: Any) -> RelayRuntimeError:
    """The error of an operator whose computation raised ``exc`` (``Interpreter._call_op``'s)."""
    return RelayRuntimeError(f"operator {f.name} failed: {exc}", span)


def lookup_parent(env: Env, x: Var) -> Any:
    """Γ(x) found in the frames enclosing ``env``'s own (Semantics-Id's premise, the rest of
    the walk ``Interpreter._eval_var`` makes).

    Raises:
        RelayRuntimeError: ``x`` is unbound.
    """
    frame = env.parent
    while frame is not None:
        v = frame.vars.get(x, MISSING)
        if v is not MISSING:
            return v
        frame = frame.parent
    raise RelayRuntimeError(unbound_variable("%" + x.name_hint), x.span)

# node -> value code; node -> step (the caches shared by all evaluations: nodes are immutable).
_CODES = NodeCache(1 << 16)
_STEPS = NodeCache(1 << 16)


# --- which expressions are established in place -----------------------------------------------

def inline_plan(e: Expr) -> frozenset[Expr] | None:
    """The non-leaf nodes of ``e`` when it can be established in place, else None.

    That is when ``e`` is a tree of operator or constructor calls, projections, tuples and
    function literals (whose bodies are not evaluated) over leaves — variables, constants,
    globals, operators, constructors — at most ``INLINE_HEIGHT`` levels deep, in which no
    node is met twice (explicit stack). A leaf alone is not a plan (its code is direct).
    """
    internal: set[Expr] = set()
    work: list[tuple[Expr, int]] = [(e, 0)]
    while work:
        node, depth = work.pop()
        t = type(node)
        if t in _LEAF_NODES:
            continue
        if depth >= INLINE_HEIGHT or node in internal:
            return None
        if t is Call and type(node.op) in _CALLEES:  # type: ignore[attr-defined]
            kids: tuple[Expr, ...] = node.args  # type: ignore[attr-defined]
        elif t is TupleGetItem:
            kids = (node.tuple_value,)  # type: ignore[attr-defined]
        elif t is Tuple:
            kids = node.fields  # type: ignore[attr-defined]
        elif t is Function:
            kids = ()
        else:
            return None
        internal.add(node)
        work.extend((kid, depth + 1) for kid in kids)
    return frozenset(internal)


def _pending(interp: Any, env: Env) -> Any:
    """The code of an expression that is never established in place."""
    return PENDING


def value_code(e: Expr) -> Code:
    """The value code of ``e`` (cached per node); see the module docstring."""
    code = _CODES.get(e)
    if code is not None:
        return code
    t = type(e)
    if t in _LEAF_NODES:
        code = _leaf(e)
    else:
        plan = inline_plan(e)
        if plan is None:
            code = _pending
        else:
            code = _guarded(plan, _tree(e))
    return _CODES.put(e, code)


def _guarded(plan: frozenset[Expr], code: Code) -> Code:
    """``code``, or PENDING (nothing fired) when a node of the plan is graph-shared here."""
    def guarded(interp: Any, env: Env) -> Any:
        shared = env.shared
        if shared and not shared.isdisjoint(plan):
            return PENDING  # Semantics-Shared: through the driver's memo
        return code(interp, env)
    return guarded


# --- the codes of leaves (rules without premises) ---------------------------------------------

def _leaf(e: Expr) -> Code:
    t = type(e)
    if t is Var:
        return _var(e)  # type: ignore[arg-type]
    if t is Constant:
        data = e.data  # type: ignore[attr-defined]

        # [Semantics-Const]
        def const(interp: Any, env: Env) -> Any:
            interp.fired(Rule.SEMANTICS_CONST, e)
            return data
        return const
    if t is Op:
        return _op(e)  # type: ignore[arg-type]
    if t is GlobalVar:
        def global_(interp: Any, env: Env) -> Any:
            return interp._eval_global_var(e, env)
        return global_

    def constructor(interp: Any, env: Env) -> Any:
        return interp._eval_constructor(e, env)
    return constructor


def _var(x: Var) -> Code:
    # [Semantics-Id]   Γ(x) = v   ⟹   Γ ⊢ x ⇓ v
    def var(interp: Any, env: Env) -> Any:
        frame: Env | None = env
        while frame is not None:
            v = frame.vars.get(x, MISSING)
            if v is not MISSING:
                interp.fired(Rule.SEMANTICS_ID, x)
                return v
            frame = frame.parent
        raise RelayRuntimeError(unbound_variable("%" + x.name_hint), x.span)
    return var


def _op(o: Op) -> Code:
    name = o.name

    # [Semantics-Op]   (the interpreter's OpValue for the name, made by the case the first time)
    def op(interp: Any, env: Env) -> Any:
        v = interp._ops.get(name)
        if v is None:
            return interp._eval_op(o, env)
        interp.fired(Rule.SEMANTICS_OP, o)
        return v
    return op


# --- the codes of trees (established in place; recursion bounded by INLINE_HEIGHT) -----------

def _tree(e: Expr) -> Code:
    """The code of a node :func:`inline_plan` accepted (its plan is checked by the caller)."""
    t = type(e)
    if t in _LEAF_NODES:
        return _leaf(e)
    if t is Call:
        return _call_in_place(e)  # type: ignore[arg-type]
    if t is TupleGetItem:
        return _projection(e, _tree(e.tuple_value))  # type: ignore[attr-defined]
    if t is Tuple:
        return _product(e, [_tree(f) for f in e.fields])  # type: ignore[attr-defined]
    assert t is Function  # inline_plan accepts nothing else

    # [Semantics-Closure]
    def closure(interp: Any, env: Env) -> Any:
        interp.fired(Rule.SEMANTICS_CLOSURE, e)
        return Closure(e, env)  # type: ignore[arg-type]
    return closure


def _projection(e: TupleGetItem, tuple_code: Code) -> Code:
    index = e.index

    # [Semantics-Projection]   Γ ⊢ e ⇓ (v0, ..., vn-1)   0 ≤ i < n   ⟹   Γ ⊢ e.i ⇓ vi
    def projection(interp: Any, env: Env) -> Any:
        t = tuple_code(interp, env)
        if type(t) is tuple and 0 <= index < len(t):
            interp.fired(Rule.SEMANTICS_PROJECTION, e)
            return t[index]
        return interp._projection(e, env, [t])  # the case raises the error
    return projection


def _product(e: Tuple, field_codes: list[Code]) -> Code:
    # [Semantics-Product]   Γ ⊢ e1 ⇓ v1  ...  Γ ⊢ en ⇓ vn   ⟹   Γ ⊢ (e1, ..., en) ⇓ (v1, ..., vn)
    def product(interp: Any, env: Env) -> Any:
        fields = tuple([code(interp, env) for code in field_codes])
        interp.fired(Rule.SEMANTICS_PRODUCT, e)
        return fields
    return product


def _call_in_place(e: Call) -> Code:
    """An operator or constructor call: callee, arguments left to right, then the rule."""
    callee = _leaf(e.op)
    arg_codes = [_tree(a) for a in e.args]
    if type(e.op) is Op:
        return _op_call(e, callee, arg_codes)

    # [Semantics-ADT-Constructor] (and its errors) through the case
    def constructor_call(interp: Any, env: Env) -> Any:
        f = callee(interp, env)
        return interp.call_value(f, [code(interp, env) for code in arg_codes], e)
    return constructor_call


def _op_call(e: Call, callee: Code, arg_codes: list[Code]) -> Code:
    """[Semantics-Call-Op] at one node: the case's fast path (the verdict kept for the last
    argument signature, see ``interpreter.eval._OpSite``) read without lookups."""
    span = e.span

    def op_call(interp: Any, env: Env) -> Any:
        f = callee(interp, env)
        args = [code(interp, env) for code in arg_codes]
        site = interp._sites.get(e)
        if site is not None and type(f) is OpValue:
            last = site.last
            opdef = f.opdef
            if last is not None and site.opdef is opdef and site.impl is opdef.impl \
                    and len(args) == len(last[0]):
                dtypes, shapes, verdict = last
                i = 0
                for a in args:
                    if type(a) is not np.ndarray or a.dtype is not dtypes[i] \
                            or a.shape != shapes[i]:
                        break
                    i += 1
                else:
                    try:
                        result = site.decided(verdict, args, site.attrs)
                    except RelayError as err:
                        err.with_span(span)
                        raise
                    except OP_FAILURES as exc:
                        raise op_failed(f, exc, span) from exc
                    interp.fired(Rule.SEMANTICS_CALL_OP, e)
                    return result
        return interp.call_value(f, args, e)
    return op_call


# --- steps: what the driver runs for a node ---------------------------------------------------

Cases = dict[type, Step]
"""The generic cases by node type (the interpreter's axioms and cases)."""


def step_of(e: Expr, cases: Cases) -> Step:
    """The step of ``e`` (cached per node); ``cases`` holds the generic case of each node type
    (see the module docstring), used as is for the nodes without a specialized step.

    Raises:
        InternalError: ``e`` is of a type no case evaluates.
    """
    step = _STEPS.get(e)
    if step is not None:
        return step
    t = type(e)
    generic = cases.get(t)
    if generic is None:
        raise InternalError(f"no evaluation rule for {t.__name__}")
    if t is Let:
        return _chain(e, generic)  # type: ignore[arg-type]
    if t is Call and type(e.op) not in _CALLEES:  # type: ignore[attr-defined]
        step = _closure_call(e, generic)  # type: ignore[arg-type]
    elif t is If:
        step = _if(e, generic)  # type: ignore[arg-type]
    elif t is Match:
        step = _match(e, generic)  # type: ignore[arg-type]
    elif t in _LEAF_NODES:
        step = generic
    else:
        code = value_code(e)
        step = generic if code is _pending else _in_place_step(code, generic)
    return _STEPS.put(e, step)


def _in_place_step(code: Code, generic: Step) -> Step:
    def in_place(interp: Any, e: Any, env: Env) -> Any:
        v = code(interp, env)
        return generic(interp, e, env) if v is PENDING else v
    return in_place


def _closure_call(e: Call, generic: Step) -> Step:
    """The premises of Semantics-Call (callee, arguments left to right) in place, then the
    callee's value selects the rule (``Interpreter.call_value``)."""
    callee = value_code(e.op)
    arg_codes = [value_code(a) for a in e.args]

    def closure_call(interp: Any, _e: Any, env: Env) -> Any:
        f = callee(interp, env)
        if f is PENDING:
            return generic(interp, e, env)
        args: list[Any] = []
        for code in arg_codes:
            v = code(interp, env)
            if v is PENDING:
                return interp.resume_call(e, env, [f, *args])
            args.append(v)
        if type(f) is Closure:
            return interp._call_closure(f, args, e)
        return interp.call_value(f, args, e)
    return closure_call


def _if(e: If, generic: Step) -> Step:
    cond = value_code(e.cond)

    def if_(interp: Any, _e: Any, env: Env) -> Any:
        c = cond(interp, env)
        if c is PENDING:
            return generic(interp, e, env)
        return interp._if(e, env, [c])
    return if_


def _match(e: Match, generic: Step) -> Step:
    data = value_code(e.data)

    def match(interp: Any, _e: Any, env: Env) -> Any:
        v = data(interp, env)
        if v is PENDING:
            return generic(interp, e, env)
        return interp._match(e, env, [v])
    return match


# One binding of a chain: the let, its variable, its value's code (None for a function
# literal: Semantics-Let-Rec) and the closure's name for messages.
_Binding = tuple[Let, Var, "Code | None", str]


def _chain(head: Let, generic: Step) -> Step:
    """The steps of the chain of ``let`` s beginning at ``head`` (one per ``let``, all
    cached; each runs the chain from its own ``let``). Returns ``head``'s.

    The chain ends at the first body that is not a ``let``, or at a ``let`` that already
    has a step (part of a chain compiled before, entered from the middle): the last step
    hands that one to the driver (``Tail``), so steps never nest.
    """
    bindings: list[_Binding] = []
    node: Expr = head
    while type(node) is Let and (node is head or _STEPS.get(node) is None):
        let: Let = node  # type: ignore[assignment]
        value = let.value
        if type(value) is Function:
            bindings.append((let, let.var, None, "%" + let.var.name_hint))
        else:
            bindings.append((let, let.var, value_code(value), ""))
        node = let.body
    steps = [_chain_from(bindings, k, node, generic) for k in range(len(bindings))]
    for (let, _, _, _), step in zip(bindings, steps):
        _STEPS.put(let, step)
    return steps[0]


def _chain_from(bindings: list[_Binding], start: int, rest: Expr, generic: Step) -> Step:
    """The step of the ``start``-th ``let`` of a chain (see :func:`_chain`)."""
    body: list[Any] = [None]  # the body's step, made on first use (None: hand it back)

    def chain(interp: Any, _e: Any, env: Env) -> Any:
        shared = env.shared
        fired = interp.fired
        first = True
        for let, var, code, name in islice(bindings, start, None):
            if first:
                first = False
            elif shared and let in shared:
                return Tail(let, env)  # Semantics-Shared: through the driver's memo
            if code is None:
                # [Semantics-Let-Rec]   c = ⟨fn, Γ, x⟩    Γ[x ↦ c] ⊢ e2 ⇓ v
                c = Closure(let.value, env, var, name)  # type: ignore[arg-type]
                fired(Rule.SEMANTICS_LET_REC, let)
                env = env.extend(var, c)
                continue
            v = code(interp, env)
            if v is PENDING:
                return generic(interp, let, env)  # the let's case awaits its value
            # [Semantics-Let]   Γ ⊢ e1 ⇓ v1    Γ[x ↦ v1] ⊢ e2 ⇓ v
            fired(Rule.SEMANTICS_LET, let)
            env = env.extend(var, v)
        if type(rest) is Let or (shared and rest in shared):
            return Tail(rest, env)
        step = body[0]
        if step is None:
            step = body[0] = step_of(rest, interp.CASES_BY_TYPE)
        return step(interp, rest, env)
    return chain
