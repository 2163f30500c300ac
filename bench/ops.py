"""Operator reference speed: µs per call before/after the faster references, same process.

The "before" column runs the previous implementations, kept *here only* as the baseline:
the old per-call wrappers (``relations.guarded`` for the tensor family, which memoized the
relation's verdict, and ``transform_relations.checked_reference`` for nn/transform, which
re-derived the type on every call) around the old compute functions (conv2d by ``einsum``
over a 7-D window view, max pooling by ``max`` over a 6-D window view, ``nn.dense``
copying its operands with ``astype``, ``erf`` by ``np.frompyfunc(math.erf)``). The
"after" column calls the registry's ``OpDef.impl`` — what the interpreter calls.  Each
row also checks that both give the same result (bitwise where the dtype rules say so,
within float tolerance for float convolution, whose summation order changed).

Workloads: conv2d at a ResNet-18 shape (1x64x56x56, 64 3x3 filters, padding 1), a
MobileNet depthwise conv (1x32x112x112, groups 32, 3x3, padding 1), ResNet-18's max pool
(1x64x112x112, 3x3 stride 2 padding 1), ``nn.dense`` 1x512 -> 1000, ``add`` on 0-d int32
and on 1x128 float32 (the wrapper's per-call overhead), ``erf`` on 1M float32.

Usage: ``python bench/ops.py [--repeat 5]`` (best of ``--repeat`` timings per row; the
machine's load makes only same-run ratios meaningful).  OpenBLAS runs single-threaded
here (``OPENBLAS_NUM_THREADS=1`` unless set): on a loaded machine its spinning worker
threads make a 1x512 GEMV take ~20 ms instead of ~40 µs.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from numpy.lib.stride_tricks import sliding_window_view  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from semantics import ops  # noqa: E402
from semantics.errors import InternalError, RelayRuntimeError, RelayTypeError  # noqa: E402
from semantics.expr import Attrs  # noqa: E402
from semantics.ops.reference import RELAY_DTYPE_OF, check_result, value_type  # noqa: E402

# --- the baseline: previous wrappers and compute functions ----------------------------------


def old_guarded(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """The previous tensor-family wrapper: memoized verdict, per-argument conversion."""
    relation = ops.get(name).relation
    verdicts: dict[Any, Any] = {}

    def run(*args: Any, **attrs: Any) -> Any:
        arrays = tuple(a if type(a) is np.ndarray and a.dtype in RELAY_DTYPE_OF
                       else np.asarray(a) for a in args)
        key = (tuple((a.dtype, a.shape) for a in arrays), tuple(attrs.items()))
        verdict = verdicts.get(key)
        if verdict is None:
            expected = relation(tuple(value_type(a) for a in arrays), Attrs(attrs))
            verdict = verdicts[key] = (expected, (np.dtype(expected.dtype), expected.shape))
        with np.errstate(all="ignore"):
            result = fn(*arrays, **attrs)
        if type(result) is np.ndarray and result.dtype == verdict[1][0] \
                and result.shape == verdict[1][1]:
            return result
        return check_result(name, result, verdict[0])

    return run


def old_checked(name: str, compute: Callable[..., Any]) -> Callable[..., Any]:
    """The previous nn/transform wrapper: the relation re-derived on every call."""
    relation = ops.get(name).relation

    def run(*args: Any, **attrs: Any) -> Any:
        types = tuple(value_type(a) for a in args)
        try:
            out = relation(types, Attrs(attrs))
        except RelayTypeError as err:
            raise RelayRuntimeError(err.message) from None
        if out is None:
            raise InternalError("undecided")
        with np.errstate(all="ignore"):
            result = compute(out, *[np.asarray(a) for a in args], **attrs)
        if isinstance(result, np.generic):
            result = np.asarray(result)
        return check_result(name, result, out)

    return run


def _pair(v: Any) -> tuple[int, int]:
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def _pad4(v: Any) -> tuple[int, int, int, int]:
    if len(v) == 1:
        return (v[0],) * 4  # type: ignore[return-value]
    if len(v) == 2:
        return (v[0], v[1], v[0], v[1])
    return tuple(v)  # type: ignore[return-value]


def old_conv2d(out: Any, data: np.ndarray, weight: np.ndarray, *, strides: Any, padding: Any,
               dilation: Any, groups: int, out_dtype: str, **_: Any) -> np.ndarray:
    odt = np.dtype(out.dtype)
    acc = np.dtype(np.int64) if odt.kind in "iu" else odt
    x, w = data.astype(acc), weight.astype(acc)
    pt, pl, pb, pr = _pad4(padding)
    sh, sw = _pair(strides)
    dh, dw = _pair(dilation)
    x = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    batch = x.shape[0]
    out_c, cg, kh, kw = w.shape
    oh, ow = out.shape[2], out.shape[3]
    win = sliding_window_view(x, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw][:, :, :oh, :ow]
    win = win.reshape(batch, groups, cg, oh, ow, kh, kw)
    wg = w.reshape(groups, out_c // groups, cg, kh, kw)
    res = np.einsum("ngchwkl,gockl->ngohw", win, wg, optimize=True)
    return res.reshape(batch, out_c, oh, ow).astype(odt)


def old_max_pool2d(out: Any, data: np.ndarray, *, pool_size: Any, strides: Any,
                   dilation: Any, padding: Any, ceil_mode: bool, **_: Any) -> np.ndarray:
    kh, kw = _pair(pool_size)
    sh, sw = _pair(strides)
    dh, dw = _pair(dilation)
    pt, pl, pb, pr = _pad4(padding)
    eh, ew = (sh - 1, sw - 1) if ceil_mode else (0, 0)
    low = np.finfo(data.dtype).min if data.dtype.kind == "f" else np.iinfo(data.dtype).min
    xp = np.pad(data, ((0, 0), (0, 0), (pt, pb + eh), (pl, pr + ew)), constant_values=low)
    oh, ow = out.shape[2], out.shape[3]
    win = sliding_window_view(xp, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
    win = win[:, :, ::sh, ::sw, ::dh, ::dw][:, :, :oh, :ow]
    return np.ascontiguousarray(win.max(axis=(4, 5)))


def old_dense(out: Any, data: np.ndarray, weight: np.ndarray, **_: Any) -> np.ndarray:
    odt = np.dtype(out.dtype)
    acc = np.dtype(np.int64) if odt.kind in "iu" else odt
    return np.matmul(data.astype(acc), weight.astype(acc).T).astype(odt)


_erf_py = np.frompyfunc(math.erf, 1, 1)


def old_erf(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erf_py(x.astype(np.float64))).astype(np.float64).astype(x.dtype)


# --- measurement ----------------------------------------------------------------------------


def best_us(fn: Callable[[], Any], repeat: int) -> float:
    """Best per-call time in µs over ``repeat`` timings (each long enough to be measurable)."""
    t0 = time.perf_counter()
    fn()
    once = time.perf_counter() - t0
    inner = max(1, int(0.05 / max(once, 1e-7)))
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (time.perf_counter() - t0) / inner)
    return best * 1e6


def same(a: np.ndarray, b: np.ndarray, exact: bool) -> str:
    if a.shape != b.shape or a.dtype != b.dtype:
        return "DIFFERENT TYPE"
    if exact:
        return "bitwise" if np.array_equal(a, b, equal_nan=True) else "DIFFERENT"
    err = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)), initial=0.0))
    scale = float(np.max(np.abs(b.astype(np.float64)), initial=1.0))
    return f"max rel err {err / scale:.1e}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)

    def conv_attrs(groups: int) -> dict[str, Any]:
        return dict(ops.get("nn.conv2d").normalize_attrs({"padding": [1], "groups": groups}))

    resnet_x = rng.standard_normal((1, 64, 56, 56)).astype(np.float32)
    resnet_w = rng.standard_normal((64, 64, 3, 3)).astype(np.float32)
    mobile_x = rng.standard_normal((1, 32, 112, 112)).astype(np.float32)
    mobile_w = rng.standard_normal((32, 1, 3, 3)).astype(np.float32)
    pool_x = rng.standard_normal((1, 64, 112, 112)).astype(np.float32)
    pool_attrs = dict(ops.get("nn.max_pool2d").normalize_attrs(
        {"pool_size": [3, 3], "strides": [2, 2], "padding": [1]}))
    dense_x = rng.standard_normal((1, 512)).astype(np.float32)
    dense_w = rng.standard_normal((1000, 512)).astype(np.float32)
    dense_attrs = dict(ops.get("nn.dense").normalize_attrs({}))
    s0 = np.array(3, np.int32)
    v128 = rng.standard_normal((1, 128)).astype(np.float32)
    erf_x = (rng.standard_normal(1_000_000) * 2).astype(np.float32)

    rows: list[tuple[str, tuple[Any, ...], dict[str, Any], Callable[..., Any], str, bool]] = [
        ("nn.conv2d", (resnet_x, resnet_w), conv_attrs(1),
         old_checked("nn.conv2d", old_conv2d), "conv2d 1x64x56x56 3x3", False),
        ("nn.conv2d", (mobile_x, mobile_w), conv_attrs(32),
         old_checked("nn.conv2d", old_conv2d), "depthwise 1x32x112x112", False),
        ("nn.max_pool2d", (pool_x,), pool_attrs,
         old_checked("nn.max_pool2d", old_max_pool2d), "max_pool2d 1x64x112x112", True),
        ("nn.dense", (dense_x, dense_w), dense_attrs,
         old_checked("nn.dense", old_dense), "dense 1x512 -> 1000", True),
        ("add", (s0, s0), {}, old_guarded("add", np.add), "add 0-d int32", True),
        ("add", (v128, v128), {}, old_guarded("add", np.add), "add 1x128 float32", True),
        ("erf", (erf_x,), {}, old_guarded("erf", old_erf), "erf 1M float32", True),
    ]
    print(f"{'workload':<26} {'before µs':>12} {'after µs':>12} {'speedup':>8}  result")
    for name, inputs, attrs, old, label, exact in rows:
        new = ops.get(name).impl

        def call(fn: Callable[..., Any], inputs: tuple[Any, ...] = inputs,
                 attrs: dict[str, Any] = attrs) -> Callable[[], Any]:
            return lambda: fn(*inputs, **attrs)

        before = best_us(call(old), args.repeat)
        after = best_us(call(new), args.repeat)
        check = same(np.asarray(call(new)()), np.asarray(call(old)()), exact)
        print(f"{label:<26} {before:>12.1f} {after:>12.1f} {before / after:>7.1f}x  {check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
