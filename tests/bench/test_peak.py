"""The SGEMM peak (``backends/peak.py``): one measurement for ``relay tune`` and ``bench/``
(``bench/peak.py`` prints it); its arithmetic checked on a fake clock, never on timings."""

from __future__ import annotations

import itertools

import pytest

import backends.peak as peak
from semantics.errors import RelayArgumentValueError


def test_the_figure_is_the_best_product_in_gflops(monkeypatch: pytest.MonkeyPatch) -> None:
    # the clock: each product takes 4, 2, 3 ticks of 1 ms in turn (the best: 2 ms)
    ticks = itertools.accumulate(itertools.cycle([0.0, 0.004, 0.0, 0.002, 0.0, 0.003]))
    monkeypatch.setattr(peak.time, "perf_counter", lambda: next(ticks))
    n = 16
    assert peak.sgemm_gflops(n, repeat=3) == pytest.approx(2 * n ** 3 / 0.002 / 1e9)


def test_bad_sizes_are_refused() -> None:
    for n, repeat in ((0, 1), (8, 0), (-1, 3)):
        with pytest.raises(RelayArgumentValueError, match="positive"):
            peak.sgemm_gflops(n, repeat)


def test_bench_and_the_tuner_share_the_measurement() -> None:
    from bench import peak as bench_peak

    assert bench_peak.sgemm_gflops is peak.sgemm_gflops
    figure = peak.sgemm_gflops(32, 1)
    assert figure > 0 and figure != float("inf")


def test_the_tuner_ranks_against_the_shared_measurement(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tvm", reason="apache-tvm is not installed (extra 'tvm')")
    from backends.tvm.tune import tuner

    seen: list[tuple[int, int]] = []
    monkeypatch.setattr(tuner, "sgemm_gflops", lambda n, repeat: seen.append((n, repeat)) or 7.5)
    assert tuner.measured_peak(64, 2) == 7.5 and seen == [(64, 2)]
