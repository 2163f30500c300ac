"""Specializations of the partial evaluator (:mod:`pe.evaluator`, design note "Unfolding and
termination", rule 2: dynamic recursion is residualized).

A call of a known closure or global that may not be unfolded goes through a
*specialization*: a residual let-bound function for the callee, bound in the current frame
and memoized by the callee, the static parts of the arguments and (for a polymorphic
function) the instance of its type parameters. The key of an argument
(:meth:`Specializer._arg_key`) keeps closures, operators, constructors and globals by
identity and tuples by structure up to :data:`KEY_DEPTH`; tensors, ADT values and
references are generalized to parameters of the specialization, whose body rebuilds the
static parts (:meth:`Specializer._rebuild`) and starts from an empty store. At most
:data:`MAX_SPECS` specializations with static parts are made per function; beyond that,
and whenever the key has no static part, the call goes to the generic residual function.

:func:`instantiation` matches a polymorphic callee's parameter and result types against the
call's typed arguments (used for unfolding too).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Generator, Iterator
from typing import Any

from pe.values import (
    Env,
    Frame,
    PValue,
    SCtor,
    SCtorFn,
    SGlobal,
    SOp,
    SRef,
    STensor,
    Store,
    STuple,
)
from semantics.expr import Call, Expr, Function, Op, Tuple, Var
from semantics.types import FuncType, RefType, TupleType, Type, TypeCall, TypeVar
from typechecker.unify import substitute as substitute_type

__all__ = ["KEY_DEPTH", "MAX_SPECS", "Specializer", "Step", "instantiation"]

Step = Generator[Any, Any, Any]

MAX_SPECS = 4
"""Specializations with static parts per function."""

KEY_DEPTH = 3
"""How deep a tuple argument's structure is kept in a specialization key."""

_DYN = ("dyn",)      # a specialization key part: a parameter of the specialization


def _match_types(pattern: Type | None, concrete: Type | None, params: set[int],
                 out: dict[TypeVar, Type]) -> None:
    """Bind the type parameters (ids in ``params``) of ``pattern`` to parts of ``concrete``."""
    work = [(pattern, concrete)]
    while work:
        p, c = work.pop()
        if p is None or c is None:
            continue
        if type(p) is TypeVar:
            if id(p) in params and p not in out:
                out[p] = c
            continue
        if type(p) is not type(c):
            continue
        if isinstance(p, TupleType) and isinstance(c, TupleType):
            work.extend(zip(p.fields, c.fields))
        elif isinstance(p, FuncType) and isinstance(c, FuncType):
            work.extend(zip(p.arg_types, c.arg_types))
            work.append((p.ret_type, c.ret_type))
        elif isinstance(p, RefType) and isinstance(c, RefType):
            work.append((p.value, c.value))
        elif isinstance(p, TypeCall) and isinstance(c, TypeCall):
            work.extend(zip(p.args, c.args))


