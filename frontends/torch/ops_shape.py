"""ATen converters for shapes and data movement: ``view``, ``permute``, ``slice``, ``select``,
``split``, ``cat``, ``expand``, ``flip``, creation (``full``, ``zeros``, ``ones``,
``arange``) and dtype conversion. Symbolic sizes (dynamic dims) are accepted where Relay can
express them with static attributes (:mod:`frontends.torch.symbolic`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, call_tuple, const, project
from frontends.torch.registry import SymValue, aten, dtype_name, ints, like
from frontends.torch.symbolic import as_sym, expand_to, filled, reshape_codes, slice_bound
from semantics.shapes import Dim, as_int, is_concrete


@aten("aten.view.default", "aten.reshape.default", "aten._unsafe_view.default")
def _view(x: Value, shape: Any) -> Value:
    return call("reshape", [x], newshape=reshape_codes(x, shape))


@aten("aten.permute.default")
def _permute(x: Value, dims: Any) -> Value:
    return call("transpose", [x], axes=tuple(d % x.ndim for d in ints(dims)))


@aten("aten.t.default")
def _t(x: Value) -> Value:
    return call("transpose", [x], axes=(1, 0)) if x.ndim == 2 else x


@aten("aten.transpose.int")
def _transpose(x: Value, a: int, b: int) -> Value:
    perm = list(range(x.ndim))
    perm[a % x.ndim], perm[b % x.ndim] = perm[b % x.ndim], perm[a % x.ndim]
    return call("transpose", [x], axes=tuple(perm))


@aten("aten.flatten.using_ints")
def _flatten(x: Value, start: int = 0, end: int = -1) -> Value:
    if x.ndim == 0:
        return call("reshape", [x], newshape=(1,))
    s, e = start % x.ndim, end % x.ndim
    middle = x.shape[s:e + 1]
    merged = int(np.prod([int(d) for d in middle])) if all(is_concrete(d) for d in middle) \
        else -1
    codes = [0] * s + [merged] + [int(d) if is_concrete(d) else -1 for d in x.shape[e + 1:]]
    if codes.count(-1) > 1:
        raise Unsupported(f"flatten of a {x.shape} tensor: more than one symbolic dim to infer")
    return call("reshape", [x], newshape=tuple(codes))


@aten("aten.squeeze.dims", "aten.squeeze.dim", "aten.squeeze.default")
def _squeeze(x: Value, dims: Any = None) -> Value:
    axes = [d % x.ndim for d in ints(dims)] if dims is not None else \
        [i for i, d in enumerate(x.shape) if d == 1]
    axes = [a for a in axes if x.shape[a] == 1]
    return call("squeeze", [x], axis=tuple(axes)) if axes else x


@aten("aten.unsqueeze.default")
def _unsqueeze(x: Value, dim: int) -> Value:
    return call("expand_dims", [x], axis=dim % (x.ndim + 1))


@aten("aten.slice.Tensor")
def _slice(x: Value, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Value:
    """``x[start:end:step]`` along ``dim``: ``strided_slice`` on that axis only. On a
    symbolic axis a slice that is not the whole axis has the type ``?``."""
    d = dim % x.ndim
    n: Dim = x.shape[d]
    s = slice_bound(start, n, 0) or 0
    e = slice_bound(end, n, None)
    if s == 0 and e is None and int(step) == 1:
        return x
    if e is None:
        e = as_int(n) if is_concrete(n) else _TO_THE_END
    elif is_concrete(n) and s >= 0:
        e = max(e, s)
    return call("strided_slice", [x], begin=(s,), end=(e,), strides=(int(step),), axes=(d,))


#: ``strided_slice``'s end for "to the end of a symbolic axis" (clamped at run time).
_TO_THE_END = 2**31 - 1


@aten("aten.select.int")
def _select(x: Value, dim: int, index: Any) -> Value:
    d = dim % x.ndim
    i = as_sym(index)
    if not i.is_static:
        return call("take", [x, i.runtime], axis=d, mode="wrap")
    k = int(i)
    if k < 0:
        if not is_concrete(x.shape[d]):
            raise Unsupported(f"select of index {k} on the symbolic axis {x.shape[d]}")
        k += int(x.shape[d])
    return call("take", [x, const(np.int64(k))], axis=d, mode="fast")


@aten("aten.split_with_sizes.default", "aten.split.Tensor")
def _split(x: Value, sizes: Any, dim: int = 0) -> list[Value]:
    d = dim % x.ndim
    if isinstance(sizes, (int, SymValue)):
        if not is_concrete(x.shape[d]):
            raise Unsupported(f"split of the symbolic axis {x.shape[d]} into chunks")
        n, step = int(x.shape[d]), int(sizes)
        sizes = [min(step, n - i) for i in range(0, n, step)]
    sizes = [int(s) for s in sizes]
    idx = tuple(int(i) for i in np.cumsum(sizes)[:-1])
    t = call("split", [x], indices_or_sections=idx, axis=d)
    return [project(t, i) for i in range(len(sizes))]


@aten("aten.cat.default")
def _cat(xs: list[Value], dim: int = 0) -> Value:
    return call_tuple("concatenate", xs, axis=int(dim) % xs[0].ndim)


@aten("aten.stack.default")
def _stack(xs: list[Value], dim: int = 0) -> Value:
    return call_tuple("stack", xs, axis=int(dim) % (xs[0].ndim + 1))


@aten("aten.expand.default")
def _expand(x: Value, shape: Any, implicit: bool = False) -> Value:
    return expand_to(x, shape)


@aten("aten.flip.default")
def _flip(x: Value, dims: Any) -> Value:
    for d in ints(dims):
        x = call("reverse", [x], axis=d % x.ndim)
    return x


@aten("aten.clone.default", "aten.alias.default", "aten.contiguous.default",
      "aten.detach.default", "aten.dropout.default", "aten.lift_fresh_copy.default")
def _identity(x: Value, *rest: Any, **kw: Any) -> Value:
    return x


@aten("aten._to_copy.default")
def _to_copy(x: Value, dtype: Any = None, **kw: Any) -> Value:
    return call("cast", [x], dtype=dtype_name(dtype)) if dtype is not None else x


@aten("aten.full.default")
def _full(size: Any, value: Any, dtype: Any = None, **kw: Any) -> Value:
    dt = dtype_name(dtype) if dtype is not None else "float32"
    sizes = [as_sym(s) for s in (size if isinstance(size, (list, tuple)) else [size])]
    if isinstance(value, SymValue):
        if not value.is_static:
            return call("add", [filled(sizes, 0, dt), call("cast", [value.runtime], dtype=dt)])
        value = int(value)
    return filled(sizes, value, dt)


@aten("aten.zeros.default")
def _zeros(size: Any, dtype: Any = None, **kw: Any) -> Value:
    return _full(size, 0, dtype)


@aten("aten.ones.default")
def _ones(size: Any, dtype: Any = None, **kw: Any) -> Value:
    return _full(size, 1, dtype)


@aten("aten.arange.start_step", "aten.arange.default", "aten.arange.start")
def _arange(*args: Any, dtype: Any = None, **kw: Any) -> Value:
    bounds = [as_sym(a) if not isinstance(a, float) else a for a in args]
    if not all(isinstance(b, float) or b.is_static for b in bounds):
        raise Unsupported("arange with a symbolic bound (a data-dependent length)")
    nums = [b if isinstance(b, float) else int(b) for b in bounds]
    dt = dtype_name(dtype) if dtype is not None else \
        ("float32" if any(isinstance(b, float) for b in nums) else "int64")
    return const(np.arange(*nums).astype(dt))


@aten("aten.full_like.default")
def _full_like(x: Value, value: Any, dtype: Any = None, **kw: Any) -> Value:
    """A tensor of ``x``'s shape (symbolic or not) filled with ``value``."""
    dt = dtype_name(dtype) if dtype is not None else x.dtype
    base = x if dt == x.dtype else call("cast", [x], dtype=dt)
    fill = value.runtime if isinstance(value, SymValue) else value
    return call("full_like", [base, like(const(np.zeros((), dt)), fill)])


@aten("aten.zeros_like.default")
def _zeros_like(x: Value, dtype: Any = None, **kw: Any) -> Value:
    return _full_like(x, 0, dtype)


@aten("aten.ones_like.default")
def _ones_like(x: Value, dtype: Any = None, **kw: Any) -> Value:
    return _full_like(x, 1, dtype)
