"""Rule and operator coverage of the generator (HOUSE_STYLE habit 11: rule coverage is a test).

Every ``Semantics-*`` rule of RULES.md except ``Semantics-Grad`` (AD is a later
issue) and every registered operator must be exercised by generated programs.
"""

from __future__ import annotations

from conformance import coverage
from semantics.ops import list_ops
from semantics.rules import EVALUATION_RULES


def test_generated_programs_cover_every_rule_and_operator() -> None:
    report = coverage(max_examples=200)
    assert report.rules_missing == [], str(report)
    assert report.rule_percent == 100.0
    assert report.ops_missing == [], str(report)
    assert report.op_percent == 100.0
    assert set(report.all_ops) == set(list_ops())
    assert set(report.all_rules) == {r.value for r in EVALUATION_RULES}
    assert "Semantics-Grad" in report.excluded
    text = str(report)
    assert "Semantics-Grad" in text and "excluded" in text
    assert "rules: 100.0%" in text and "operators: 100.0%" in text
    # The random programs alone already reach most operators.
    assert report.random_op_percent >= 50.0, text
