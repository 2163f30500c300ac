"""Value ranges of tensors, and ClampKnownRanges (issue 29, item 6: ``vpmaddubsw``).

**The analysis** (:func:`value_range`): the bounds ``(lo, hi)`` every element of a tensor
expression is known to lie in (NaN aside, for floats), or None when nothing beyond its
dtype is known. It is an interval evaluation over operator calls, one rule per operator in
:data:`RULES`:

* ``nn.relu``, ``clip``, ``cast``, ``maximum``, ``minimum`` and the shape-only operators
  (``reshape``, ``layout_transform``, ...) map bounds to bounds;
* ``add``, ``subtract``, ``multiply``, ``right_shift``, ``left_shift`` take the extremes of
  the four corners (each is monotone in each argument where it is defined: a shift amount
  is clamped into ``[0, bits - 1]``, as the operators define it);
* floats too, as far as the realized first layer needs (``relu``, ``clip``, ``add``,
  ``multiply``, ``divide`` by a constant of one sign, ``round``/``floor``/``ceil``, and the
  ``cast`` to an integer, where NaN and ±inf become 0 and a finite bound must fit the
  dtype); float bounds are widened by a relative ``2**-20``;
* ``nn.max_pool2d`` keeps its data's range when every window holds a real element;
* ``nn.conv2d`` and ``nn.dense`` with a constant weight: per output channel, the positive
  weights times the data's upper bound plus the negative ones times its lower bound (and
  the reverse), the data's bounds widened to hold 0 (a padded tap reads 0);
* a result that the dtype cannot hold (an int32 sum that may wrap) is unknown (None);
* constants are their minimum and maximum; variables what the caller says (``env``).

**The pass** (``clamp_known_ranges``, after FuseOps): a ``vpmaddubsw`` (u8 × s8 byte pairs
into a *saturating* int16) is exact only when every data byte is in ``[0, 127]``. A
quantized network's int8 activations after ``relu`` and the requantizing ``clip`` are, but
the convolution that reads them is another kernel, which sees an ``int8`` parameter. For
each call of a ``Primitive=1`` function, the pass computes the range of every argument (the
range of the producing kernel's body, those ranges flowing from kernel to kernel); where an
``int8`` parameter known to lie in ``[0, 127]`` is the data of an integer ``nn.conv2d``
(``out_dtype`` int32, one group, a constant weight, input channels a multiple of 4), the
kernel's body reads it through ``clip(p, a_min=0, a_max=127)``. (Depthwise convolutions
are left alone: on words of four kernel columns they measured slower than on int16 pairs.)

The clip changes no value (that is what the range says), and it makes the kernel correct on
its own, whatever calls it: the lowering sees the bound inside the kernel
(``OpCall.range_of``) and ``backends.tvm.lower.int_dot.dot_path`` takes ``vpmaddubsw`` on
an AVX2 target without VNNI. ``backends.tvm.build.prepare`` runs the pass for such targets
only (elsewhere the clip would cost a little and buy nothing).

Invariants: pure (a new module; the input untouched); one walk per function (explicit
stacks, no Python recursion); values are preserved exactly.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from passes.fuse_ops import is_primitive
from semantics import dtypes
from semantics.expr import Attrs, Call, Constant, Expr, Function, Let, Op, Var
from semantics.module import IRModule
from semantics.ops.tensor import int_clip_bound
from semantics.rewrite import ScopedMutator, map_functions
from semantics.types import TensorType
from semantics.visitor import post_order

__all__ = ["RULES", "Range", "clamp_known_ranges", "value_range"]

Range = tuple[float, float]
"""Inclusive bounds ``(lo, hi)`` of every element (Python ints for an integer tensor)."""

BYTE = (0, 127)
"""The data range ``vpmaddubsw`` is exact on."""


def _dtype(node: Expr) -> str | None:
    t = getattr(node, "checked_type", None)
    if t is None and type(node) is Var:
        t = node.type_annotation
    return t.dtype if isinstance(t, TensorType) else None


def _is_float(dtype: str | None) -> bool:
    return dtype is not None and dtypes.is_float(dtype)


def _limits(dtype: str | None) -> Any:
    """The whole range of ``dtype``: its integers, or ``(-inf, inf)`` for a float (None for
    any other type)."""
    if _is_float(dtype):
        return -math.inf, math.inf
    if dtype is None or not dtypes.is_int(dtype):
        return None
    info = np.iinfo(np.dtype(dtype))
    return int(info.min), int(info.max)


def _fit(lo: Any, hi: Any, dtype: str | None) -> Any:
    """``(lo, hi)`` if ``dtype`` holds every value between them, else None (an integer may
    wrap). A float range is widened outward by a relative ``2**-20`` (the bounds are computed
    in float64, the values in the dtype's rounding), and an incomputable one (a NaN bound: an
    ``inf - inf``) is unknown."""
    if _is_float(dtype):
        if math.isnan(lo) or math.isnan(hi):
            return None
        top = float(np.finfo(np.dtype(dtype)).max)      # past it, the dtype rounds to inf
        lo, hi = _outward(lo, -1), _outward(hi, 1)
        return (-math.inf if lo < -top else lo), (math.inf if hi > top else hi)
    limits = _limits(dtype)
    if limits is None or lo < limits[0] or hi > limits[1]:
        return None
    return lo, hi


def _outward(x: float, sign: int) -> float:
    if math.isinf(x):
        return x
    return x + sign * (abs(x) * 2.0 ** -20 + 1e-30)


def _corners(f: Callable[[Any, Any], Any], a: Range, b: Range) -> Range:
    values = [f(x, y) for x in a for y in b]
    return min(values), max(values)


def _shift_amount(s: int, dtype: str) -> int:
    return max(0, min(s, np.dtype(dtype).itemsize * 8 - 1))


Rule = Callable[[Call, Sequence[Range], str], "Range | None"]
"""``rule(call, bounds, dtype)``: the result's range from the arguments' (each known or the
whole range of its dtype) and the result's dtype."""


