"""The reporting side of ``bench/paper.py``: timings with their spread, ratios of timings,
the machine's load average, Markdown tables and the report that collects the figures.

A :class:`Timing` is the median, minimum and maximum of a configuration's timed runs; a
:class:`Ratio` of two timings carries the range of the ratio of any two of their runs, so a
table cell (``median [min–max]``) bounds every ratio actually observed.  The :class:`Report`
writes the Markdown ``README.md`` of the output folder, with a warning at its top when the
load average before or after a figure exceeded the number of CPUs.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Timing:
    """Wall-clock seconds of one configuration: the median, minimum and maximum over its
    ``runs`` timed runs."""

    median: float
    low: float
    high: float
    runs: int

    @staticmethod
    def of(times: list[float]) -> Timing:
        return Timing(statistics.median(times), min(times), max(times), len(times))

    def ms(self) -> str:
        """``median [min–max]`` in milliseconds, for a table cell."""
        return f"{_num(self.median * 1e3)} [{_num(self.low * 1e3)}–{_num(self.high * 1e3)}]"


@dataclass(frozen=True)
class Ratio:
    """``numerator / denominator`` of two timings: the ratio of the medians, and the range of
    the ratio of any two of their runs (lowest over highest, highest over lowest)."""

    value: float
    low: float
    high: float

    @staticmethod
    def of(numerator: Timing, denominator: Timing) -> Ratio:
        return Ratio(numerator.median / denominator.median, numerator.low / denominator.high,
                     numerator.high / denominator.low)

    def cell(self) -> str:
        return f"{_num(self.value)} [{_num(self.low)}–{_num(self.high)}]"


def _num(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"


def load_average() -> float | None:
    """The 1-minute load average (None where the system does not report one)."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


@dataclass
class Report:
    out: Path
    sections: list[str] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)
    loads: list[tuple[str, float | None, float | None]] = field(default_factory=list)

    def add(self, title: str, body: str) -> None:
        self.sections.append(f"## {title}\n\n{body}\n")

    def lack(self, what: str, why: str) -> None:
        self.missing.append((what, why))

    def overloaded(self) -> list[tuple[str, float | None, float | None]]:
        """The figures whose load average before or after exceeded the number of CPUs."""
        cpus = os.cpu_count() or 1
        return [(t, a, b) for t, a, b in self.loads
                if any(x is not None and x > cpus for x in (a, b))]

    def write(self, header: str) -> Path:
        lines = [header, ""]
        busy = self.overloaded()
        if busy:
            cpus = os.cpu_count() or 1
            lines += [f"> **Warning: the machine was loaded beyond its {cpus} CPUs** while "
                      f"{len(busy)} figure(s) ran (1-minute load average before → after: "
                      + "; ".join(f"{t}: {format_load(a)} → {format_load(b)}" for t, a, b in busy)
                      + "). Other work competed for the CPUs: read the times with their "
                      "[min–max] ranges, and rerun on an idle machine before trusting a "
                      "ratio.", ""]
        lines += self.sections
        if self.missing:
            lines.append("## Missing\n")
            lines += [f"* **{what}**: {why}" for what, why in self.missing]
            lines.append("")
        path = self.out / "README.md"
        path.write_text("\n".join(lines))
        return path


def format_load(x: float | None) -> str:
    """A load average for the report: two decimals, or ``unknown``."""
    return "unknown" if x is None else f"{x:.2f}"


def table(header: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"
        return str(v)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(out)
