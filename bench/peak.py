"""The machine's float32 throughput, measured in the run that reports against it (issue 16 §4).

A benchmark that prints "percent of peak" needs the peak of the machine it runs on, not of the
machine an issue was written on. Two figures, both measured here and now:

* :func:`sgemm_gflops` — the **attainable** peak: the best of a few float32 matrix products of
  ``n × n`` matrices by numpy's BLAS (OpenBLAS's hand-written assembly kernels) with the
  benchmark's thread count (``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS``, set before numpy is
  imported). This is what percentages are computed against. The measurement lives in
  :mod:`backends.peak`, which ``relay tune`` ranks kernels by: one figure for both.
* :func:`nominal_gflops` — the **nominal** peak from the CPU's description: cores × float32
  lanes of a vector × 2 FMA units × 2 flops × the clock ``/proc/cpuinfo`` reports (a virtual
  machine reports its base clock; turbo can exceed it), or None when unknown.

Usage: ``python bench/peak.py`` prints both.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("OPENBLAS_NUM_THREADS", os.environ["OMP_NUM_THREADS"])

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from backends.peak import sgemm_gflops  # noqa: E402 - after the thread settings

__all__ = ["nominal_gflops", "sgemm_gflops"]


def nominal_gflops(threads: int | None = None) -> float | None:
    """``threads`` (default ``OMP_NUM_THREADS``) × lanes × 2 FMA units × 2 flops × GHz from
    ``/proc/cpuinfo``; None when the clock or the vector width is unknown."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    mhz = None
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "cpu MHz" and mhz is None:
            try:
                mhz = float(value)
            except ValueError:
                pass
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4 if flags else 0
    if not mhz or not lanes:
        return None
    cores = threads if threads is not None else int(os.environ.get("OMP_NUM_THREADS", "1"))
    return cores * lanes * 2 * 2 * mhz / 1000


def main() -> int:
    nominal = nominal_gflops()
    print(f"float32 SGEMM (numpy's BLAS, {os.environ['OMP_NUM_THREADS']} threads): "
          f"{sgemm_gflops():.1f} GFLOP/s")
    print("nominal peak (cores x lanes x 2 FMA x 2 flops x the reported clock): "
          + (f"{nominal:.1f} GFLOP/s" if nominal else "unknown"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
