"""Shape values: integer tensors computed from tensor shapes, known as dims at import time.

ONNX computes shapes at run time (``Shape`` → ``Gather`` → ``Unsqueeze`` → ``Concat`` →
``Reshape``); Relay takes a reshape's target as an attribute. When a tensor's shape is
symbolic (a ``dim_param`` such as ``batch``) or unknown (``?``), ``Shape`` of it is a run-time
``shape_of`` call whose elements are nonetheless known *as dims*: ``[batch, 4, 4, 4]``. This
module carries that knowledge (``Value.sym``, an object array of dims) through the integer
operators shape arithmetic uses, so that consumers (``Reshape``, ``Flatten``, ``Expand``,
``ConstantOfShape``, ``Slice``) can emit static attributes — reshape codes ``0`` (copy) and
``-1`` (infer) for the symbolic entries — or a tensor of the wanted shape built from the
tensors the symbolic dims come from (:func:`like_tensor`).

An element that ends up a plain int makes the whole value a constant again (``Shape(x)[1]``
of a ``(batch, 4)`` tensor is ``4``), so ordinary folding continues from there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sympy

from frontends.onnx.builder import Unsupported, Value, call, const
from semantics.shapes import ANY, Dim, canon_dim
from semantics.types import TensorType


class _Unknown(Exception):
    """An element the rules cannot decide: the result is not a shape value."""


def sym_array(v: Value | None) -> np.ndarray | None:
    """``v``'s elements as an object array of dims (ints for a known value), or None."""
    if v is None:
        return None
    if v.const is not None and v.const.dtype.kind in "iub":
        return np.asarray(v.const).astype(object)
    return v.sym


def dims_equal(a: Dim, b: Dim) -> bool:
    """Whether two dims are provably equal (never for ``?``)."""
    if a is ANY or b is ANY:
        return False
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return bool(sympy.simplify(sympy.sympify(a) - sympy.sympify(b)) == 0)


