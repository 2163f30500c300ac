"""The two decisions of a tuning run, as pure functions of measured numbers.

* :func:`rank` — which kernels to tune: those whose measured time is furthest above what the
  machine's peak allows for their FLOPs (the time a perfect schedule would save);
* :func:`decide` — whether a tuned kernel replaces ours: only when its results equal ours and
  it is faster in the same run, by a margin, on both the median and the best block.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MARGIN", "Decision", "KernelCost", "decide", "rank"]

MARGIN = 0.03
"""A tuned kernel must be at least this fraction faster than ours (noise on a shared machine
is a few percent between blocks of the same kernel)."""


@dataclass(frozen=True)
class KernelCost:
    """One kernel of a program as measured: its name, FLOPs (0: not counted, e.g. an
    elementwise kernel), seconds a call, and how many times the program calls it."""

    name: str
    flops: int
    seconds: float
    calls: int = 1

    def lost(self, peak_flops: float) -> float:
        """Seconds per program run above the peak's time for its FLOPs (all of its time when
        it has no FLOPs counted)."""
        ideal = self.flops / peak_flops if peak_flops > 0 else 0.0
        return max(0.0, self.seconds - ideal) * self.calls

    def efficiency(self, peak_flops: float) -> float:
        """The fraction of the peak it reaches (0 without FLOPs)."""
        if self.seconds <= 0 or peak_flops <= 0:
            return 0.0
        return self.flops / self.seconds / peak_flops


def rank(costs: Sequence[KernelCost], peak_flops: float, count: int) -> list[KernelCost]:
    """The ``count`` kernels with the most time lost against the peak (:meth:`KernelCost.lost`),
    most first; ties keep the given order. Kernels measured at no time are never picked."""
    if count < 1:
        return []
    timed = [c for c in costs if c.seconds > 0 and math.isfinite(c.seconds)]
    order = sorted(range(len(timed)), key=lambda i: (-timed[i].lost(peak_flops), i))
    return [timed[i] for i in order[:count]]


@dataclass(frozen=True)
class Decision:
    """Whether the tuned kernel is kept, with the medians and best blocks it was judged on."""

    keep: bool
    ours: float
    tuned: float
    reason: str

    @property
    def speedup(self) -> float:
        """Our median over the tuned one (> 1: the tuned kernel is faster)."""
        return self.ours / self.tuned if self.tuned > 0 else 0.0


def _clean(times: Sequence[float]) -> list[float]:
    return [float(t) for t in times if math.isfinite(t) and t > 0]


def decide(ours: Sequence[float], tuned: Sequence[float], *, same_results: bool = True,
           margin: float = MARGIN) -> Decision:
    """Keep the tuned kernel only when it computes our results and beats ours.

    Args:
        ours, tuned: seconds per call of each kernel, one per timed block, measured
            alternately in the same run (non-positive or non-finite entries are dropped).
        same_results: whether the tuned kernel's outputs matched ours on the same inputs.
        margin: the fraction by which the tuned kernel must be faster.
    Returns:
        The decision: kept when its median *and* its best block are below ours by ``margin``.
    """
    a, b = _clean(ours), _clean(tuned)
    if not a or not b:
        return Decision(False, statistics.median(a) if a else 0.0,
                        statistics.median(b) if b else 0.0, "not measured")
    mine, theirs = statistics.median(a), statistics.median(b)
    if not same_results:
        return Decision(False, mine, theirs, "its results differ from ours")
    limit = 1.0 - margin
    if theirs < mine * limit and min(b) < min(a) * limit:
        return Decision(True, mine, theirs, f"{mine / theirs:.2f}x faster than ours")
    return Decision(False, mine, theirs, f"not faster than ours by {margin:.0%} (median and "
                                         f"best block)")
