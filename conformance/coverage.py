"""Coverage of the semantics by generated programs (HOUSE_STYLE 11: rule coverage is a test).

``coverage(max_examples=...)`` generates well-typed programs, evaluates each
with the oracle under ``trace`` and records which ``Semantics-*`` rules of
``semantics/RULES.md`` (``semantics.rules.EVALUATION_RULES``) fired and which
operators (``semantics.ops.list_ops()``) were applied (``Semantics-Call-Op``).

Two phases, reported separately:

1. **random** — ``max_examples`` programs from the default generator;
2. **focused** (``focus=True``) — for each operator the random phase missed,
   a few small programs whose ``main`` is required to call it
   (``ProgramConfig(focus_op=...)``). This shows that the generator *can*
   reach every operator, without making every random program huge.

``Semantics-Grad`` is excluded and reported as such: the general generator does
not emit ``grad`` nodes (they need differentiable programs); the AD tests cover
the rule with ``conformance.strategies.differentiable`` and example programs. So are the
operators the generator never calls (``opcalls.NOT_GENERATED``: the explicit allocations of
the memory dialect, whose ``Storage`` values no generated program uses).

Per operator, the report also says *how* it was exercised (the ``OpProfile``
table): which **argument kinds** appeared in each argument position (the
syntax of the argument expression: ``const``, ``var``, ``call``, ``proj``,
``tuple``, ``let``, ``if``, ``match``, ``ref_read``, ...) and which **value
classes** its arguments held, per dtype (:func:`value_classes`: negatives,
zeros, ``-0.0``, ``±inf``, ``nan``, denormals, the dtype's minimum and maximum,
empty tensors). How: programs run under ``interpreter.evaluate_recorded`` with
a :class:`~interpreter.machine.Recorder` — the public interface through which
``relay run --trace`` receives derivations. A recorder sees every judgment
open and close with its value, so when a ``Semantics-Call-Op`` judgment closes,
its premises' values are the operator's arguments. Nothing in ``interpreter/``
or ``semantics/ops/`` is wrapped or patched. The same recorder counts the rule
applications.

The report's ``__str__`` is the text ``relay conformance --coverage`` prints.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semantics.rules import EVALUATION_RULES

__all__ = ["CoverageReport", "OpProfile", "coverage", "value_classes", "classes_for_dtype",
           "EXCLUDED_RULES"]

EXCLUDED_RULES = {"Semantics-Grad": "not emitted by the general generator: grad needs "
                                    "differentiable programs (covered by tests/ad)"}


# --- value classes and argument kinds ----------------------------------------------------------

FLOAT_CLASSES = ("neg", "zero", "-0.0", "pos", "denormal", "+inf", "-inf", "nan", "empty")
INT_CLASSES = ("neg", "zero", "pos", "min", "max", "empty")
UINT_CLASSES = ("zero", "pos", "max", "empty")
BOOL_CLASSES = ("false", "true", "empty")


def classes_for_dtype(dtype: str) -> tuple[str, ...]:
    """The value classes that apply to a dtype (for the uints, ``min`` is ``zero``)."""
    kind = np.dtype(dtype).kind
    if kind == "f":
        return FLOAT_CLASSES
    if kind == "i":
        return INT_CLASSES
    if kind == "u":
        return UINT_CLASSES
    return BOOL_CLASSES


def value_classes(arr: Any) -> set[str]:
    """The value classes (:func:`classes_for_dtype`) the elements of a tensor fall into.

    Floats: ``neg``/``pos`` are finite, nonzero and not denormal; ``zero`` is ``+0.0``;
    ``denormal`` is nonzero with magnitude below the dtype's smallest normal. Integers:
    ``min``/``max`` are the dtype's extremes (they count as ``neg``/``pos`` too).
    A tensor with no elements is ``empty``.
    """
    a = np.asarray(arr)
    if a.size == 0:
        return {"empty"}
    kind = a.dtype.kind
    found: set[str] = set()
    if kind == "b":
        found.update(name for name, v in (("false", False), ("true", True)) if (a == v).any())
        return found
    if kind in "iu":
        info = np.iinfo(a.dtype)
        checks = [("neg", a < 0), ("zero", a == 0), ("pos", a > 0), ("min", a == info.min),
                  ("max", a == info.max)]
        found.update(name for name, mask in checks if mask.any())
        if kind == "u":
            found.discard("min")
        return found
    if kind != "f":
        return found
    with np.errstate(all="ignore"):
        finite = np.isfinite(a)
        tiny = np.finfo(a.dtype).tiny
        mag = np.abs(np.where(finite, a, 0))
        denormal = finite & (mag > 0) & (mag < tiny)
        normal = finite & ~denormal & (a != 0)
        checks = [("nan", np.isnan(a)), ("+inf", np.isposinf(a)), ("-inf", np.isneginf(a)),
                  ("zero", (a == 0) & ~np.signbit(a)), ("-0.0", (a == 0) & np.signbit(a)),
                  ("denormal", denormal), ("neg", normal & (a < 0)), ("pos", normal & (a > 0))]
    found.update(name for name, mask in checks if mask.any())
    return found


# Argument kinds: the syntax of an operator's argument expression.
_KIND_NAMES = {"Constant": "const", "Var": "var", "GlobalVar": "global", "Call": "call",
               "TupleGetItem": "proj", "Tuple": "tuple", "Let": "let", "If": "if",
               "Match": "match", "RefRead": "ref_read", "RefCreate": "ref", "RefWrite": "ref_write",
               "Function": "fn", "Op": "op", "Constructor": "ctor"}
KIND_ORDER = ("const", "var", "call", "proj", "tuple", "let", "if", "match", "ref_read",
              "global", "ref", "ref_write", "fn", "op", "ctor")


def argument_kind(expr: Any) -> str:
    """The kind of an argument expression (``const``, ``var``, ``call``, ``proj``, ...)."""
    name = type(expr).__name__
    return _KIND_NAMES.get(name, name.lower())


def _tensors(value: Any) -> Iterable[np.ndarray]:
    """The tensors inside a value (tuples are opened: ``concatenate((a, b))``), iteratively."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (np.ndarray, np.generic)):
            yield np.asarray(v)
        elif isinstance(v, tuple):
            stack.extend(v)


