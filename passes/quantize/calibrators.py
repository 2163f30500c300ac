"""Choosing a range for one simQ from the values it sees: the ``kl`` and ``mse`` calibrators.

Design note. Both take the float values a simulated quantizer receives on the calibration
data (all inputs concatenated) and return a *range* ``r``; the simQ's step is then
``r / 2^(bits - sign)`` (:func:`passes.quantize.simq.dom_scale_for`).

* :func:`kl_range` — the entropy calibration of MXNet and TVM (after TensorRT), written
  anew: a symmetric histogram of ``num_bins`` bins over ``[-max|x|, max|x|]``; for every
  candidate threshold (a window of ``2i + 1`` bins around zero, ``i`` from half the quantized
  bins to half the bins) the reference distribution ``P`` is the window with the outliers
  folded into its end bins, ``Q`` is the window merged into ``num_quantized_bins`` bins and
  spread back evenly over the bins where ``P`` is non-zero; both are smoothed (zeros get a
  small mass taken from the non-zeros) and the threshold with the least ``KL(P || Q)`` wins.
  Each candidate costs a few vectorised numpy operations (``np.add.reduceat``); at most
  ``max_candidates`` thresholds are tried (the windows from the widest down, evenly strided),
  so one site costs about 0.1 s.
* :func:`mse_range` — the range among ``candidates`` fractions of ``max|x|`` whose simQ
  (round to nearest, clip) has the least mean-squared error on the values (a deterministic
  subsample of at most ``max_samples``).

Both are deterministic (no random sampling) and return ``max|x|``-based fallbacks for
degenerate data (all zeros: 1.0).
"""

from __future__ import annotations

import numpy as np

__all__ = ["kl_range", "mse_range"]


def _subsample(x: np.ndarray, max_samples: int) -> np.ndarray:
    flat = np.asarray(x, dtype=np.float64).ravel()
    if flat.size > max_samples:
        step = -(-flat.size // max_samples)
        flat = flat[::step]
    return flat


def _smooth(p: np.ndarray, eps: float = 1e-4) -> np.ndarray | None:
    zero = p == 0
    n_zero = int(zero.sum())
    n_nonzero = p.size - n_zero
    if n_nonzero == 0:
        return None
    out = p.astype(np.float64).copy()
    out[zero] = eps
    out[~zero] -= eps * n_zero / n_nonzero
    if np.any(out <= 0):
        return None
    return out


def kl_range(x: np.ndarray, *, sign: bool = True, num_bins: int = 2049,
             num_quantized_bins: int = 255, max_candidates: int = 256) -> float:
    """The threshold minimizing ``KL(P || Q)`` between the values and their quantization.

    Args:
        x: the values (any shape).
        sign: whether the quantizer is signed (unsigned uses twice the quantized bins over
            the non-negative half).
        num_bins: histogram bins (odd: one bin is centred on zero).
        num_quantized_bins: quantization levels of the signed range (255 for 8 bits).
        max_candidates: the most thresholds tried, evenly spaced over the candidate windows
            (every window when there are fewer; 256 of 2,049 bins' 897 windows resolve the
            threshold to 0.4 % of the largest magnitude).
    Returns:
        The range (a positive float).
    """
    values = np.asarray(x, dtype=np.float64).ravel()
    if values.size == 0:
        return 1.0
    top = float(np.max(np.abs(values)))
    if not np.isfinite(top) or top == 0:
        return 1.0
    if not sign:
        num_quantized_bins = 2 * num_quantized_bins + 1
    num_bins = max(num_bins | 1, num_quantized_bins + 2)
    hist, edges = np.histogram(values, bins=num_bins, range=(-top, top))
    hist = hist.astype(np.float64)
    zero = num_bins // 2
    half_q = num_quantized_bins // 2
    cumulative = np.concatenate(([0.0], np.cumsum(hist)))
    best, best_threshold = np.inf, top
    stride = max(1, -(-(zero + 1 - half_q) // max_candidates))
    for i in range(zero, half_q - 1, -stride):
        start, stop = zero - i, zero + i + 1
        window = hist[start:stop]
        p = window.copy()
        p[0] += cumulative[start]
        p[-1] += cumulative[-1] - cumulative[stop]
        nonzero = p != 0
        merged = window.size // num_quantized_bins
        starts = np.arange(num_quantized_bins) * merged
        q_sums = np.add.reduceat(window, starts)
        counts = np.add.reduceat(nonzero.astype(np.float64), starts)
        owner = np.minimum(np.arange(window.size) // merged, num_quantized_bins - 1)
        spread = np.divide(q_sums, counts, out=np.zeros_like(q_sums), where=counts > 0)
        q = np.where(nonzero, spread[owner], 0.0)
        ps, qs = _smooth(p), _smooth(q)
        if ps is None or qs is None:
            continue
        ps /= ps.sum()
        qs /= qs.sum()
        divergence = float(np.sum(ps * np.log(ps / qs)))
        if divergence < best:
            best, best_threshold = divergence, float(edges[stop])
    return best_threshold


def mse_range(x: np.ndarray, *, bits: int, sign: bool = True, candidates: int = 100,
              max_samples: int = 200_000) -> float:
    """The range whose simQ (``bits`` bits, round to nearest) has the least squared error.

    Args:
        x: the values (any shape).
        bits: the quantizer's bits.
        sign: whether it is signed.
        candidates: the number of ranges tried, ``max|x| * k / candidates`` for
            ``k = 1..candidates``.
        max_samples: the most values used (an even-strided subsample).
    Returns:
        The range (a positive float).
    """
    values = _subsample(x, max_samples)
    if values.size == 0:
        return 1.0
    top = float(np.max(np.abs(values)))
    if not np.isfinite(top) or top == 0:
        return 1.0
    valid = bits - int(sign)
    hi = 2.0 ** valid - 1
    lo = -hi if sign else 0.0
    best, best_range = np.inf, top
    for k in range(candidates, 0, -1):
        value_range = top * k / candidates
        step = value_range / 2.0 ** valid
        scaled = values / step
        q = np.clip(np.sign(scaled) * np.floor(np.abs(scaled) + 0.5), lo, hi) * step
        err = float(np.mean((q - values) ** 2))
        if err < best:
            best, best_range = err, value_range
    return best_range
