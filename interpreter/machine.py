"""The explicit-stack driver of the evaluator: how premises are established (RULES.md "Evaluation").

:mod:`interpreter.eval` holds the rule cases; this module holds the machine
that runs them (the design is described at the top of :mod:`interpreter.eval`):

* the requests a case makes: ``yield Eval(e, env)`` for a premise, ``return
  Tail(e, env)`` for a tail premise (``Tail(..., call=node)`` opens a new
  activation);
* :class:`Machine`, which :class:`interpreter.eval.Interpreter` extends with the
  rule cases: :meth:`Machine.run` keeps the suspended cases on an explicit list
  (never Python recursion), runs each node's case — or its generated block once the node
  is hot (:mod:`interpreter.codegen`; never while a derivation is recorded) —,
  continues tail premises in place, accounts the
  activation depth against ``max_depth`` ("stack exhausted") and
  :meth:`Machine.apply` applies a function value from Python; the rule-application
  bookkeeping ``fired`` (a no-op when nothing observes it) counts steps, enforces
  ``fuel`` ("out of fuel"), calls the user's ``trace`` and reports to a
  :class:`Recorder`;
* the driver frames: ``_remember`` stores a shared node's value in the
  activation's memo M (Semantics-Shared), ``_await`` awaits a tail premise while a
  derivation is recorded;
* the sharing analysis :func:`shared_nodes` and the node caches shared by all
  evaluations;
* :class:`Recorder`, the interface through which ``relay run --trace`` receives the
  derivation (see :func:`interpreter.entry.evaluate_recorded`).
"""

from __future__ import annotations

import operator
import types
from collections.abc import Callable
from typing import Any, Protocol, cast

from interpreter.env import Env
from interpreter.values import not_a_function
from semantics.errors import InternalError, RelayRuntimeError
from semantics.expr import Constant, Constructor, Expr, Function, GlobalVar, Op, Var
from semantics.module import IRModule
from semantics.ops.reference import restore_numpy, silence_numpy
from semantics.rules import Rule as _RuleEnum
from semantics.visitor import shared

__all__ = ["MISSING", "UNOBSERVED", "CallbackError", "Eval", "Machine", "NodeCache", "Recorder",
           "Rule", "Tail", "shared_nodes"]


class _FastRules:
    """The members of :class:`semantics.rules.Rule`, as plain class attributes (fast to read)."""


for _member in _RuleEnum:
    setattr(_FastRules, _member.name, _member)

# The cases read ``Rule.X`` on every rule application; plain class attributes are cheaper to
# read than enum members, and the values are the enum's own members. Typed as the enum.
Rule = cast("type[_RuleEnum]", _FastRules)


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
    return frozenset(n for n in shared(body, _not_function) if not isinstance(n, _LEAF_TYPES))


class NodeCache(dict):
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


# Shared nodes per function body (the operator-attribute cache is in interpreter.eval).
_SHARED_CACHE = NodeCache(2048)


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
MISSING = object()
"""The answer of a lookup that found nothing (values may be None)."""


UNOBSERVED: Callable[[Any, Any], Any] = operator.is_
"""``fired`` when no fuel, trace or recorder observes the rule applications (a no-op)."""


class CallbackError(Exception):
    """Wraps an exception raised by the user's ``trace`` callable, to re-raise it unchanged."""

    def __init__(self, original: BaseException):
        super().__init__(str(original))
        self.original = original


# --- the machine ------------------------------------------------------------------------------