def _arith(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def elt(a: Any, b: Any) -> Any:
        if isinstance(a, (bool, np.bool_)) or isinstance(b, (bool, np.bool_)):
            raise _Unknown
        if a is ANY or b is ANY:
            return ANY
        return canon_dim(fn(a, b))
    return elt


def _div(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise _Unknown
        q = abs(a) // abs(b)          # ONNX integer division truncates toward zero
        return q if (a >= 0) == (b >= 0) else -q
    if not isinstance(b, int) or b <= 0:
        raise _Unknown
    return sympy.floor(sympy.sympify(a) / b)   # dims are nonnegative: floor is truncation


def _equal(a: Any, b: Any) -> bool:
    if a is ANY or b is ANY:
        raise _Unknown
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    diff = sympy.simplify(sympy.sympify(a) - sympy.sympify(b))
    if diff == 0:
        return True
    if diff.is_nonzero:
        return False
    raise _Unknown


def _elementwise(fn: Callable[[Any, Any], Any]) -> Callable[..., np.ndarray | None]:
    ufunc = np.frompyfunc(fn, 2, 1)

    def rule(args: list[np.ndarray | None], attrs: dict[str, Any], ins: list[Value | None],
             out: Value) -> np.ndarray | None:
        if len(args) != 2 or args[0] is None or args[1] is None:
            return None
        return np.asarray(ufunc(args[0], args[1]), dtype=object)
    return rule


def _static(v: Value | None) -> list[int] | None:
    if v is None or v.const is None:
        return None
    return [int(x) for x in np.asarray(v.const).reshape(-1)]


def _reshaped(args: list[np.ndarray | None], attrs: dict[str, Any], ins: list[Value | None],
              out: Value) -> np.ndarray | None:
    """Reshaping operators (``Identity``, ``Cast``, ``Squeeze``, ``Unsqueeze``, ``Reshape``,
    ``Flatten``): the elements in order, in the result's (static) shape."""
    if args[0] is None:
        return None
    return args[0].reshape(out.static_shape())


def _gather(args: list[np.ndarray | None], attrs: dict[str, Any], ins: list[Value | None],
            out: Value) -> np.ndarray | None:
    idx = _static(ins[1] if len(ins) > 1 else None)
    data = args[0]
    if data is None or idx is None:
        return None
    axis = int(attrs.get("axis", 0)) % data.ndim
    index = np.asarray(ins[1].const).astype(np.int64)  # type: ignore[union-attr]
    picked = np.take(data, np.where(index < 0, index + data.shape[axis], index), axis=axis)
    if isinstance(picked, np.ndarray):
        return picked
    out_arr = np.empty((), dtype=object)     # one element (a scalar index): a 0-d array
    out_arr[()] = picked
    return out_arr


def _concat(args: list[np.ndarray | None], attrs: dict[str, Any], ins: list[Value | None],
            out: Value) -> np.ndarray | None:
    if any(a is None for a in args):
        return None
    return np.concatenate([a for a in args if a is not None], axis=int(attrs["axis"]))


def _slice(args: list[np.ndarray | None], attrs: dict[str, Any], ins: list[Value | None],
           out: Value) -> np.ndarray | None:
    data = args[0]
    if data is None:
        return None
    if "starts" in attrs:
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes = list(attrs.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        bounds = [_static(ins[k]) if len(ins) > k else None for k in range(1, 5)]
        if bounds[0] is None or bounds[1] is None:
            return None
        starts, ends = bounds[0], bounds[1]
        axes = bounds[2] if bounds[2] is not None else list(range(len(starts)))
        steps = bounds[3] if bounds[3] is not None else [1] * len(starts)
    index: list[slice] = [slice(None)] * data.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[int(a) % data.ndim] = slice(int(s), int(e), int(st))   # ONNX clamps as Python
    return data[tuple(index)]


def _where(args: list[np.ndarray | None], attrs: dict[str, Any], ins: list[Value | None],
           out: Value) -> np.ndarray | None:
    cond = ins[0].const if ins[0] is not None else None
    if cond is None and args[0] is not None and all(
            isinstance(c, (bool, np.bool_)) for c in args[0].reshape(-1)):
        cond = args[0].astype(bool)
    if cond is None or args[1] is None or args[2] is None:
        return None
    return np.asarray(np.where(np.asarray(cond, dtype=bool), args[1], args[2]), dtype=object)


_RULES: dict[str, Callable[..., np.ndarray | None]] = {
    "Identity": _reshaped, "Cast": _reshaped, "Squeeze": _reshaped, "Unsqueeze": _reshaped,
    "Reshape": _reshaped, "Flatten": _reshaped,
    "Gather": _gather, "Concat": _concat, "Slice": _slice, "Where": _where,
    "Add": _elementwise(_arith(lambda a, b: sympy.sympify(a) + b)),
    "Sub": _elementwise(_arith(lambda a, b: sympy.sympify(a) - b)),
    "Mul": _elementwise(_arith(lambda a, b: sympy.sympify(a) * b)),
    "Div": _elementwise(_arith(_div)),
    "Equal": _elementwise(_equal),
}


def propagate(op_type: str, attrs: dict[str, Any], ins: list[Value | None],
              outs: list[Value]) -> list[Value]:
    """``outs`` of an integer operator with its shape value (``sym``) set when its inputs
    are shape values (or constants); a constant when every element is an int."""
    rule = _RULES.get(op_type)
    if rule is None or len(outs) != 1:
        return outs
    out = outs[0]
    if out.const is not None or not isinstance(out.type, TensorType) \
            or out.type.dtype.startswith("float"):
        return outs
    args = [sym_array(v) for v in ins]
    if all(a is None or v is None or v.sym is None for a, v in zip(args, ins)):
        return outs     # no shape value among the inputs: nothing to track
    try:
        arr = rule(args, attrs, ins, out)
    except (_Unknown, Unsupported, ValueError, IndexError, TypeError):
        return outs
    if arr is None or tuple(arr.shape) != tuple(out.shape):
        return outs
    flat = [canon_dim(d) if not isinstance(d, (bool, np.bool_)) else bool(d)
            for d in arr.reshape(-1)]
    if all(isinstance(d, (int, bool)) for d in flat):
        return [const(np.asarray(flat, dtype=out.type.dtype).reshape(arr.shape))]
    out.sym = np.asarray(flat, dtype=object).reshape(arr.shape)
    return outs


def shape_value(x: Value, dims: Sequence[Dim], expr: Value) -> Value:
    """``expr`` (a run-time ``shape_of`` of ``x`` or a part of it) known as ``dims``."""
    expr.sym = np.asarray(list(dims), dtype=object).reshape(len(dims))
    return expr


def dims_of(v: Value | None, what: str) -> list[Dim]:
    """The flat elements of a static value or a shape value; ``Unsupported`` otherwise."""
    arr = sym_array(v)
    if arr is None:
        raise Unsupported(f"{what} must be known at import time (an initializer or constant) "
                          f"or computed from tensor shapes (Shape, Gather, Concat, ...)")
    return [canon_dim(d) for d in arr.reshape(-1)]


def reshape_to(x: Value, target: Sequence[Dim], allowzero: bool = False) -> Value:
    """``x`` reshaped to ONNX's ``target`` (``0`` copies unless ``allowzero``, ``-1`` infers),
    whose symbolic entries become Relay's codes: ``0`` where the entry equals ``x``'s dim at
    the same position, ``-1`` for one other entry."""
    # ``allowzero`` only matters for a literal 0: without one, code 0 may copy a dim.
    allowzero = allowzero and any(isinstance(d, int) and d == 0 for d in target)
    codes: list[int | None] = []
    for i, d in enumerate(target):
        if isinstance(d, int):
            codes.append(d)
        elif not allowzero and i < x.ndim and dims_equal(x.shape[i], d):
            codes.append(0)
        else:
            codes.append(None)
    missing = [i for i, c in enumerate(codes) if c is None]
    if len(missing) > 1 or (missing and -1 in codes):
        raise Unsupported(f"a Reshape of {x.shape} to {list(target)}: more than one target "
                          f"dimension is neither static nor a dimension of the input")
    if missing:
        codes[missing[0]] = -1
    return call("reshape", [x], newshape=tuple(c for c in codes if c is not None),
                allowzero=allowzero)


def like_tensor(ctx: Any, dims: Sequence[Dim], dtype: str) -> Value:
    """A zero tensor of shape ``dims``: static dims from ``zeros``, each symbolic dim from
    the tensor it was read from (``ctx.dim_source``), broadcast together."""
    like = call("zeros", [], shape=tuple(d if isinstance(d, int) else 1 for d in dims),
                dtype=dtype)
    for j, d in enumerate(dims):
        if isinstance(d, int):
            continue
        source = ctx.dim_source(d)
        if source is None:
            raise Unsupported(f"the dimension {d} is not known to be any tensor's: a shape "
                              f"with it cannot be built")
        vec, axis = source
        for k in range(vec.ndim):
            if k != axis:
                vec = call("take", [vec, const(np.zeros(1, np.int64))], axis=k, mode="clip")
        vec = call("reshape", [vec], newshape=tuple(-1 if k == j else 1 for k in range(len(dims))))
        vec = call("cast", [call("zeros_like", [vec])], dtype=dtype)
        like = call("add", [like, vec])
    return like