def _relu(call: Call, b: Sequence[Range], dtype: str) -> Range | None:
    return max(b[0][0], 0), max(b[0][1], 0)


def _clip(call: Call, b: Sequence[Range], dtype: str) -> Range | None:
    lo: float
    hi: float
    if _is_float(dtype):
        lo, hi = (float(np.float32(call.attrs[k])) for k in ("a_min", "a_max"))
        if math.isnan(lo) or math.isnan(hi):
            return None
    else:
        a_min, a_max = float(call.attrs["a_min"]), float(call.attrs["a_max"])
        if math.isnan(a_min) or math.isnan(a_max):
            return None
        lo, hi = int_clip_bound(a_min, dtype), int_clip_bound(a_max, dtype)

    def f(x: float) -> float:
        return max(min(x, hi), lo)
    return f(b[0][0]), f(b[0][1])


def _same(call: Call, b: Sequence[Range], dtype: str) -> Range | None:
    return b[0]


def _cast(call: Call, b: Sequence[Range], dtype: str) -> Range | None:
    source = _dtype(call.args[0])
    if _is_float(source) and not _is_float(dtype):
        # truncation toward zero; NaN and ±inf become 0; a finite value out of the dtype
        # wraps (``semantics.ops.reference.cast_array``)
        lo, hi = b[0]
        if math.isinf(lo) or math.isinf(hi):
            return None
        return _fit(min(math.trunc(lo), 0), max(math.trunc(hi), 0), dtype)
    if _is_float(dtype) != _is_float(source):
        return None
    return _fit(b[0][0], b[0][1], dtype)


def _monotone(f: Callable[[float], float]) -> Rule:
    def rule(call: Call, b: Sequence[Range], dtype: str) -> Range | None:
        return _fit(f(b[0][0]), f(b[0][1]), dtype) if _is_float(dtype) else b[0]
    return rule


def _divide(call: Call, b: Sequence[Range], dtype: str) -> Range | None:
    """A float divided by a divisor of one sign (an integer division is unknown)."""
    if not _is_float(dtype) or b[1][0] <= 0 <= b[1][1]:
        return None
    return _fit(*_corners(lambda x, y: x / y, b[0], b[1]), dtype)


def _max_pool2d(call: Call, b: Sequence[Range], dtype: str) -> Range | None:
    """Every window holds at least one element of the data (floor mode, no dilation, each
    padding narrower than the window): the maximum lies in the data's range."""
    from semantics.ops import nn_relations as N

    attrs: Any = call.attrs
    kh, kw = N.pair(attrs.get("pool_size"))
    pads = N.pad4(attrs.get("padding", (0, 0)))
    if attrs.get("ceil_mode") or tuple(N.pair(attrs.get("dilation", (1, 1)))) != (1, 1):
        return None
    if max(pads[0], pads[2]) >= kh or max(pads[1], pads[3]) >= kw:
        return None
    return b[0]


def _binary(f: Callable[[Any, Any], Any]) -> Rule:
    def rule(call: Call, b: Sequence[Range], dtype: str) -> Range | None:
        try:
            return _fit(*_corners(f, b[0], b[1]), dtype)
        except (ValueError, OverflowError):      # inf arithmetic with no value
            return None
    return rule


def _right_shift(call: Call, b: Sequence[Range], dtype: str) -> Range | None:
    if _is_float(dtype):
        return None
    return _fit(*_corners(lambda x, s: x >> _shift_amount(s, dtype), b[0], b[1]), dtype)


