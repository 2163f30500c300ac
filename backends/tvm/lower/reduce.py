"""Lowerings of the ``reduce`` family for ``llvm`` (semantics: :mod:`semantics.ops.reduce`).

Every reduction is one ``te.compute`` whose body is a TIR reduction over ``te.reduce_axis``
variables — one per reduced axis (sorted, as ``reduce_axes`` returns them).  A reduction
over *no* axis (``exclude`` with every axis listed, or a 0-d input) reduces over a dummy
axis of extent 1, which gives the element itself (and index 0 for ``argmax``/``argmin``).

* ``sum``/``prod`` of integers wrap in the dtype; **float16 sums accumulate in float32** and
  round once (the reference's numpy does the same; TVM's own ``topi.sum`` would accumulate
  in float16);
* ``max``/``min`` use a NaN-propagating combiner (identity: the dtype's lowest/highest value,
  ∓inf for floats), so an empty reduction gives the identity as the reference;
* ``mean`` of integers is the wrapped sum divided (truncating) by the count *converted to the
  dtype*, as the reference; a count that wraps to 0 is declined (it must trap), one that
  wraps to -1 is a wrapping negation (``INT_MIN / -1`` is undefined in LLVM); floats divide
  in the accumulation dtype (float32 for float16);
* ``variance`` is ``sum((data - mean)**2) / (count - unbiased)`` with the difference and
  square in the dtype and the sum in the accumulation dtype;
* ``argmax``/``argmin`` reduce (index, value) pairs with a commutative combiner: the better
  value wins, NaN beats any number (numpy's ``argmax`` returns the first NaN), ties go to the
  smaller index (the larger with ``select_last_index``); the index is row-major over the
  reduced axes; an empty reduction gives -1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from backends.tvm.lower.base import OpCall, Unsupported, const, is_float, is_int, lowering
from semantics.ops.relations import reduce_axes


def _axes(call: OpCall) -> tuple[int, ...]:
    attrs = call.attrs
    return reduce_axes(call.op, (), attrs["axis"], len(call.in_shape(0)), attrs["exclude"])


def reduce_compute(call: OpCall, axes: tuple[int, ...],
                   body: Callable[[Callable[..., Any], list[Any]], Any], name: str,
                   identity: Any) -> Any:
    """``te.compute`` over the output shape of a reduction of input 0 over ``axes``.

    ``body(at, rvars)`` builds the reduction expression; ``at()`` gives the input index (a
    list) of the current output index, with the reduction variables in the reduced axes.
    ``identity`` is the result of an empty reduction: TVM's reductions over an extent-0 axis
    do not initialize their result, so that case is a constant fill.
    """
    from tvm import te

    in_shape = call.in_shape(0)
    keepdims = bool(call.attrs.get("keepdims", False))
    out_shape = call.out_shape
    if any(in_shape[a] == 0 for a in axes):
        return te.compute(out_shape, lambda *i: identity, name=name + "_empty")
    if axes:
        rvars = [te.reduce_axis((0, in_shape[a]), name=f"r{a}") for a in axes]
    else:
        rvars = [te.reduce_axis((0, 1), name="r_none")]

    def at(*idx: Any) -> list[Any]:
        index: list[Any] = []
        kept = iter(idx)
        rv = iter(rvars)
        for k in range(len(in_shape)):
            if k in axes:
                index.append(next(rv))
                if keepdims:
                    next(kept)
            else:
                index.append(next(kept))
        return index

    def compute(*idx: Any) -> Any:
        return body(lambda: at(*idx), rvars)

    return te.compute(out_shape, compute, name=name)


def _elem(x: Any, index: list[Any]) -> Any:
    return x[tuple(index)] if index else x[()]


def _accumulator(dtype: str) -> str:
    return "float32" if dtype == "float16" else dtype


@lowering("sum")
def _sum(call: OpCall) -> Any:
    from tvm import te, tirx

    x, dtype = call.inputs[0], call.in_dtype(0)
    acc = _accumulator(dtype)

    def body(at: Any, rvars: list[Any]) -> Any:
        return te.sum(tirx.Cast(acc, _elem(x, at())), axis=rvars)

    total = reduce_compute(call, _axes(call), body, "sum", const(0, acc))
    if acc == dtype:
        return total
    return te.compute(total.shape, lambda *i: tirx.Cast(dtype, total[i]), name="sum_round")


def _reducer(call: OpCall, name: str, combine: Callable[[Any, Any, str], Any],
             identity: Callable[[str], Any]) -> Any:
    """A reduction with a commutative ``combine(a, b, dtype)`` and ``identity(dtype)``."""
    from tvm import te

    x, dtype = call.inputs[0], call.in_dtype(0)
    reducer = te.comm_reducer(lambda a, b: combine(a, b, dtype), lambda t: identity(dtype),
                              name=name)

    def body(at: Any, rvars: list[Any]) -> Any:
        return reducer(_elem(x, at()), axis=rvars)

    return reduce_compute(call, _axes(call), body, name, identity(dtype))


def _lowest(dtype: str) -> Any:
    if is_float(dtype):
        return const(-np.inf, dtype)
    return const(int(np.iinfo(dtype).min), dtype)


def _highest(dtype: str) -> Any:
    if is_float(dtype):
        return const(np.inf, dtype)
    return const(int(np.iinfo(dtype).max), dtype)


@lowering("prod")
def _prod(call: OpCall) -> Any:
    return _reducer(call, "prod", lambda a, b, d: a * b, lambda d: const(1, d))


@lowering("max")
def _max(call: OpCall) -> Any:
    from backends.tvm.lower.base import nan_max

    return _reducer(call, "max", nan_max, _lowest)


@lowering("min")
def _min(call: OpCall) -> Any:
    from backends.tvm.lower.base import nan_min

    return _reducer(call, "min", nan_min, _highest)


@lowering("all")
def _all(call: OpCall) -> Any:
    from tvm import tirx

    return _reducer(call, "all", lambda a, b, d: tirx.And(a, b), lambda d: const(True, "bool"))


@lowering("any")
def _any(call: OpCall) -> Any:
    from tvm import tirx

    return _reducer(call, "any", lambda a, b, d: tirx.Or(a, b), lambda d: const(False, "bool"))


def _count(call: OpCall, axes: tuple[int, ...]) -> int:
    n = 1
    for a in axes:
        n *= call.in_shape(0)[a]
    return n


@lowering("mean")
def _mean(call: OpCall) -> Any:
    from tvm import te, tirx

    x, dtype = call.inputs[0], call.in_dtype(0)
    axes = _axes(call)
    count = _count(call, axes)
    if is_int(dtype):
        wrapped = int(np.asarray(count, dtype=np.int64).astype(dtype))
        if wrapped == 0:
            raise Unsupported(f"integer mean over {count} elements: the count wraps to 0 in "
                              f"{dtype} and the division must trap")

        def body(at: Any, rvars: list[Any]) -> Any:
            return te.sum(_elem(x, at()), axis=rvars)

        total = reduce_compute(call, axes, body, "mean_sum", const(0, dtype))
        if wrapped == -1:
            return te.compute(total.shape, lambda *i: const(0, dtype) - total[i], name="mean")
        divisor = const(wrapped, dtype)
        return te.compute(total.shape, lambda *i: tirx.truncdiv(total[i], divisor), name="mean")
    acc = _accumulator(dtype)

    def fbody(at: Any, rvars: list[Any]) -> Any:
        return te.sum(tirx.Cast(acc, _elem(x, at())), axis=rvars)

    if count == 0:
        return te.compute(call.out_shape, lambda *i: const(np.nan, dtype), name="mean")
    total = reduce_compute(call, axes, fbody, "mean_sum", const(0, acc))
    n = const(count, acc)
    return te.compute(total.shape, lambda *i: tirx.Cast(dtype, tirx.Div(total[i], n)),
                      name="mean")


@lowering("variance")
def _variance(call: OpCall) -> Any:
    from tvm import te, tirx

    from backends.tvm.lower.base import broadcast_index, float_div

    x, mean = call.inputs
    dtype = call.in_dtype(0)
    acc = _accumulator(dtype)
    axes = _axes(call)
    count = _count(call, axes) - (1 if call.attrs["unbiased"] else 0)
    in_shape, mean_shape = call.in_shape(0), call.in_shape(1)

    def body(at: Any, rvars: list[Any]) -> Any:
        index = at()
        d = _elem(x, index) - _elem(mean, broadcast_index(mean_shape, in_shape, index))
        return te.sum(tirx.Cast(acc, d * d), axis=rvars)

    total = reduce_compute(call, axes, body, "variance_sum", const(0, acc))
    n = const(count, acc)
    return te.compute(total.shape, lambda *i: tirx.Cast(dtype, float_div(total[i], n)),
                      name="variance")


def _arg_reduce(call: OpCall, better: Callable[[Any, Any], Any]) -> Any:
    from tvm import te, tirx

    x, dtype = call.inputs[0], call.in_dtype(0)
    axes = _axes(call)
    last = bool(call.attrs["select_last_index"])
    in_shape = call.in_shape(0)
    if _count(call, axes) == 0:
        return te.compute(call.out_shape, lambda *i: const(-1, "int32"), name=call.op)
    floating = is_float(dtype)

    def combine(a: Any, b: Any) -> Any:
        ai, av = a
        bi, bv = b
        if floating:
            a_nan, b_nan = tirx.isnan(av), tirx.isnan(bv)
            strictly = tirx.Or(tirx.And(b_nan, tirx.Not(a_nan)),
                               tirx.And(tirx.Not(tirx.Or(a_nan, b_nan)), better(bv, av)))
            same = tirx.Or(av == bv, tirx.And(a_nan, b_nan))
        else:
            strictly = better(bv, av)
            same = av == bv
        tie = bi > ai if last else bi < ai
        b_wins = tirx.Or(ai < 0, tirx.Or(strictly, tirx.And(same, tie)))
        return tirx.Select(b_wins, bi, ai), tirx.Select(b_wins, bv, av)

    def identity(ti: Any, tv: Any) -> Any:   # index -1 loses to every element (ai < 0)
        return const(-1, "int32"), _lowest(dtype)

    reducer = te.comm_reducer(combine, identity, name=call.op)
    strides = []
    s = 1
    for a in reversed(axes):
        strides.append(s)
        s *= in_shape[a]
    strides.reverse()

    def body(at: Any, rvars: list[Any]) -> Any:
        flat: Any = const(0, "int32")
        for rv, st in zip(rvars, strides if axes else [1]):
            flat = flat + tirx.Cast("int32", rv) * const(st, "int32")
        return reducer((flat, _elem(x, at())), axis=rvars)

    pair = reduce_compute(call, axes, body, call.op + "_pair", None)
    return pair[0]


@lowering("argmax")
def _argmax(call: OpCall) -> Any:
    return _arg_reduce(call, lambda b, a: b > a)


@lowering("argmin")
def _argmin(call: OpCall) -> Any:
    return _arg_reduce(call, lambda b, a: b < a)
