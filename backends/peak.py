"""The machine's attainable float32 peak, measured now: what ``relay tune`` ranks kernels
against and what ``bench/`` reports percentages of (``bench/peak.py`` prints it).

:func:`sgemm_gflops` times float32 ``n × n`` matrix products by numpy's BLAS (OpenBLAS's
hand-written assembly kernels, with the threads numpy's BLAS was started with:
``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS`` when numpy was first imported) and returns the
best of a few, in GFLOP/s. One module for both, so that the tuner's "fraction of peak" and
the benchmarks' are the same figure. It lives outside ``backends.tvm`` so that
``bench/peak.py`` measures without importing TVM.
"""

from __future__ import annotations

import time

import numpy as np

from semantics.errors import RelayArgumentValueError

__all__ = ["sgemm_gflops"]


def sgemm_gflops(n: int = 2048, repeat: int = 5) -> float:
    """GFLOP/s of the best of ``repeat`` float32 ``n × n`` matrix products (numpy's BLAS;
    one unmeasured product first).

    Raises:
        RelayArgumentValueError: ``n`` or ``repeat`` is not positive.
    """
    if n < 1 or repeat < 1:
        raise RelayArgumentValueError(f"sgemm_gflops needs a positive n and repeat, not {n} "
                                      f"and {repeat}")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    a @ b
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * n ** 3 / best / 1e9
