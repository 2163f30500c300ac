"""RULES.md's typing section and semantics.rules.Rule agree, and the checker cites every rule."""

from __future__ import annotations

import re
from pathlib import Path

from semantics.rules import Rule

ROOT = Path(__file__).resolve().parents[2]
RULES_MD = ROOT / "semantics" / "RULES.md"
CHECKER = ROOT / "typechecker"


def _typing_section() -> str:
    text = RULES_MD.read_text(encoding="utf-8")
    start = text.index("<!-- SECTION: typing")
    end = text.index("<!-- END SECTION: typing -->")
    return text[start:end]


def _documented() -> list[str]:
    return re.findall(r"\[((?:Type|Kind)-[A-Za-z-]+)\]", _typing_section())


def _enum() -> set[str]:
    return {r.value for r in Rule if r.value.startswith(("Type-", "Kind-"))}


def test_every_enum_rule_is_documented():
    assert _enum() - set(_documented()) == set()


def test_every_documented_rule_is_in_the_enum():
    assert set(_documented()) - _enum() == set()


def test_rule_names_are_unique_in_rules_md():
    names = _documented()
    assert len(names) == len(set(names))


def test_each_rule_has_a_plain_english_sentence():
    section = _typing_section()
    for name in _documented():
        after = section.split(f"[{name}]", 1)[1]
        lines = [ln for ln in after.splitlines()[1:] if ln.strip()]
        prose = [ln for ln in lines if not ln.startswith("    ")]
        assert prose, name
        # the sentence follows the rule's conclusion (at most a couple of indented lines)
        assert lines.index(prose[0]) <= 2, (name, lines[:3])
        assert prose[0].rstrip().endswith("."), (name, prose[0])


def test_every_rule_is_cited_by_a_checker_case():
    source = "\n".join(p.read_text(encoding="utf-8") for p in CHECKER.glob("*.py"))
    cited = set(re.findall(r"#\s*\[((?:Type|Kind)-[A-Za-z-]+)\]", source))
    assert _enum() - cited == set()


def test_error_codes_are_rule_members():
    # the checker's error codes are Rule members, never spelled-out strings
    source = "\n".join(p.read_text(encoding="utf-8") for p in CHECKER.glob("*.py"))
    assert not re.findall(r'code="', source)
    members = set(re.findall(r"code=Rule\.([A-Z_]+)", source))
    assert members and members <= {r.name for r in Rule}


def test_raised_codes_are_rules():
    from semantics import parse_expr
    from semantics.errors import RelayTypeError
    from typechecker import check

    for text in ("1(2)", "if (1) { 2 } else { 3 }", "add(1, 2f)", "let %r = ref(1); !1",
                 "fn (%x: (int32,)) { %x.3 }", "match (1) { Nil => 2 }"):
        try:
            check(parse_expr(text))
        except RelayTypeError as err:
            assert isinstance(err.code, Rule), (text, err.code)
            assert err.code == err.code.value  # a str enum: old string comparisons still hold
        else:
            raise AssertionError(f"{text} should not type-check")
