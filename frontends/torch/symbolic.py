"""Dynamic shapes from ``torch.export``: symbolic sizes and their arithmetic.

A dimension exported as ``torch.export.Dim`` is a SymPy symbol in PyTorch (``s0``); the
importer makes it the shape variable of that name, so the parameter of ``@main`` is typed
``Tensor[(s0, 8, 32), float32]`` and every type computed from it is symbolic too.

The graph reads such a size with ``aten.sym_size.int(x, d)`` and computes with it through
Python operators (``operator.mul(s0, 8)``). Each becomes a :class:`~frontends.torch.registry
.SymValue`: its dim (``8*s0``, for types) and a run-time int64 scalar (``shape_of(x)[0] * 8``,
emitted only if the integer flows into data).

Where Relay needs a static attribute — the ``newshape`` of ``reshape``, the shape of a
``broadcast_to`` — a symbolic size is spelt with the operators' own codes instead:
:func:`reshape_codes` writes ``0`` for a dim equal to the input's at that position and ``-1``
for the one left to infer (``view(x, [s0*8, 32])`` of a ``(s0, 8, 32)`` tensor is ``reshape
(x, newshape=[-1, 32])``), and :func:`expand_to` broadcasts by multiplying with ones where
the kept dims are symbolic. A shape that needs two inferred dims is reported as unsupported.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy

from frontends.onnx.builder import Unsupported, Value, call, const
from frontends.torch.registry import ATEN, SymValue, aten, size_of, sym_const
from semantics.shapes import Dim, canon_dim, is_concrete


def same_dim(a: Dim, b: Dim) -> bool:
    """Whether two dims are provably equal."""
    a, b = canon_dim(a), canon_dim(b)
    if is_concrete(a) and is_concrete(b):
        return a == b
    if is_concrete(a) != is_concrete(b):
        return False
    if a == b:
        return True
    return bool(sympy.expand(sympy.sympify(a) - sympy.sympify(b)) == 0)


def as_sym(v: Any) -> SymValue:
    if isinstance(v, SymValue):
        return v
    if isinstance(v, (bool, np.bool_)):
        return sym_const(int(v))
    if isinstance(v, (int, np.integer)):
        return sym_const(int(v))
    raise Unsupported(f"expected an integer, got {v!r}")


@aten("aten.sym_size.int")
def _sym_size(x: Value, dim: int) -> SymValue:
    return size_of(x, int(dim) % x.ndim)


@aten("aten.sym_numel.default")
def _sym_numel(x: Value) -> SymValue:
    out = sym_const(1)
    for axis in range(x.ndim):
        out = _arith(operator.mul, "multiply")(out, size_of(x, axis))
    return out


def _arith(py: Callable[[Any, Any], Any], relay: str) -> Callable[[Any, Any], SymValue]:
    """A converter for the Python operator ``py`` on symbolic integers (``relay`` at run
    time; the dim computed with SymPy)."""
    def convert(a: Any, b: Any) -> SymValue:
        x, y = as_sym(a), as_sym(b)
        if x.is_static and y.is_static:
            return sym_const(py(int(x), int(y)))
        if py is operator.floordiv:
            dim: Any = sympy.floor(sympy.sympify(x.dim) / sympy.sympify(y.dim))
        elif py is operator.mod:
            dim = sympy.Mod(sympy.sympify(x.dim), sympy.sympify(y.dim))
        else:
            dim = py(sympy.sympify(x.dim), sympy.sympify(y.dim))
        return SymValue(canon_dim(dim),
                        call(relay, [x.runtime, y.runtime]))
    return convert


for _py, _relay in ((operator.add, "add"), (operator.sub, "subtract"),
                    (operator.mul, "multiply"), (operator.floordiv, "floor_divide"),
                    (operator.mod, "floor_mod")):
    ATEN[f"operator.{_py.__name__}"] = _arith(_py, _relay)
ATEN["torch.sym_max"] = _arith(lambda a, b: sympy.Max(a, b) if not isinstance(a, int)
                               or not isinstance(b, int) else max(a, b), "maximum")
ATEN["torch.sym_min"] = _arith(lambda a, b: sympy.Min(a, b) if not isinstance(a, int)
                               or not isinstance(b, int) else min(a, b), "minimum")


@aten("operator.neg")
def _neg(a: Any) -> SymValue:
    x = as_sym(a)
    if x.is_static:
        return sym_const(-int(x))
    return SymValue(canon_dim(-sympy.sympify(x.dim)), call("negative", [x.runtime]))


@aten("math.ceil", "math.floor", "math.trunc")
def _round_int(a: Any) -> SymValue:
    return as_sym(a)


@aten("torch.sym_float", "torch.sym_int")
def _sym_cast(a: Any) -> Any:
    return a


def _compare(py: Callable[[Any, Any], bool], relay: str) -> Callable[[Any, Any], Any]:
    """A comparison of symbolic integers: a Python bool when the dims decide it, else a
    run-time bool scalar (a ``SymBool`` that guards nothing the importer must follow)."""
    def convert(a: Any, b: Any) -> Any:
        x, y = as_sym(a), as_sym(b)
        if x.is_static and y.is_static:
            return py(int(x), int(y))
        return call(relay, [x.runtime, y.runtime])
    return convert


for _name, _py, _relay in (("eq", operator.eq, "equal"), ("ne", operator.ne, "not_equal"),
                           ("lt", operator.lt, "less"), ("le", operator.le, "less_equal"),
                           ("gt", operator.gt, "greater"), ("ge", operator.ge, "greater_equal")):
    ATEN[f"operator.{_name}"] = _compare(_py, _relay)


@aten("operator.truediv")
def _truediv(a: Any, b: Any) -> Any:
    x, y = as_sym(a), as_sym(b)
    if x.is_static and y.is_static:
        return int(x) / int(y)
    raise Unsupported("true division of symbolic sizes (a float size) is not supported")


# --- symbolic sizes in static attributes ---------------------------------------------------

def reshape_codes(x: Value, shape: Any) -> tuple[int, ...]:
    """``view(x, shape)``'s target as a static ``newshape``: symbolic entries equal to
    ``x``'s dim at the same position become ``0`` (copy), one more (or an explicit ``-1``)
    becomes ``-1`` (infer)."""
    target = [as_sym(s) for s in shape]
    codes: list[int] = []
    inferred = 0
    for i, s in enumerate(target):
        if s.is_static:
            codes.append(int(s))
            inferred += int(s) == -1
        elif i < x.ndim and same_dim(s.dim, x.shape[i]):
            codes.append(0)
        else:
            codes.append(-1)
            inferred += 1
    if inferred > 1:
        dims = [str(s.dim) for s in target]
        raise Unsupported(f"view of a {tuple(x.shape)} tensor to [{', '.join(dims)}]: more "
                          "than one dimension would be inferred (Relay's reshape takes a "
                          "static newshape)")
    return tuple(codes)


def expand_to(x: Value, shape: Any) -> Value:
    """``x.expand(shape)``: ``broadcast_to`` for a static target; a symbolic size ``x``
    already has is kept; a size-1 (or new) dim goes to a symbolic size by adding a zero
    tensor of that size (:func:`filled`), to a static one by multiplying with ones."""
    target = [as_sym(s) for s in shape]
    lead = len(target) - x.ndim
    dims: list[Any] = []
    for i, s in enumerate(target):
        own = x.shape[i - lead] if i >= lead else None
        if s.is_static and int(s) == -1:
            dims.append(own)
        elif own is not None and same_dim(s.dim, own):
            dims.append(own)
        elif s.is_static and (own is None or own == 1):
            dims.append(int(s))
        elif (own is None or own == 1) and s.origin is not None:
            dims.append(s)          # broadcast to a symbolic size: see below
        else:
            raise Unsupported(f"expand of a {tuple(x.shape)} tensor to the symbolic size "
                              f"{s.dim} at dim {i}")
    if any(isinstance(d, SymValue) for d in dims):
        sizes = [d if isinstance(d, SymValue) else sym_const(1) for d in dims]
        zero = filled(sizes, False if x.dtype == "bool" else 0, x.dtype)
        x = call("logical_or" if x.dtype == "bool" else "add", [x, zero])
        dims = [d.dim if isinstance(d, SymValue) else d for d in dims]
        lead = 0                    # the addition broadcast x to the full rank
    if tuple(dims) == tuple(x.shape):
        return x
    if all(is_concrete(d) for d in dims):
        return call("broadcast_to", [x], shape=tuple(int(d) for d in dims))
    ones_shape = tuple(int(d) if is_concrete(d) and (i < lead or x.shape[i - lead] == 1)
                       else 1 for i, d in enumerate(dims))
    if x.dtype == "bool":
        return call("logical_or", [x, const(np.zeros(ones_shape, bool))])
    return call("multiply", [x, const(np.ones(ones_shape, x.dtype))])


def filled(sizes: list[SymValue], value: Any, dtype: str) -> Value:
    """A tensor of shape ``sizes`` filled with ``value``: a constant when every size is
    static; else the constant with ``1`` in the symbolic positions broadcast against a
    zero vector of each symbolic length, made from a tensor that has that dimension
    (:attr:`SymValue.origin`, e.g. ``zeros(x.shape[0], 4)`` from ``x``)."""
    static = tuple(int(s) if s.is_static else 1 for s in sizes)
    out = const(np.full(static, value, dtype=dtype))
    for k, s in enumerate(sizes):
        if s.is_static:
            continue
        if s.origin is None:
            raise Unsupported(f"a tensor of the symbolic size {s.dim}, which is not the size "
                              "of a tensor's dimension")
        vec = _zeros_along(s.origin[0], s.origin[1], dtype)
        shape = tuple(-1 if i == k else 1 for i in range(len(sizes)))
        vec = call("reshape", [vec], newshape=shape)
        out = call("logical_or" if dtype == "bool" else "add", [out, vec])
    return out


def _zeros_along(x: Value, axis: int, dtype: str) -> Value:
    """A zero vector as long as ``x``'s dimension ``axis`` (a sum over the other axes of
    ``zeros_like(x)``: right for empty dims too)."""
    acc = "int32" if dtype == "bool" else dtype
    z = call("zeros_like", [x])
    if z.dtype != acc:
        z = call("cast", [z], dtype=acc)
    others = tuple(a for a in range(x.ndim) if a != axis)
    if others:
        z = call("sum", [z], axis=others)
    return call("cast", [z], dtype="bool") if dtype == "bool" else z


def slice_bound(v: Any, n: Dim, default: int | None) -> int | None:
    """A ``slice`` start or end on an axis of size ``n``: ``None`` for "to the end" (absent,
    ``sys.maxsize``, or the axis size itself, symbolic or not); static ints otherwise,
    clamped when ``n`` is static (a negative bound on a symbolic axis stays negative:
    ``strided_slice`` counts it from the end at run time)."""
    if v is None:
        return default
    s = as_sym(v)
    if not s.is_static:
        if same_dim(s.dim, n):
            return None
        raise Unsupported(f"slice bound {s.dim} on an axis of size {n} (a run-time bound)")
    b = int(s)
    if b >= sys.maxsize or (is_concrete(n) and b >= int(n)):  # type: ignore[arg-type]
        return None
    if b < 0 and is_concrete(n):
        return max(int(n) + b, 0)  # type: ignore[arg-type]
    return b
