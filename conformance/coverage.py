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

``Semantics-Grad`` is excluded (``grad`` needs the AD package of a later
issue) and reported as such. The report's ``__str__`` is the table
``relay conformance --coverage`` prints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from semantics.rules import EVALUATION_RULES

__all__ = ["CoverageReport", "coverage", "EXCLUDED_RULES"]

EXCLUDED_RULES = {"Semantics-Grad": "needs the AD package (grad expansion), a later issue"}


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
    outcomes: Counter[str] = field(default_factory=Counter)

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
        return "\n".join(lines)


class _Tracer:
    def __init__(self, report: CoverageReport, random_phase: bool):
        self.report = report
        self.random_phase = random_phase

    def __call__(self, rule: str, node: Any) -> None:
        self.report.rules[rule] += 1
        if rule == "Semantics-Call-Op":
            name = _op_name(node)
            if name is not None:
                self.report.ops[name] += 1
                if self.random_phase:
                    self.report.random_ops[name] += 1


def _op_name(node: Any) -> str | None:
    from semantics.expr import Call, Op

    if isinstance(node, Call) and isinstance(node.op, Op):
        return node.op.name
    name = getattr(node, "name", None)
    return name if isinstance(name, str) else None


def _run(report: CoverageReport, program: Any, random_phase: bool) -> None:
    from conformance.harness import ORACLE_FUEL, run_oracle

    outcome = run_oracle(program.module, program.inputs, fuel=ORACLE_FUEL, check=False,
                         trace=_Tracer(report, random_phase))
    report.outcomes["value" if outcome.ok else outcome.error or "error"] += 1


def coverage(max_examples: int = 200, *, config: Any = None, focus: bool = True,
             focus_examples: int = 3, ops: Sequence[str] | None = None) -> CoverageReport:
    """Generate programs, evaluate them under ``trace`` and report rule/operator coverage.

    Args:
        max_examples: random programs (phase 1).
        config: a ``ProgramConfig`` for phase 1 (default generator when None).
        focus: run phase 2 for operators phase 1 missed.
        focus_examples: programs per missed operator in phase 2.
        ops: the operators to report on (default: the whole registry).
    Returns:
        A :class:`CoverageReport` (``str(report)`` is a table).
    """
    from hypothesis import HealthCheck, given, settings

    from conformance.strategies.programs import ProgramConfig, well_typed_modules
    from semantics.ops import list_ops

    report = CoverageReport(all_rules=tuple(r.value for r in EVALUATION_RULES),
                            all_ops=tuple(ops if ops is not None else list_ops()),
                            excluded=dict(EXCLUDED_RULES))
    quiet = dict(deadline=None, database=None, derandomize=True,
                 suppress_health_check=list(HealthCheck))

    @settings(max_examples=max_examples, **quiet)
    @given(well_typed_modules(config))
    def random_phase(program: Any) -> None:
        report.programs += 1
        _run(report, program, True)

    random_phase()
    if focus:
        for name in report.ops_missing:
            cfg = ProgramConfig(max_depth=1, max_globals=0, max_adts=0, min_op_bindings=0,
                                max_let_chain=1, focus_op=name)

            @settings(max_examples=focus_examples, **quiet)
            @given(well_typed_modules(cfg))
            def focused(program: Any) -> None:
                report.focused_programs += 1
                _run(report, program, False)

            focused()
    return report
