"""Per-kernel schedule selection: the anchor operator of a fused kernel picks its schedule.

A fused primitive function is one TVM kernel; its *anchor* is the operator that decides how
the kernel should be scheduled (the convolution of ``conv2d + bias_add + relu``, the matrix
product of ``dense + add``). Schedules are rules in a table, like gradients and lowerings:
a module of this package registers, for an operator, a function
``schedule(prim_func, info) -> IRModule | None``:

* ``prim_func`` is the kernel's TensorIR ``PrimFunc`` (``te.create_prim_func`` of the
  lowered computation, global symbol set), and ``info`` a :class:`KernelInfo`: the
  operators of the kernel in post-order, the primitive Relay function, the concrete
  argument types and the build's :class:`~backends.tvm.target.Target`;
* it returns the scheduled ``IRModule``, or ``None`` when the recipe does not apply to this
  kernel (an unusual layout or shape): the next candidate is tried.

:func:`pick_schedule` ranks the registered rules by ``priority`` (higher first; a
convolution before the elementwise epilogue it carries) among the operators of the
kernel, and falls back to :func:`backends.tvm.schedules.default_schedule` — also when a
rule raises: a schedule recipe must never make a kernel fail to compile, only slower.
Every module of this package is part of the kernel cache's code digest (editing a schedule
invalidates the kernels it built).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from backends.tvm.schedules import default_schedule
from backends.tvm.target import Target
from semantics.expr import Function
from semantics.types import Type

__all__ = ["KernelInfo", "ScheduleRule", "pick_schedule", "register_schedule", "rules"]


@dataclass(frozen=True)
class KernelInfo:
    """What a schedule rule may look at besides the ``PrimFunc``: ``target`` is the build's
    :class:`~backends.tvm.target.Target` (vector lanes, registers, caches), the only source of
    machine facts a rule may use."""

    ops: tuple[str, ...]
    func: Function
    arg_types: tuple[Type, ...]
    target: Target


ScheduleFn = Callable[[Any, KernelInfo], Any]


@dataclass(frozen=True)
class ScheduleRule:
    op: str
    priority: int
    fn: ScheduleFn
    name: str


_RULES: dict[str, list[ScheduleRule]] = {}


def register_schedule(op: str, *, priority: int = 10) -> Callable[[ScheduleFn], ScheduleFn]:
    """Decorator: the decorated function schedules kernels whose anchor is ``op``.

    Args:
        op: the operator name (``"nn.conv2d"``).
        priority: rank among the rules of a kernel's operators (higher is tried first).
    Returns:
        The decorator (it returns the function unchanged).
    """

    def deco(fn: ScheduleFn) -> ScheduleFn:
        rule = ScheduleRule(op, priority, fn, f"{fn.__module__}.{fn.__qualname__}")
        _RULES.setdefault(op, []).append(rule)
        return fn

    return deco


def rules(op: str | None = None) -> list[ScheduleRule]:
    """The registered rules (of ``op``, or all), highest priority first."""
    _load()
    found = [r for k, rs in _RULES.items() if op is None or k == op for r in rs]
    return sorted(found, key=lambda r: -r.priority)


def candidates(ops: Sequence[str]) -> list[ScheduleRule]:
    """The rules that may schedule a kernel of ``ops``, in the order they are tried."""
    _load()
    seen = set(ops)
    found = [r for k, rs in _RULES.items() if k in seen for r in rs]
    return sorted(found, key=lambda r: -r.priority)


def pick_schedule(info: KernelInfo) -> Callable[[Any], Any]:
    """The scheduling function ``PrimFunc -> IRModule`` for a kernel (see the module
    docstring): the first registered rule that applies, else the default recipe."""
    found = candidates(info.ops)
    if not found:
        return lambda prim: default_schedule(prim, info.target)

    def schedule(prim: Any) -> Any:
        for rule in found:
            try:
                mod = rule.fn(prim, info)
            except Exception:  # noqa: BLE001 - a recipe TVM refuses: try the next one
                mod = None
            if mod is not None:
                return mod
        return default_schedule(prim, info.target)

    return schedule


_LOADED = False


def _load() -> None:
    """Import every module of this package (each registers its rules)."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
