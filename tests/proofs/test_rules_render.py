"""docs/rules/render.py: every rule of RULES.md parsed (the Rule enum's names) and drawn."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from semantics.rules import Rule

ROOT = Path(__file__).resolve().parents[2]


def _render_module():
    spec = importlib.util.spec_from_file_location("rules_render", ROOT / "docs/rules/render.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["rules_render"] = mod          # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_every_rule_of_rules_md_is_parsed_with_its_conclusion():
    render = _render_module()
    sections = render.parse_rules((ROOT / "semantics/RULES.md").read_text(encoding="utf-8"))
    names = [r.name for s in sections for r in s.rules]
    assert sorted(names) == sorted(r.value for r in Rule)
    by_name = {r.name: r for s in sections for r in s.rules}
    assert by_name["Semantics-If-True"].premises == ("Γ ⊢ c ⇓ True    Γ ⊢ e1 ⇓ v",)
    assert by_name["Semantics-If-True"].conclusion == ("Γ ⊢ if (c) { e1 } else { e2 } ⇓ v",)
    assert by_name["Semantics-Const"].premises == ()
    assert len(by_name["Type-Call-Op"].premises) == 2
    titles = [s.title for s in sections]
    assert "Evaluation: Leaves" in titles and "Typing: Leaves" in titles


def test_render_writes_png_and_pdf(tmp_path):
    pytest.importorskip("matplotlib")      # the `docs`/`bench` extra
    render = _render_module()
    sections = render.parse_rules((ROOT / "semantics/RULES.md").read_text(encoding="utf-8"))
    files = render.render(sections[:2], tmp_path)
    assert [f.suffix for f in files] == [".png", ".png", ".pdf"]
    for f in files:
        head = f.read_bytes()[:8]
        assert head.startswith(b"\x89PNG") or head.startswith(b"%PDF")
        assert f.stat().st_size > 2000


def test_citation_cff_has_the_required_fields():
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    top = {line.split(":", 1)[0] for line in text.splitlines()
           if line and not line.startswith((" ", "#", "-"))}
    assert {"cff-version", "message", "title", "authors", "type", "license",
            "preferred-citation"} <= top
    assert "Relay: A High-Level IR for Deep Learning" in text