class Specializer:
    """The specialization cases of :class:`pe.evaluator.PartialEvaluator` (its base class,
    which supplies the state and the residual-code operations declared here)."""

    unfolding: bool
    frame: Frame
    store: Store
    dyn_depth: int
    active: dict[int, list[int]]
    spec_counts: dict[int, int]
    _ctx: itertools.count[int]
    force: Callable[[PValue], Any]
    force_all: Callable[[list[PValue]], Step]
    push: Callable[[Expr, str], Var]
    annotation: Callable[[Type | None, Env], Type | None]
    global_value: Callable[[str], PValue]
    _visit_and_force: Callable[[Expr, Env], Step]
    _bind_in: Callable[[Frame | None, Var, Expr], Var]

    def _specialize(self, f: PValue, fn: Function, base: Env, self_var: Var | None,
                    args: list[PValue], call: Call, caller: Env) -> Step:
        leaves: list[PValue] = []
        keys = tuple(self._arg_key(a, leaves, 0) for a in args)
        generic = not self.unfolding or all(k is _DYN for k in keys)
        inst = instantiation(fn, call, caller)
        types = self._instance_key(fn, inst)
        if not generic and types is not None:
            # A specialization is monomorphic: of a polymorphic function, one per instance.
            key = (f, keys, types)
            spec = self.frame.find_spec(key)
            if spec is None:
                count = self.spec_counts.get(id(fn), 0)
                if count >= MAX_SPECS:
                    generic = True
                else:
                    self.spec_counts[id(fn)] = count + 1
                    spec = yield self._build_spec(key, f, fn, base, self_var, keys, len(leaves),
                                                  inst)
        else:
            generic = True
        if generic:
            callee = yield self.force(f)   # the residual closure, or the global itself
            leaves = args
        else:
            callee = spec
        atoms = yield self.force_all(leaves)
        var = self.push(Call(callee, atoms, span=call.span), "x")
        self.store.invalidate_escaped()
        return PValue(None, var)

    def _instance_key(self, fn: Function, inst: dict[TypeVar, Type] | None) -> Any:
        """The instance of ``fn``'s type parameters as a key (None: not fully known)."""
        if not fn.type_params:
            return ()
        from semantics.printer import pretty

        out = []
        for tv in fn.type_params:
            t = (inst or {}).get(tv)
            if t is None or self.annotation(t, Env()) is None:
                return None
            out.append(pretty(t))
        return tuple(out)

    def _arg_key(self, pv: PValue, leaves: list[PValue], depth: int) -> Any:
        s = pv.static
        t = type(s)
        if s is None or t is STensor or t is SCtor or t is SRef or depth >= KEY_DEPTH:
            leaves.append(pv)
            return _DYN
        if isinstance(s, STuple):
            return ("tuple", tuple(self._arg_key(x, leaves, depth + 1) for x in s.fields))
        if isinstance(s, SOp):
            return ("op", s.op.name)
        if isinstance(s, SGlobal):
            return ("global", s.name)
        if isinstance(s, SCtorFn):
            return ("ctor", s.ctor)
        return ("value", pv)  # a closure, by identity

    def _rebuild(self, key: Any, params: Iterator[Var]) -> PValue:
        if key is _DYN:
            return PValue(None, next(params))
        kind = key[0]
        if kind == "tuple":
            fields = tuple(self._rebuild(k, params) for k in key[1])
            return PValue(STuple(fields), None if fields else Tuple(()), self.frame)
        if kind == "op":
            op = Op(key[1])
            return PValue(SOp(op), op)
        if kind == "global":
            return self.global_value(key[1])
        if kind == "ctor":
            return PValue(SCtorFn(key[1]), key[1])
        value: PValue = key[1]
        return value

    def _build_spec(self, key: Any, f: PValue, fn: Function, base: Env, self_var: Var | None,
                    keys: tuple[Any, ...], n_params: int,
                    inst: dict[TypeVar, Type] | None) -> Step:
        """Bind ``let %spec = fn (leaves) { body }`` in the current frame (memoized by key)."""
        name = self_var.name_hint if self_var is not None else (
            f.static.name if isinstance(f.static, SGlobal) else "f")
        spec = Var(f"{name}_spec")
        outer = self.frame
        outer.specs[key] = spec
        params = [Var(f"p{i}") for i in range(n_params)]
        saved = self.store, self.dyn_depth
        self.frame = Frame(outer, next(self._ctx))
        self.store, self.dyn_depth = Store(), self.dyn_depth + 1
        stack = self.active.setdefault(id(fn), [])
        stack.append(-1)  # recursive calls inside go to the specialization
        try:
            it = iter(params)
            env = base.activation({p: self._rebuild(k, it) for p, k in zip(fn.params, keys)},
                                  inst)
            if self_var is not None:
                env = env.extend(self_var, f)
            atom = yield self._visit_and_force(fn.body, env)
            body_frame = self.frame
        finally:
            stack.pop()
            self.frame = outer
            self.store, self.dyn_depth = saved
        self._bind_in(outer, spec, Function(tuple(params), body_frame.build(atom)))
        return spec


def instantiation(fn: Function, call: Call, caller: Env) -> dict[TypeVar, Type] | None:
    """The instances of ``fn``'s type parameters at ``call`` (from the typed input's types)."""
    if not fn.type_params:
        return None
    params = {id(tv) for tv in fn.type_params}
    out: dict[TypeVar, Type] = {}

    def seen(t: Type | None) -> Type | None:
        if t is None or not caller.tsub:
            return t
        return substitute_type(t, caller.tsub, {})

    for p, a in zip(fn.params, call.args):
        _match_types(p.type_annotation or p.checked_type, seen(a.checked_type), params, out)
    _match_types(fn.ret_type, seen(call.checked_type), params, out)
    return out
