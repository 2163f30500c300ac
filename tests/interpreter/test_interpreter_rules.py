"""The evaluation rules as data: RULES.md ↔ the Rule enum ↔ the oracle's cases, and coverage.

The cases are in interpreter/eval.py, the pattern rules in interpreter/matching.py.

The coverage test runs the interpreter's test corpus (every golden program
plus the snippets below) with ``trace`` and requires every ``Semantics-*``
rule of RULES.md to fire at least once. ``grad`` needs an expander: the real
one arrives with the AD package (a later issue), so this test registers a
small stand-in that expands ``grad(f)`` to a function returning ``f``'s value
and a zero gradient.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from interp_util import GOLDEN_FILES, directives, golden_call

from interpreter import evaluate, register_grad_expander
from semantics import RelayError, parse, parse_expr
from semantics.expr import Call, Function, Grad, Tuple, Var, const
from semantics.rules import EVALUATION_RULES, Rule

ROOT = Path(__file__).resolve().parents[2]
RULES_MD = ROOT / "semantics" / "RULES.md"
# The oracle's rule cases: interpreter/eval.py, and the pattern rules' interpreter/matching.py.
CASE_FILES = (ROOT / "interpreter" / "eval.py", ROOT / "interpreter" / "matching.py")


def evaluation_section() -> str:
    text = RULES_MD.read_text(encoding="utf-8")
    start = text.index("<!-- SECTION: evaluation")
    end = text.index("<!-- END SECTION: evaluation -->")
    return text[start:end]


def rules_md_names() -> list[str]:
    """The rule labels ``[Semantics-...]`` of the evaluation section, in order."""
    return re.findall(r"\[(Semantics-[A-Za-z-]+)\]\s*$", evaluation_section(), re.M)


def test_rules_md_names_are_unique():
    names = rules_md_names()
    assert len(names) == len(set(names))


def test_rules_md_and_enum_agree_both_ways():
    in_md = set(rules_md_names())
    in_enum = {r.value for r in EVALUATION_RULES}
    assert in_md - in_enum == set(), "in RULES.md but not in semantics.rules.Rule"
    assert in_enum - in_md == set(), "in semantics.rules.Rule but not in RULES.md"


def test_every_semantics_name_mentioned_in_rules_md_exists():
    mentioned = set(re.findall(r"Semantics-[A-Za-z]+(?:-[A-Za-z]+)*", evaluation_section()))
    assert mentioned - {r.value for r in EVALUATION_RULES} == set()


def test_every_rule_has_exactly_one_case_opening_with_it():
    source = "\n".join(p.read_text(encoding="utf-8") for p in CASE_FILES)
    for rule in EVALUATION_RULES:
        opened = re.findall(rf"^\s*# \[{re.escape(rule.value)}\]", source, re.M)
        assert len(opened) == 1, f"{rule.value}: {len(opened)} cases"
        assert f"Rule.{rule.name}" in source, f"{rule.value} never fired"


def test_rule_enum_values_are_the_names():
    for rule in EVALUATION_RULES:
        assert rule.value.startswith("Semantics-")
        assert rule is Rule(rule.value)


# --- coverage --------------------------------------------------------------------------------

SNIPPETS = [
    "let %f = add; %f(1, 2)",                                     # Semantics-Op as a value
    "match ((1, 2)) { (%a, _) => %a }",                           # tuple and wildcard patterns
    "let %x = Some(3); match (%x) { Some(%y) => %y, None => 0 }",
    "let %r = ref(1); %r := !%r + 1; !%r",
    "(fn (%x: int32) { %x })(3)",
    "if (False) { 1 } else { 2 }",
    "@length(Cons(1, Nil))",
]


def stand_in_expander(node: Grad, mod, roots=()) -> Function:
    """grad(f) ↦ fn (x) { (f(x), (0f,)) } — a placeholder until the AD package exists."""
    x = Var("x")
    return Function((x,), Tuple((Call(node.func, (x,)), Tuple((const(0.0),)))))


def fired_rules() -> set[str]:
    names: set[str] = set()

    def trace(name, node):
        names.add(name)

    for path in GOLDEN_FILES:
        text = path.read_text(encoding="utf-8")
        args, kwargs = golden_call(directives(text))
        try:
            evaluate(parse(text), *args, trace=trace, **kwargs)
        except RelayError:
            pass
    for text in SNIPPETS:
        evaluate(parse_expr(text), check=False, trace=trace)
    previous = register_grad_expander(stand_in_expander)
    try:
        f = parse_expr("fn (%x: float32) -> float32 { %x * %x }")
        evaluate(Call(Grad(f), (const(3.0),)), check=False, trace=trace)
    finally:
        register_grad_expander(previous)
    return names


@pytest.fixture(scope="module")
def fired() -> set[str]:
    return fired_rules()


def test_every_evaluation_rule_fires(fired):
    missing = set(rules_md_names()) - fired
    assert missing == set(), f"never exercised: {sorted(missing)}"


def test_only_known_rules_fire(fired):
    assert fired <= {r.value for r in EVALUATION_RULES}