@dataclass
class OpProfile:
    """How one operator was exercised: calls, argument kinds per position, value classes.

    ``kinds[i]`` counts the kinds of argument ``i``; ``classes[dtype]`` is the set of
    value classes seen in argument tensors of that dtype.
    """

    calls: int = 0
    kinds: dict[int, Counter[str]] = field(default_factory=dict)
    classes: dict[str, set[str]] = field(default_factory=dict)

    def record(self, args: Sequence[tuple[Any, Any]]) -> None:
        """Record one call: ``(argument expression or None, argument value)`` pairs."""
        self.calls += 1
        for i, (expr, value) in enumerate(args):
            if expr is not None:
                self.kinds.setdefault(i, Counter())[argument_kind(expr)] += 1
            for t in _tensors(value):
                self.classes.setdefault(t.dtype.name, set()).update(value_classes(t))

    def missing(self) -> dict[str, list[str]]:
        """Per dtype seen, the applicable value classes no argument held."""
        return {dt: [c for c in classes_for_dtype(dt) if c not in seen]
                for dt, seen in sorted(self.classes.items())}

    @property
    def complete(self) -> bool:
        """Every value class that applies to the dtypes it was called with was seen."""
        return bool(self.classes) and not any(self.missing().values())

    def describe_kinds(self) -> str:
        parts = []
        for i in sorted(self.kinds):
            order = {k: n for n, k in enumerate(KIND_ORDER)}
            kinds = sorted(self.kinds[i], key=lambda k: (order.get(k, len(order)), k))
            parts.append(f"{i}:" + ",".join(kinds))
        return " ".join(parts) or "-"

    def describe_classes(self) -> str:
        parts = []
        for dt, seen in sorted(self.classes.items()):
            have = [c for c in classes_for_dtype(dt) if c in seen]
            lack = [c for c in classes_for_dtype(dt) if c not in seen]
            parts.append(f"{dt}: {' '.join(have) or '-'}" + (f" [no {' '.join(lack)}]"
                                                              if lack else ""))
        return "; ".join(parts) or "-"


