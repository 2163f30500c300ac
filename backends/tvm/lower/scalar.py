"""Host rules: integer and bool operators on scalars, evaluated in Python instead of a kernel.

A fused group whose every value is a 0-d integer or bool tensor — a loop counter's
``add(%i, 1)``, its test ``greater_equal(%i, 20)``, CharRNN's ``equal(%top, 58)`` — does a
few machine operations, while calling a compiled kernel costs a microsecond or more (numpy
arrays converted through DLPack, a result allocated). :func:`scalar_program` turns such a
group into a Python function over Python integers, with one rule per operator in
:data:`SCALAR_RULES` (the references' semantics, RULES.md §5: integer results wrap at the
dtype's width, comparisons and logic give ``bool``); the executors call it like a kernel.

A group with anything else (a float, a non-scalar, an operator without a rule here, an
attribute) is compiled as usual: :func:`scalar_program` returns None.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from semantics.expr import Call, Constant, Function, Op, Var
from semantics.types import TensorType
from semantics.visitor import post_order

__all__ = ["SCALAR_RULES", "scalar_program"]

SCALAR_RULES: dict[str, Callable[..., Any]] = {
    "add": operator.add,
    "subtract": operator.sub,
    "multiply": operator.mul,
    "negative": operator.neg,
    "maximum": max,
    "minimum": min,
    "equal": operator.eq,
    "not_equal": operator.ne,
    "less": operator.lt,
    "less_equal": operator.le,
    "greater": operator.gt,
    "greater_equal": operator.ge,
    "logical_and": lambda a, b: bool(a) and bool(b),
    "logical_or": lambda a, b: bool(a) or bool(b),
    "logical_not": lambda a: not a,
}
"""Operator -> its function on Python ints/bools (the result is wrapped to the dtype)."""

_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _scalar_dtype(t: Any) -> str | None:
    """The dtype of a 0-d integer or bool tensor type, else None."""
    if isinstance(t, TensorType) and len(t.shape) == 0 and (t.dtype in _INTS
                                                            or t.dtype == "bool"):
        return t.dtype
    return None


def _wrapper(dtype: str) -> Callable[[Any], Any]:
    """Reduce a Python int to ``dtype`` (two's complement wrap; ``bool`` is truth)."""
    if dtype == "bool":
        return bool
    bits = int(dtype.lstrip("uint"))
    mask = (1 << bits) - 1
    if dtype.startswith("u"):
        return lambda v: int(v) & mask
    half = 1 << (bits - 1)
    return lambda v: ((int(v) + half) & mask) - half


def scalar_program(func: Function) -> Callable[..., np.ndarray] | None:
    """The group ``func`` as a Python function of its 0-d array arguments (returning a 0-d
    array of the result dtype), or None when it is not a group of scalar integer/bool
    operators with rules here.

    The function is a straight list of steps in the group's evaluation order over a slot
    list (as :class:`backends.tvm.fallback.FallbackKernel`, but on Python integers).
    """
    out_dtype = _scalar_dtype(func.ret_type if func.ret_type is not None
                              else getattr(func.body, "checked_type", None))
    if out_dtype is None:
        return None
    slots: dict[int, int] = {}
    for i, p in enumerate(func.params):
        ptype = p.type_annotation if p.type_annotation is not None else p.checked_type
        if _scalar_dtype(ptype) is None:
            return None
        slots[id(p)] = i
    steps: list[tuple[int, Callable[..., Any], Callable[[Any], Any], tuple[int, ...]]] = []
    consts: list[tuple[int, Any]] = []
    n = len(func.params)
    for node in post_order(func.body, descend=lambda e: type(e) is not Function):
        if isinstance(node, Var):
            if id(node) not in slots:
                return None
            continue
        if isinstance(node, Op):
            continue
        if isinstance(node, Constant):
            data = node.data
            if _scalar_dtype(TensorType(tuple(data.shape), str(data.dtype))) is None:
                return None
            slots[id(node)] = n
            consts.append((n, data.item()))
            n += 1
            continue
        if not isinstance(node, Call) or not isinstance(node.op, Op) or node.attrs:
            return None
        rule = SCALAR_RULES.get(node.op.name)
        dtype = _scalar_dtype(node.checked_type)
        if rule is None or dtype is None or not all(
                _scalar_dtype(a.checked_type) is not None and id(a) in slots
                for a in node.args):
            return None
        slots[id(node)] = n
        steps.append((n, rule, _wrapper(dtype), tuple(slots[id(a)] for a in node.args)))
        n += 1
    if id(func.body) not in slots or not steps:
        return None
    result = slots[id(func.body)]
    np_dtype = np.dtype(out_dtype)
    nparams = len(func.params)
    size = n
    if len(steps) == 1 and result == steps[0][0]:
        return _one_step(steps[0], dict(consts), nparams, np_dtype)

    def run(*args: Any) -> np.ndarray:
        if len(args) != nparams:
            raise TypeError(f"takes {nparams} arguments, got {len(args)}")
        vals: list[Any] = [None] * size
        for i, a in enumerate(args):
            vals[i] = a.item()
        for i, v in consts:
            vals[i] = v
        for dst, rule, wrap, srcs in steps:
            vals[dst] = wrap(rule(*[vals[s] for s in srcs]))
        return np.array(vals[result], np_dtype)

    return run


def _one_step(step: tuple[int, Callable[..., Any], Callable[[Any], Any], tuple[int, ...]],
              consts: dict[int, Any], nparams: int, np_dtype: np.dtype[Any]
              ) -> Callable[..., np.ndarray]:
    """A group of one operator call (the common case), without the slot list."""
    _, rule, wrap, srcs = step
    if nparams == 1 and len(srcs) == 2 and srcs[0] == 0 and srcs[1] in consts:
        c = consts[srcs[1]]
        return lambda a: np.array(wrap(rule(a.item(), c)), np_dtype)
    if nparams == 1 and len(srcs) == 2 and srcs[1] == 0 and srcs[0] in consts:
        c = consts[srcs[0]]
        return lambda a: np.array(wrap(rule(c, a.item())), np_dtype)
    if nparams == 2 and srcs == (0, 1):
        return lambda a, b: np.array(wrap(rule(a.item(), b.item())), np_dtype)
    if nparams == 1 and srcs == (0,):
        return lambda a: np.array(wrap(rule(a.item())), np_dtype)

    def run(*args: Any) -> np.ndarray:
        vals = [args[s].item() if s < nparams else consts[s] for s in srcs]
        return np.array(wrap(rule(*vals)), np_dtype)

    return run
