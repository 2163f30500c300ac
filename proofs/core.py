"""Obligations, their registry and the runner behind ``proofs.run`` and ``relay prove``.

An :class:`ObligationDef` is a named claim plus a ``check`` callable that discharges it and
returns a :class:`Verdict`. Three verdicts exist:

* ``proved`` — Z3 found the negation unsatisfiable (or, for a *bounded* obligation, every
  instance of the stated finite domain was checked; ``method`` says which);
* ``refuted`` — a counterexample was found; it is rendered as readable text;
* ``unknown`` — the solver gave up (or the check itself could not be carried out).

Obligation classes register themselves from :mod:`proofs.relations`, :mod:`proofs.rewrites`
and :mod:`proofs.soundness` with :func:`obligation`. :func:`run` evaluates them (optionally
only those whose name equals or starts with ``only``) and returns :class:`Obligation` records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import z3

PROVED = "proved"
REFUTED = "refuted"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check: status, counterexample text (refuted only), method used."""

    status: str
    counterexample: str = ""
    method: str = "z3"
    detail: str = ""


@dataclass(frozen=True)
class Obligation:
    """One discharged obligation as ``proofs.run`` reports it (docs/architecture.md#toolchain)."""

    name: str
    status: str
    counterexample: str
    method: str = "z3"
    seconds: float = 0.0
    statement: str = ""
    detail: str = ""


@dataclass(frozen=True)
class ObligationDef:
    """A registered obligation: ``name`` (``class.subject``), its statement, its check."""

    name: str
    statement: str
    check: Callable[[], Verdict]


_REGISTRY: dict[str, ObligationDef] = {}


def obligation(name: str, statement: str, check: Callable[[], Verdict]) -> None:
    """Register an obligation.

    Raises:
        ValueError: the name is already registered.
    """
    if name in _REGISTRY:
        raise ValueError(f"obligation {name} registered twice")
    _REGISTRY[name] = ObligationDef(name, statement, check)


def registered_now() -> dict[str, ObligationDef]:
    """The obligations registered so far (:func:`proofs.runner.registered` loads every
    obligation module first)."""
    return dict(_REGISTRY)


def prove_valid(claim: z3.BoolRef, timeout_ms: int = 60000,
                describe: Callable[[z3.ModelRef], str] | None = None,
                method: str = "z3") -> Verdict:
    """Prove ``claim`` valid: ``unsat`` of its negation is ``proved``, a model ``refuted``.

    Args:
        claim: a closed-over-free-constants formula (free constants are universally read).
        describe: renders a model as the counterexample (default: the model's assignments).
    Returns:
        The verdict.
    """
    # Z3's search depends on its internal state (terms other queries of the process created),
    # so a query that is instant in one process can stall in another: on ``unknown`` try again
    # with other random seeds, each attempt with a share of the time budget.
    attempts = 3
    for seed in range(attempts):
        s = z3.Solver()
        s.set("timeout", max(1, timeout_ms // attempts))
        s.set("random_seed", seed)
        s.add(z3.Not(claim))
        r = s.check()
        if r != z3.unknown:
            break
    if r == z3.unsat:
        return Verdict(PROVED, method=method)
    if r == z3.sat:
        m = s.model()
        small = [z3.And(c() >= -8, c() <= 8) for c in m.decls()
                 if c.arity() == 0 and c.range() == z3.IntSort()]
        if small:                          # prefer a counterexample with small numbers
            s.push()
            s.add(*small)
            if s.check() == z3.sat:
                m = s.model()
            s.pop()
        text = describe(m) if describe else model_text(m)
        return Verdict(REFUTED, text, method)
    return Verdict(UNKNOWN, "", method, f"solver: {s.reason_unknown()}")


def model_text(m: z3.ModelRef) -> str:
    """A model as ``name = value`` pairs, sorted by name."""
    # sort by name only: two declarations may share a name (e.g. Z3's own ``div0`` for
    # different sorts), and their interpretations do not compare
    pairs = sorted(((d.name(), m[d]) for d in m.decls() if d.arity() == 0), key=lambda p: p[0])
    text = ", ".join(f"{n} = {_value_text(v)}" for n, v in pairs)
    funs = sorted(((d.name(), m[d]) for d in m.decls()
                   if d.arity() > 0 and d.name() not in _SOLVER_INTERNAL), key=lambda p: p[0])
    if funs:
        text += "; " + "; ".join(f"{n} = {v}" for n, v in funs)
    return text


# Z3's own interpretations of division by zero: not part of a counterexample
_SOLVER_INTERNAL = frozenset({"/0", "div0", "mod0", "rem0", "idiv0"})


def _value_text(v: z3.ExprRef) -> str:
    if z3.is_rational_value(v):
        r: Any = v
        num, den = r.numerator_as_long(), r.denominator_as_long()
        return str(num) if den == 1 else f"{num}/{den}"
    if z3.is_algebraic_value(v):
        a: Any = v
        return str(a.as_decimal(6))
    return str(v)