class _Recorder:
    """A derivation recorder (``interpreter.machine.Recorder``) that keeps only what the
    coverage needs: rule counts, and the premises' values of every Semantics-Call-Op."""

    def __init__(self, report: CoverageReport, random_phase: bool):
        self.report = report
        self.random_phase = random_phase
        # One frame per open judgment: [node, premises (node, value), is an operator call].
        self.stack: list[list[Any]] = []

    def open(self, node: Any) -> None:
        self.stack.append([node, [], False])

    def rule(self, rule: Any, node: Any) -> None:
        name = getattr(rule, "value", rule)
        self.report.rules[name] += 1
        if name == "Semantics-Call-Op":
            op = _op_name(node)
            if op is not None:
                self.report.ops[op] += 1
                if self.random_phase:
                    self.report.random_ops[op] += 1
            if self.stack and self.stack[-1][0] is node:
                self.stack[-1][2] = True

    def close(self, value: Any) -> None:
        node, premises, op_call = self.stack.pop()
        if self.stack:
            self.stack[-1][1].append((node, value))
        if op_call:
            self._op_call(node, premises)

    def _op_call(self, node: Any, premises: list[tuple[Any, Any]]) -> None:
        from semantics.expr import Call

        name = _op_name(node)
        if name is None:
            return
        if isinstance(node, Call):
            # Premises: the callee e0, then e1..en; match them to the arguments by identity.
            rest = premises[1:] if premises and premises[0][0] is node.op else list(premises)
            args: list[tuple[Any, Any]] = []
            for arg in node.args:
                hit = next((i for i, (n, _) in enumerate(rest) if n is arg), None)
                if hit is None:
                    args.append((arg, None))
                else:
                    args.append((arg, rest.pop(hit)[1]))
        else:
            args = [(None, v) for _, v in premises]
        self.report.profiles.setdefault(name, OpProfile()).record(args)