def _left_shift(call: Call, b: Sequence[Range], dtype: str) -> Range | None:
    """Monotone in each argument while the amount is below the bit width; an amount at or
    past it gives 0."""
    if _is_float(dtype):
        return None
    bits = np.dtype(dtype).itemsize * 8
    low = _corners(lambda x, s: x << _shift_amount(s, dtype), b[0],
                   (b[1][0], min(b[1][1], bits - 1)))
    if b[1][1] >= bits:
        low = min(low[0], 0), max(low[1], 0)
    return _fit(*low, dtype)


def _product_bound(data: Range, sums: tuple[np.ndarray, np.ndarray], dtype: str
                   ) -> Range | None:
    """Bounds of ``Σ w · x`` over each output channel (``sums``: its positive and negative
    weights' sums), ``x`` in ``data`` widened to hold 0 (padding)."""
    lo, hi = min(data[0], 0), max(data[1], 0)
    pos, neg = sums
    top = pos * hi + neg * lo
    bottom = pos * lo + neg * hi
    return _fit(int(bottom.min()), int(top.max()), dtype)


def _channel_sums(w: np.ndarray, out_axes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    moved = np.moveaxis(w.astype(np.int64), list(out_axes), list(range(len(out_axes))))
    rows = moved.reshape(int(np.prod(moved.shape[:len(out_axes)])), -1)
    return np.clip(rows, 0, None).sum(axis=1), np.clip(rows, None, 0).sum(axis=1)


def _conv2d(call: Call, b: Sequence[Range], dtype: str) -> Range | None:
    from semantics.ops.layouts import parse_layout

    weight = call.args[1]
    if _is_float(dtype) or type(weight) is not Constant or weight.data.size == 0:
        return None
    axes = parse_layout("nn.conv2d", str(call.attrs.get("kernel_layout") or "OIHW"))
    out_axes = [i for i, (a, _) in enumerate(axes) if a in ("O", "o")]
    return _product_bound(b[0], _channel_sums(np.asarray(weight.data), out_axes), dtype)


def _dense(call: Call, b: Sequence[Range], dtype: str) -> Range | None:
    weight = call.args[1]
    if _is_float(dtype) or type(weight) is not Constant:
        return None
    if weight.data.ndim != 2 or weight.data.size == 0:
        return None
    return _product_bound(b[0], _channel_sums(np.asarray(weight.data), [0]), dtype)


RULES: dict[str, Rule] = {
    "nn.relu": _relu,
    "clip": _clip,
    "cast": _cast,
    "add": _binary(lambda x, y: x + y),
    "nn.bias_add": _binary(lambda x, y: x + y),
    "subtract": _binary(lambda x, y: x - y),
    "multiply": _binary(lambda x, y: x * y),
    "maximum": _binary(max),
    "minimum": _binary(min),
    "right_shift": _right_shift,
    "left_shift": _left_shift,
    "nn.conv2d": _conv2d,
    "nn.dense": _dense,
    "nn.max_pool2d": _max_pool2d,
    "divide": _divide,
    "round": _monotone(lambda x: math.copysign(math.floor(abs(x) + 0.5), x)
                       if math.isfinite(x) else x),            # half away from zero
    "floor": _monotone(lambda x: float(math.floor(x)) if math.isfinite(x) else x),
    "ceil": _monotone(lambda x: float(math.ceil(x)) if math.isfinite(x) else x),
    **{op: _same for op in ("reshape", "layout_transform", "transpose", "squeeze",
                            "expand_dims", "nn.batch_flatten", "copy", "reverse")},
}
"""The interval rule of each operator the analysis knows (module docstring); any other
operator's result is unknown."""


def value_range(expr: Expr, env: Mapping[Var, Range | None] | None = None) -> Range | None:
    """The bounds of every element of the integer tensor ``expr`` (typed: ``checked_type``),
    or None when only its dtype bounds it.

    Args:
        expr: an expression of operator calls, constants, variables and ``let`` s (a kernel's
            body); other nodes are unknown.
        env: known ranges of free variables (None for unknown).
    """
    known: dict[int, Range | None] = {}
    env = env or {}
    order = post_order(expr, lambda n: type(n) is not Function)
    lets = _let_values(order)
    for node in order:
        known[id(node)] = _node_range(node, known, lets, env)
    return known.get(id(expr))


def _let_values(order: Sequence[Expr]) -> dict[int, Expr]:
    """The value bound to each ``let`` variable among ``order`` (by the variable's id)."""
    return {id(n.var): n.value for n in order if isinstance(n, Let)}


def _node_range(node: Expr, known: dict[int, Range | None], lets: dict[int, Expr],
                env: Mapping[Var, Range | None]) -> Range | None:
    if isinstance(node, Var):
        if id(node) in lets:
            return known.get(id(lets[id(node)]))
        return env.get(node)
    if isinstance(node, Let):
        return known.get(id(node.body))
    if isinstance(node, Constant):
        data = np.asarray(node.data)
        if data.size == 0:
            return None
        if np.issubdtype(data.dtype, np.floating):
            if np.isnan(data).any():
                return None
            return float(data.min()), float(data.max())
        if not np.issubdtype(data.dtype, np.integer):
            return None
        return int(data.min()), int(data.max())
    if not isinstance(node, Call) or not isinstance(node.op, Op) or node.op.name not in RULES:
        return None
    dtype = _dtype(node)
    if _limits(dtype) is None:
        return None
    bounds = []
    for a in node.args:
        got = known.get(id(a)) or _limits(_dtype(a))
        if got is None:
            return None
        bounds.append(got)
    assert dtype is not None
    return RULES[node.op.name](node, bounds, dtype)


# ---- the pass -----------------------------------------------------------------------------

def clamp_known_ranges(mod: IRModule) -> IRModule:
    """ClampKnownRanges (module docstring): kernels' int8 convolution data known to lie in
    ``[0, 127]`` read through ``clip(p, 0, 127)``. Expects a typed module after FuseOps."""
    return map_functions(mod, lambda name, fn: _Clamp(fn).mutate(fn))


class _Clamp(ScopedMutator):
    def __init__(self, root: Function) -> None:
        super().__init__()
        self.ranges = _kernel_ranges(root)

    def descend(self, node: Expr) -> bool:
        return not is_primitive(node)

    def visit_call(self, new: Expr, old: Expr) -> Expr:
        assert isinstance(new, Call) and isinstance(old, Call)
        if not is_primitive(new.op):
            return new
        bounds = [self.ranges.get(id(a)) for a in old.args]
        clamped = _clamp_kernel(new.op, bounds)  # type: ignore[arg-type]
        if clamped is new.op:
            return new
        return Call(clamped, new.args, new.attrs, new.type_args, span=new.span)


def _kernel_ranges(root: Function) -> dict[int, Range | None]:
    """The range of every kernel call's result and let-bound variable in ``root``."""
    ranges: dict[int, Range | None] = {}
    order = post_order(root, lambda n: not is_primitive(n))
    lets = _let_values(order)
    for node in order:
        if type(node) is Var and id(node) in lets:
            ranges[id(node)] = ranges.get(id(lets[id(node)]))
        elif isinstance(node, Call) and isinstance(node.op, Function) and is_primitive(node.op):
            fn = node.op
            env = {p: ranges.get(id(a)) for p, a in zip(fn.params, node.args)}
            ranges[id(node)] = value_range(fn.body, env)
    return ranges


def _clamp_kernel(fn: Function, bounds: Sequence[Range | None]) -> Function:
    """``fn`` with each qualifying parameter read through the clip (module docstring)."""
    byte_params = {p for p, b in zip(fn.params, bounds)
                   if b is not None and BYTE[0] <= b[0] and b[1] <= BYTE[1]
                   and isinstance(p.type_annotation, TensorType)
                   and p.type_annotation.dtype == "int8"}
    if not byte_params:
        return fn
    convs = [n for n in post_order(fn.body) if type(n) is Call and _takes_bytes(n)
             and n.args[0] in byte_params]
    if not convs:
        return fn
    clipped = {p: Call(Op("clip"), (p,), Attrs({"a_min": float(BYTE[0]),
                                                "a_max": float(BYTE[1])}))
               for p in {c.args[0] for c in convs}}
    done = {id(c): Call(c.op, (clipped[c.args[0]], *c.args[1:]), c.attrs, c.type_args,
                        span=c.span) for c in convs}
    body = _ReplaceCalls(done).mutate(fn.body)
    return Function(fn.params, body, fn.ret_type, fn.type_params, fn.attrs, span=fn.span)


def _takes_bytes(call: Call) -> bool:
    """An integer convolution that the byte-pair path may run (module docstring)."""
    if type(call.op) is not Op or call.op.name != "nn.conv2d" or len(call.args) != 2:
        return False
    attrs: Any = call.attrs
    data = getattr(call.args[0], "type_annotation", None)
    if type(call.args[1]) is not Constant or not isinstance(data, TensorType):
        return False
    if str(attrs.get("out_dtype") or "") != "int32" or int(attrs.get("groups", 1)) != 1:
        return False
    from semantics.ops.layouts import parse_layout

    axes = parse_layout("nn.conv2d", str(attrs.get("kernel_layout") or "OIHW"))
    shape = np.asarray(call.args[1].data).shape
    channels = 1
    for (a, _), n in zip(axes, shape):
        if a in ("I", "i"):
            channels *= int(n)
    return channels % 4 == 0


class _ReplaceCalls(ScopedMutator):
    def __init__(self, done: dict[int, Call]) -> None:
        super().__init__()
        self.done = done

    def pre(self, node: Expr) -> Expr:
        return self.done.get(id(node), node)