class Machine:
    """The driver of the rule cases, and the bookkeeping of rule applications.

    A subclass (:class:`interpreter.eval.Interpreter`) supplies the rule cases: the
    tables ``axioms`` (rules without premises: node type → value), ``cases``
    (rules with premises: node type → a generator for the driver, a :class:`Tail`, or the
    value when every premise was established in place) and ``appliers`` (callee value
    type → application), all holding functions called with the machine as first
    argument, and ``eval_shared`` (Semantics-Shared, a memo hit); and, for evaluations
    that record no derivation, ``step_cache`` (node → what to run for it, its block once
    hot) with ``step_for(node)`` for the nodes not in it (which answers what the case of
    the node answers).

    Args:
        mod: the program (globals and ADTs).
        fuel: the number of rule applications allowed (None: unbounded).
        trace: called as ``trace(rule_name, node)`` for every rule application.
        max_depth: the bound on nested non-tail calls.
        recorder: a :class:`Recorder` receiving the derivation (slower; no tail calls).
    """

    axioms: dict[type, Callable[[Any, Any, Env], Any]]
    cases: dict[type, Callable[[Any, Any, Env], Any]]
    appliers: dict[type, Callable[[Any, Any, list[Any], Any], Any]]
    fired: Callable[[Any, Any], None]
    # The steps (node → its case specialized for it), and how a missing one is made.
    step_cache: dict[Expr, Callable[[Any, Any, Env], Any]]
    step_for: Callable[[Expr], Callable[[Any, Any, Env], Any]]
    # Semantics-Shared: the value of a shared node found in the memo (the subclass's case).
    eval_shared: Callable[[Expr, Any], Any]

    def __init__(self, mod: IRModule, *, fuel: int | None = None,
                 trace: Callable[[str, Any], Any] | None = None, max_depth: int = 100_000,
                 recorder: Recorder | None = None):
        self.mod = mod
        self.fuel = fuel
        self.trace = trace
        self.max_depth = max_depth
        self.recorder = recorder
        self.steps = 0
        self._shared = _SHARED_CACHE
        if fuel is None and trace is None and recorder is None:
            # Nobody observes the rule applications: no bookkeeping at all (the count is
            # only needed for fuel). A builtin taking (rule, node) without effects is the
            # cheapest call there is.
            self.fired = UNOBSERVED
        else:
            self.fired = self._fired_observed

    # --- bookkeeping --------------------------------------------------------------------

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
                raise CallbackError(exc) from exc
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

        ``depth`` is the activation depth of ``env`` (0 at the top level). numpy's error
        state is "ignore all" during the evaluation (set here once, rather than by each
        operator reference's wrapper on every call; see
        :func:`semantics.ops.reference.silence_numpy`); the caller's state is restored on
        exit. (A ``trace`` callback therefore runs with numpy warnings silenced.)
        """
        token = silence_numpy()
        try:
            if self.recorder is None:
                return self._drive_steps(expr, env, depth)
            return self._drive(expr, env, depth)
        finally:
            restore_numpy(token)

    def _drive_steps(self, expr: Expr, env: Env, depth: int) -> Any:
        """The loop of :meth:`run` when no derivation is recorded: each node's *step* (its
        case, specialized per node: see :mod:`interpreter.compiled`) in place of the
        tables, otherwise the loop of :meth:`_drive` (without the recorder's reports)."""
        steps = self.step_cache
        step_for = self.step_for
        max_depth = self.max_depth
        gens: list[Any] = []
        depths: list[int] = []
        e = expr
        while True:
            # -- establish Γ ⊢ e ⇓ ? : a value now, or a suspended case pushed --------------
            shared = env.shared
            pending = True
            if shared and e in shared:
                memo = env.memo
                assert memo is not None  # Env: a memo exactly when some node is shared
                hit = memo.get(e, MISSING)
                if hit is not MISSING:
                    result = self.eval_shared(e, hit)
                    pending = False
                else:
                    frame = _remember(memo, e)
                    next(frame)
                    gens.append(frame)
                    depths.append(depth)
            if pending:
                step = steps.get(e)
                if step is None:
                    step = step_for(e)
                result = step(self, e, env)
                tr = type(result)
                if tr is _GENERATOR:
                    gens.append(result)
                    depths.append(depth)
                    result = None
                elif tr is Tail:
                    # The tail premise (the rule's other premises are established).
                    if result.call is not None:
                        # A new activation, one deeper than the one awaiting its value.
                        depth = (depths[-1] if depths else 0) + 1
                        if depth > max_depth:
                            raise RelayRuntimeError(
                                f"stack exhausted: more than {max_depth} nested calls",
                                result.call.span)
                    e = result.expr
                    env = result.env
                    continue
            # -- deliver `result` to the innermost suspended case ----------------------------
            while gens:
                try:
                    request = gens[-1].send(result)
                except StopIteration as stop:
                    gens.pop()
                    d = depths.pop()
                    outcome = stop.value
                    if type(outcome) is Tail:
                        if outcome.call is not None:
                            d = (depths[-1] if depths else 0) + 1
                            if d > max_depth:
                                raise RelayRuntimeError(
                                    f"stack exhausted: more than {max_depth} nested calls",
                                    outcome.call.span) from None
                        e = outcome.expr
                        env = outcome.env
                        depth = d
                        break
                    result = outcome
                    continue
                e, env = request
                depth = depths[-1]
                break
            else:
                return result

    def _drive(self, expr: Expr, env: Env, depth: int) -> Any:
        """The loop of :meth:`run`."""
        axioms = self.axioms
        cases = self.cases
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
                assert memo is not None  # Env: a memo exactly when some node is shared
                hit = memo.get(e, MISSING)
                if hit is not MISSING:
                    if rec is not None:
                        rec.open(e)
                    value = self.eval_shared(e, hit)
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
                    result = axiom(self, e, env)
                    if rec is not None:
                        rec.close(result)
                else:
                    case = cases.get(type(e))
                    if case is None:
                        raise InternalError(f"no evaluation rule for {type(e).__name__}")
                    result = case(self, e, env)
                    if type(result) is _GENERATOR:
                        gens.append(result)
                        depths.append(depth)
                        result = None
                    elif type(result) is not Tail:
                        # The value: every premise was established in place (or there
                        # were none, as in the empty tuple).
                        if rec is not None:
                            rec.close(result)
                    else:
                        # A rule whose premises are established but the tail one (all of
                        # them in place, or none: Semantics-Let-Rec).
                        d = depth
                        if result.call is not None:
                            # A new activation, one deeper than the one awaiting its value.
                            d = (d if rec is not None else depths[-1] if depths else 0) + 1
                            if d > max_depth:
                                raise RelayRuntimeError(
                                    f"stack exhausted: more than {max_depth} nested calls",
                                    result.call.span)
                        if rec is not None:
                            frame = _await(result.expr, result.env)
                            gens.append(frame)
                            depths.append(d)
                            result = None
                        else:
                            e = result.expr
                            env = result.env
                            depth = d
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
        applier = self.appliers.get(type(f))
        if applier is None:
            raise not_a_function(f, getattr(node, "span", None))
        outcome = applier(self, f, args, node)
        if type(outcome) is Tail:
            if self.max_depth < 1:
                raise RelayRuntimeError(
                    f"stack exhausted: more than {self.max_depth} nested calls",
                    getattr(node, "span", None))
            return self.run(outcome.expr, outcome.env, 1)
        return outcome
