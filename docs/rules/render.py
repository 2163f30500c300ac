"""Render ``semantics/RULES.md`` as typeset inference rules (PNG per section, one PDF).

Usage::

    python docs/rules/render.py [--rules semantics/RULES.md] [--out docs/rules/out]

Every rule of RULES.md is an indented block: premise lines, a line of ``─`` ending in
``[Rule-Name]``, conclusion lines. Each ``###`` (or ``##``) section becomes one figure: each
rule is drawn with its premises over a horizontal bar, the conclusion under it and the rule
name in italics at the right of the bar, as in a paper. Drawing uses matplotlib's own text
engine (no TeX installation is needed) with DejaVu Serif, falling back to DejaVu Sans for the
few symbols Serif lacks; ``$`` is escaped so no line is read as mathtext. Output:
``<out>/<nn>-<section>.png`` for each section and ``<out>/rules.pdf`` with one page per
section.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BAR = "─"
# DejaVu Serif first; DejaVu Sans supplies the few symbols Serif lacks (≼)
FONTS = ["DejaVu Serif", "DejaVu Sans"]
NAME = re.compile(r"\[([A-Za-z][\w-]*)\]\s*$")


@dataclass(frozen=True)
class Rule:
    """One inference rule: premises (lines), conclusion (lines), name."""

    name: str
    premises: tuple[str, ...]
    conclusion: tuple[str, ...]


@dataclass
class Section:
    title: str
    rules: list[Rule]


def parse_rules(text: str) -> list[Section]:
    """The sections of RULES.md with their rules, in order (sections without rules dropped).

    Returns:
        Sections whose ``rules`` are parsed from each indented block holding a bar line.
    """
    sections: list[Section] = []
    current = Section("Preamble", [])
    block: list[str] = []

    def flush() -> None:
        if block:
            current.rules.extend(_rules_of(block))
            block.clear()

    part = ""
    for line in text.splitlines():
        if line.startswith("#"):
            flush()
            if current.rules:
                sections.append(current)
            title = line.lstrip("#").strip()
            if line.startswith("## "):
                part = title
            elif line.startswith("### ") and part:
                title = f"{part}: {title}"
            current = Section(title, [])
        elif line.startswith("    ") and line.strip():
            block.append(line[4:].rstrip())
        else:
            flush()
    flush()
    if current.rules:
        sections.append(current)
    return sections


def _rules_of(block: list[str]) -> list[Rule]:
    """Rules in one indented block (a block may hold several rules one after another)."""
    out: list[Rule] = []
    bars = [i for i, ln in enumerate(block) if ln.lstrip().startswith(BAR) and NAME.search(ln)]
    start = 0
    for k, b in enumerate(bars):
        m = NAME.search(block[b])
        assert m is not None
        end = bars[k + 1] - 1 if k + 1 < len(bars) else len(block)
        # the next rule's premises start after this rule's conclusion: one conclusion line
        # unless the following bar leaves more lines in between
        concl_end = b + 2 if k + 1 < len(bars) else end
        premises = tuple(ln.strip() for ln in block[start:b] if ln.strip())
        conclusion = tuple(ln.strip() for ln in block[b + 1:concl_end] if ln.strip())
        if m.group(1) != "Rule-Name":          # the notation example of the preamble
            out.append(Rule(m.group(1), premises, conclusion))
        start = concl_end
    return out


def render(sections: list[Section], out: Path) -> list[Path]:
    """Draw every section; returns the files written (PNGs then the PDF).

    Raises:
        ImportError: matplotlib is missing.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    pdf_path = out / "rules.pdf"
    with PdfPages(pdf_path) as pdf:
        for idx, sec in enumerate(sections, 1):
            fig = _figure(plt, sec)
            slug = re.sub(r"[^a-z0-9]+", "-", sec.title.lower()).strip("-")
            png = out / f"{idx:02d}-{slug}.png"
            fig.savefig(png, dpi=150, bbox_inches="tight", pad_inches=0.25)
            pdf.savefig(fig, bbox_inches="tight", pad_inches=0.25)
            plt.close(fig)
            written.append(png)
    written.append(pdf_path)
    return written


def _figure(plt: Any, sec: Section) -> Any:
    """One figure: the section's rules stacked vertically, each typeset as a fraction."""
    line_h = 0.32                                      # inches per text line
    heights = [(max(len(r.premises), 1) + max(len(r.conclusion), 1)) * line_h + 0.45
               for r in sec.rules]
    width = 9.0
    total = sum(heights) + 0.7
    fig = plt.figure(figsize=(width, total))
    fig.text(0.03, 1 - 0.35 / total, sec.title, fontsize=14, fontweight="bold",
             family=FONTS, va="center")
    renderer = fig.canvas.get_renderer()
    y = total - 0.7
    style = {"family": FONTS, "fontsize": 10.5}
    for rule, h in zip(sec.rules, heights, strict=True):
        top = y - 0.1
        n_p = max(len(rule.premises), 1)
        bar_y = top - n_p * line_h - 0.05
        center = 0.45
        widths = []
        for j, p in enumerate(rule.premises):
            t = fig.text(center, (top - (j + 0.5) * line_h) / total, _safe(p), ha="center",
                         va="center", **style)
            widths.append(t.get_window_extent(renderer).width)
        for j, c in enumerate(rule.conclusion):
            t = fig.text(center, (bar_y - 0.05 - (j + 0.5) * line_h) / total, _safe(c),
                         ha="center", va="center", **style)
            widths.append(t.get_window_extent(renderer).width)
        bar_w = (max(widths, default=60) + 16) / (fig.dpi * width)
        fig.add_artist(plt.Line2D([center - bar_w / 2, center + bar_w / 2],
                                  [bar_y / total] * 2, color="black", linewidth=0.9))
        fig.text(center + bar_w / 2 + 0.01, bar_y / total, _small_caps(rule.name),
                 ha="left", va="center", family=FONTS, fontsize=9, style="italic")
        y -= h
    return fig


def _safe(text: str) -> str:
    """Text for matplotlib: ``$`` would start mathtext, so it is escaped."""
    return text.replace("$", r"\$")


def _small_caps(name: str) -> str:
    """The rule name with non-breaking hyphens (it never wraps)."""
    return name.replace("-", "\u2011")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", type=Path, default=ROOT / "semantics" / "RULES.md")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "rules" / "out")
    args = ap.parse_args(argv)
    sections = parse_rules(args.rules.read_text(encoding="utf-8"))
    files = render(sections, args.out)
    count = sum(len(s.rules) for s in sections)
    sys.stdout.write(f"{count} rules in {len(sections)} sections -> {len(files)} files in "
                     f"{args.out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