@dataclass
class CoverageReport:
    """Which evaluation rules and operators the generated programs exercised.

    ``rules`` / ``ops`` count applications over both phases; ``random_ops``
    counts the random phase alone. Percentages are over the rules that are not
    excluded and over every registered operator.
    """

    programs: int = 0
    focused_programs: int = 0
    rules: Counter[str] = field(default_factory=Counter)
    ops: Counter[str] = field(default_factory=Counter)
    random_ops: Counter[str] = field(default_factory=Counter)
    all_rules: tuple[str, ...] = ()
    all_ops: tuple[str, ...] = ()
    excluded: dict[str, str] = field(default_factory=dict)
    excluded_ops: dict[str, str] = field(default_factory=dict)
    outcomes: Counter[str] = field(default_factory=Counter)
    profiles: dict[str, OpProfile] = field(default_factory=dict)

    @property
    def ops_complete(self) -> list[str]:
        """Operators whose arguments held every value class applying to their dtypes."""
        return [o for o in self.all_ops if o in self.profiles and self.profiles[o].complete]

    def operator_table(self) -> str:
        """Per operator: calls, argument kinds per position, value classes per dtype."""
        width = max((len(o) for o in self.all_ops), default=8)
        lines = [f"{'operator':<{width}} {'calls':>6}  argument kinds (position:kinds)  |  "
                 "value classes of the arguments per dtype [not seen]"]
        for o in self.all_ops:
            prof = self.profiles.get(o)
            if prof is None:
                lines.append(f"{o:<{width}} {0:>6}  -")
                continue
            lines.append(f"{o:<{width}} {prof.calls:>6}  {prof.describe_kinds()}  |  "
                         f"{prof.describe_classes()}")
        called = [o for o in self.all_ops if o in self.profiles]
        lines.append(f"value classes: {len(self.ops_complete)} of {len(called)} called "
                     "operators saw every value class that applies to the dtypes they were "
                     "called with")
        never = self.classes_never_seen()
        if never:
            lines.append("value classes no operator argument held: " + "; ".join(
                f"{family}: {' '.join(classes)}" for family, classes in never.items()))
        return "\n".join(lines)

    def classes_never_seen(self) -> dict[str, list[str]]:
        """Per dtype family (``float``, ``int``, ``uint``, ``bool``), the value classes no
        argument of any operator held (only families some operator was called with)."""
        families = {"f": ("float", FLOAT_CLASSES), "i": ("int", INT_CLASSES),
                    "u": ("uint", UINT_CLASSES), "b": ("bool", BOOL_CLASSES)}
        seen: dict[str, set[str]] = {}
        for prof in self.profiles.values():
            for dt, held in prof.classes.items():
                family = families[np.dtype(dt).kind][0]
                seen.setdefault(family, set()).update(held)
        out: dict[str, list[str]] = {}
        for family, classes in families.values():
            if family in seen:
                missing = [c for c in classes if c not in seen[family]]
                if missing:
                    out[family] = missing
        return out

    @property
    def target_rules(self) -> list[str]:
        return [r for r in self.all_rules if r not in self.excluded]

    @property
    def rules_missing(self) -> list[str]:
        return [r for r in self.target_rules if not self.rules[r]]

    @property
    def ops_missing(self) -> list[str]:
        return [o for o in self.all_ops if not self.ops[o]]

    @property
    def rule_percent(self) -> float:
        target = self.target_rules
        return 100.0 * (len(target) - len(self.rules_missing)) / max(len(target), 1)

    @property
    def op_percent(self) -> float:
        return 100.0 * (len(self.all_ops) - len(self.ops_missing)) / max(len(self.all_ops), 1)

    @property
    def random_op_percent(self) -> float:
        hit = sum(1 for o in self.all_ops if self.random_ops[o])
        return 100.0 * hit / max(len(self.all_ops), 1)

    def __str__(self) -> str:
        lines = [f"Conformance coverage: {self.programs} random programs + "
                 f"{self.focused_programs} operator-focused programs",
                 "outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items())),
                 "", f"{'evaluation rule':<34} {'applications':>12}"]
        for r in self.all_rules:
            note = f"  (excluded: {self.excluded[r]})" if r in self.excluded else ""
            mark = "" if self.rules[r] or r in self.excluded else "  <-- NOT COVERED"
            lines.append(f"{r:<34} {self.rules[r]:>12}{mark}{note}")
        lines += ["", f"rules: {self.rule_percent:.1f}% of {len(self.target_rules)} "
                      f"(excluding {', '.join(self.excluded) or 'none'})",
                  f"operators: {self.op_percent:.1f}% of {len(self.all_ops)} "
                  f"({self.random_op_percent:.1f}% from random programs alone)"]
        if self.ops_missing:
            lines.append("operators not covered: " + ", ".join(self.ops_missing))
        for o, why in sorted(self.excluded_ops.items()):
            lines.append(f"operator {o} excluded: {why}")
        lines += ["", self.operator_table()]
        return "\n".join(lines)


def _op_name(node: Any) -> str | None:
    from semantics.expr import Call, Op

    if isinstance(node, Call) and isinstance(node.op, Op):
        return node.op.name
    name = getattr(node, "name", None)
    return name if isinstance(name, str) else None


