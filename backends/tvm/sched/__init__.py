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
kernel, and falls back to :func:`backends.tvm.sched.default.default_schedule` — also when a
rule raises: a schedule recipe must never make a kernel fail to compile, only slower.
Every module of this package is part of the kernel cache's code digest (editing a schedule
invalidates the kernels it built).

Nothing is lost silently: the scheduling function :func:`pick_schedule` returns records a
:class:`ScheduleReport` — the recipe the kernel got, every recipe that declined (returned
``None``) or failed (raised: its exception's type and message), and every step a recipe
asked of TVM that TVM refused (:func:`refused`, called by the recipes where they catch
TVM's ``ScheduleError`` and carry on, e.g. a loop left serial because it would not
vectorize). The kernel compiler stores the report with the kernel (``Kernel.schedule``, the
cache entry's metadata), and ``relay build --show-kernels`` prints it: a recipe broken by a
TVM upgrade shows as ``failed`` on every kernel it used to schedule.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from backends.tvm.sched.default import NOTES, default_schedule, first_line, refused
from backends.tvm.target import Target
from semantics.expr import Function
from semantics.types import Type

__all__ = ["DEFAULT_SCHEDULE", "KernelInfo", "ScheduleReport", "ScheduleRule", "Scheduler",
           "pick_schedule", "refused", "register_schedule", "rules"]

DEFAULT_SCHEDULE = "default"
"""``ScheduleReport.chosen`` when no registered recipe scheduled the kernel."""


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


@dataclass
class ScheduleReport:
    """What happened while a kernel was scheduled.

    Attributes:
        chosen: the name of the recipe that scheduled the kernel (``ScheduleRule.name``),
            or :data:`DEFAULT_SCHEDULE`.
        declined: ``(recipe, reason)`` for each recipe tried before it that did not apply
            (``"declined: ..."``) or raised (``"failed: <exception>"``).
        refused: ``(step, reason)`` for each step of a recipe (the chosen one or a declined
            one) that TVM refused, the recipe carrying on without it.
    """

    chosen: str = DEFAULT_SCHEDULE
    declined: list[tuple[str, str]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"chosen": self.chosen, "declined": [list(d) for d in self.declined],
                "refused": [list(r) for r in self.refused]}

    @staticmethod
    def from_json(doc: Any) -> ScheduleReport | None:
        """The report stored by :meth:`to_json` (None: absent or malformed)."""
        if not isinstance(doc, dict) or not isinstance(doc.get("chosen"), str):
            return None
        try:
            return ScheduleReport(doc["chosen"],
                                  [(str(a), str(b)) for a, b in doc.get("declined", ())],
                                  [(str(a), str(b)) for a, b in doc.get("refused", ())])
        except (TypeError, ValueError):
            return None


class Scheduler:
    """The scheduling function ``PrimFunc -> IRModule`` of one kernel; after a call,
    :attr:`report` says which recipe scheduled it and what was declined on the way."""

    def __init__(self, found: Sequence[ScheduleRule], info: KernelInfo):
        self.found = list(found)
        self.info = info
        self.report = ScheduleReport()

    def __call__(self, prim: Any) -> Any:
        report = self.report = ScheduleReport()
        token = NOTES.set(report.refused)
        try:
            for rule in self.found:
                try:
                    mod = rule.fn(prim, self.info)
                except Exception as err:  # noqa: BLE001 - any failure of a recipe (TVM refusing
                    # it, or an API a TVM upgrade changed) is recorded; the next one is tried
                    report.declined.append((rule.name, "failed: " + first_line(err)))
                    continue
                if mod is not None:
                    report.chosen = rule.name
                    return mod
                report.declined.append((rule.name, "declined: the recipe does not apply to "
                                                   "this kernel's layout or shape"))
            return default_schedule(prim, self.info.target)
        finally:
            NOTES.reset(token)


def pick_schedule(info: KernelInfo) -> Scheduler:
    """The scheduling function ``PrimFunc -> IRModule`` for a kernel (see the module
    docstring): the first registered rule that applies, else the default recipe; its
    ``report`` records the choice."""
    return Scheduler(candidates(info.ops), info)


_LOADED = False


def _load() -> None:
    """Import every module of this package (each registers its rules)."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
