"""The matching judgment v ⊨ p ⇒ σ of the oracle (RULES.md, "Evaluation": Semantics-Pattern-Var,
Semantics-Pattern-Wildcard, Semantics-Pattern-Constructor, Semantics-Pattern-Tuple).

:class:`PatternMatcher` is the part of :class:`interpreter.eval.Interpreter` that decides
whether a value matches a ``match`` clause's pattern: one case per pattern rule, each
opening with the rule as written in RULES.md, run on an explicit work list (no Python
recursion on the pattern's depth). The rules used are reported through ``fired`` (the
machine's bookkeeping of fuel, ``trace`` and the derivation recorder) once the whole
pattern has matched, in the order the derivation lists them; a flat constructor pattern
``C(x, _, ...)`` (variables and wildcards only) is decided by one unrolled loop that fires
the same rules on the same nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from interpreter.machine import MISSING, NodeCache, Rule
from interpreter.values import ConstructorValue
from semantics.expr import (
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    Var,
)

__all__ = ["PatternMatcher"]

_FLAT_KIDS = (PatternVar, PatternWildcard)
# Per constructor pattern: its sub-patterns when all are variables or wildcards, else None.
_FLAT = NodeCache(4096)


def _flat_pattern(p: PatternConstructor) -> tuple[Pattern, ...] | None:
    """``p``'s sub-patterns when each is a variable or a wildcard (a flat pattern), else None."""
    kids = tuple(p.patterns)
    return kids if all(type(q) in _FLAT_KIDS for q in kids) else None


class PatternMatcher:
    """The pattern rules (a base of :class:`interpreter.eval.Interpreter`, which supplies
    ``fired``). ``PATTERNS`` maps a pattern's type to its rule case."""

    PATTERNS: dict[type, Callable[..., bool]]
    fired: Callable[[Any, Any], None]

    def _matches(self, p: Pattern, v: Any) -> list[tuple[Var, Any]] | None:
        """σ when ``v ⊨ p ⇒ σ`` (firing the pattern rules used), None when ``v ⊭ p``."""
        if type(p) is PatternConstructor:
            if type(v) is not ConstructorValue or v.name != p.constructor.name:
                return None  # the common quick "no": another constructor
            flat = _FLAT.get(p, MISSING)
            if flat is MISSING:
                flat = _FLAT.put(p, _flat_pattern(p))
            if flat is not None and len(v.fields) == len(flat):
                # C(p1, ..., pn) with variables and wildcards only: the loop below, unrolled.
                # Semantics-Pattern-Constructor, then each pi left to right
                # (Semantics-Pattern-Var / -Wildcard), the same rules in the same order.
                fired = self.fired
                fired(Rule.SEMANTICS_PATTERN_CONSTRUCTOR, p)
                sig: list[tuple[Var, Any]] = []
                for q, w in zip(p.patterns, v.fields):
                    if type(q) is PatternVar:
                        sig.append((q.var, w))
                        fired(Rule.SEMANTICS_PATTERN_VAR, q)
                    else:
                        fired(Rule.SEMANTICS_PATTERN_WILDCARD, q)
                return sig
        sigma: list[tuple[Var, Any]] = []
        used: list[tuple[Any, Pattern]] = []
        work: list[tuple[Pattern, Any]] = [(p, v)]
        table = self.PATTERNS
        while work:
            q, w = work.pop()
            if not table[type(q)](q, w, sigma, work, used):
                return None
        for rule, q in used:
            self.fired(rule, q)
        return sigma

    # [Semantics-Pattern-Wildcard]   ───────────────   v ⊨ _ ⇒ ∅
    @staticmethod
    def _match_wildcard(p: PatternWildcard, v: Any, sigma: list[Any], work: list[Any],
                        used: list[Any]) -> bool:
        used.append((Rule.SEMANTICS_PATTERN_WILDCARD, p))
        return True

    # [Semantics-Pattern-Var]   ───────────────   v ⊨ x ⇒ {x ↦ v}
    @staticmethod
    def _match_var(p: PatternVar, v: Any, sigma: list[Any], work: list[Any],
                   used: list[Any]) -> bool:
        sigma.append((p.var, v))
        used.append((Rule.SEMANTICS_PATTERN_VAR, p))
        return True

    # [Semantics-Pattern-Constructor]   v = C(v1, ..., vn)    v1 ⊨ p1 ⇒ σ1  ...  vn ⊨ pn ⇒ σn
    #                                   ⟹   v ⊨ C(p1, ..., pn) ⇒ σ1 ∪ ... ∪ σn
    @staticmethod
    def _match_constructor(p: PatternConstructor, v: Any, sigma: list[Any], work: list[Any],
                           used: list[Any]) -> bool:
        if type(v) is not ConstructorValue or v.name != p.constructor.name \
                or len(v.fields) != len(p.patterns):
            return False
        used.append((Rule.SEMANTICS_PATTERN_CONSTRUCTOR, p))
        work.extend(zip(reversed(p.patterns), reversed(v.fields)))
        return True

    # [Semantics-Pattern-Tuple]   v = (v1, ..., vn)    v1 ⊨ p1 ⇒ σ1  ...  vn ⊨ pn ⇒ σn
    #                             ⟹   v ⊨ (p1, ..., pn) ⇒ σ1 ∪ ... ∪ σn
    @staticmethod
    def _match_tuple(p: PatternTuple, v: Any, sigma: list[Any], work: list[Any],
                     used: list[Any]) -> bool:
        if type(v) is not tuple or len(v) != len(p.patterns):
            return False
        used.append((Rule.SEMANTICS_PATTERN_TUPLE, p))
        work.extend(zip(reversed(p.patterns), reversed(v)))
        return True


PatternMatcher.PATTERNS = {
    PatternWildcard: PatternMatcher._match_wildcard, PatternVar: PatternMatcher._match_var,
    PatternConstructor: PatternMatcher._match_constructor,
    PatternTuple: PatternMatcher._match_tuple,
}