def _explicit_programs(programs: Iterable[Any]) -> list[tuple[Any, tuple[Any, ...]]]:
    """``IRModule`` s, texts or ``(program, inputs)`` pairs as ``(IRModule, inputs)``."""
    from semantics import parse
    from semantics.module import IRModule

    out: list[tuple[Any, tuple[Any, ...]]] = []
    for item in programs:
        inputs: tuple[Any, ...] = ()
        if isinstance(item, tuple) and len(item) == 2:
            item, inputs = item[0], tuple(item[1])
        if isinstance(item, str):
            item = parse(item)
        if not isinstance(item, IRModule):
            raise TypeError(f"programs: expected IRModule, text or (program, inputs), got "
                            f"{type(item).__name__}")
        out.append((item, inputs))
    return out


def _run(report: CoverageReport, module: Any, inputs: Sequence[Any], random_phase: bool) -> None:
    """Evaluate one program under the coverage recorder; count its outcome."""
    from conformance.harness import ORACLE_FUEL
    from interpreter.entry import evaluate_recorded
    from semantics.errors import RelayError

    recorder = _Recorder(report, random_phase)
    try:
        evaluate_recorded(module, *copy.deepcopy(tuple(inputs)), recorder=recorder,
                          check=False, fuel=ORACLE_FUEL)
    except RelayError as err:
        report.outcomes[type(err).__name__] += 1
    else:
        report.outcomes["value"] += 1


def coverage(max_examples: int = 200, *, config: Any = None, focus: bool = True,
             focus_examples: int = 3, ops: Sequence[str] | None = None,
             programs: Iterable[Any] | None = None) -> CoverageReport:
    """Generate programs, evaluate them under a recorder and report what they exercised.

    Args:
        max_examples: random programs (phase 1).
        config: a ``ProgramConfig`` for phase 1 (default generator when None).
        focus: run phase 2 for operators phase 1 missed.
        focus_examples: programs per missed operator in phase 2.
        ops: the operators to report on (default: the whole registry).
        programs: explicit programs replacing phase 1 (e.g. a hand-written test suite):
            ``IRModule`` s, Relay texts or ``(program, inputs)`` pairs, as for
            ``assert_equivalent(programs=...)``.
    Returns:
        A :class:`CoverageReport` (``str(report)`` is the rule table and the operator table).
    Raises:
        ParseError: an explicit program's text does not parse.
        TypeError: ``programs`` holds something else.
    """
    from hypothesis import HealthCheck, given, settings

    from conformance.strategies.opcalls import NOT_GENERATED, registry_ops
    from conformance.strategies.programs import ProgramConfig, well_typed_modules

    report = CoverageReport(all_rules=tuple(r.value for r in EVALUATION_RULES),
                            all_ops=tuple(ops if ops is not None else registry_ops()),
                            excluded=dict(EXCLUDED_RULES),
                            excluded_ops={} if ops is not None else dict(NOT_GENERATED))
    quiet: dict[str, Any] = dict(deadline=None, database=None, derandomize=True,
                 suppress_health_check=list(HealthCheck))

    if programs is not None:
        for module, inputs in _explicit_programs(programs):
            report.programs += 1
            _run(report, module, inputs, True)
    else:
        @settings(max_examples=max_examples, **quiet)
        @given(well_typed_modules(config))
        def random_phase(program: Any) -> None:
            report.programs += 1
            _run(report, program.module, program.inputs, True)

        random_phase()
    if focus:
        for name in report.ops_missing:
            cfg = ProgramConfig(max_depth=1, max_globals=0, max_adts=0, min_op_bindings=0,
                                max_let_chain=1, focus_op=name)

            @settings(max_examples=focus_examples, **quiet)
            @given(well_typed_modules(cfg))
            def focused(program: Any) -> None:
                report.focused_programs += 1
                _run(report, program.module, program.inputs, False)

            focused()
    return report
