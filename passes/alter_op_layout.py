"""AlterOpLayout (``alter_op_layout``): convolutions in the layout the backend wants.

What TVM does: its x86 backend rewrites ``nn.conv2d`` from NCHW to the blocked
layout ``NCHW{c}c`` with ``OIHW{c}i{c}o`` kernels (``c`` channels a block, the
width of the vector unit: 16 float32 lanes for AVX-512). Our ``nn.conv2d``
accepts those blocked layouts (``semantics.ops.nn``), so this pass does the
same: the registered pass (what ``optimize`` runs at ``-O3``) moves every
convolution whose channel counts the block divides to ``NCHW{c}c`` with the
block of the target — 16 with AVX-512, 8 with AVX2, else 4, the ``ic_bn``/``oc_bn``
the TVM backend's NCHWc conv schedule will want. The block is an argument, never
read from the machine: ``backends.tvm.build`` runs :func:`alter_op_layout_pass`
with its ``Target``'s lanes; the registered pass (``optimize`` alone) uses
:data:`DEFAULT_BLOCK`, 16. Two kinds of convolutions the block does not fully divide still
get a blocked output (``NCHW{c}c``), so a network stays blocked end to end:
a depthwise convolution (``groups`` = channels, one input channel per group)
runs in ``NCHW{c}c`` with an ``OIHW1i{c}o`` kernel, and one with few input
channels (3 RGB channels) reads its data in ``NCHW`` with an ``OIHW{c}o``
kernel and writes ``NCHW{c}c`` (``out_layout``). A convolution whose output
channels the block does not divide is left as it is.
:func:`alter_op_layout` also takes an explicit target: a blocked ``NCHW{c}c``
(or ``block=c``), ``NHWC`` with ``HWIO`` kernels (the layout TVM's ARM and
tensor-core schedules want), or ``NCHW``/``OIHW``.

Rewrites, by name (``T`` the target data layout, ``K`` its kernel layout):

* **Alter-Conv2D** — ``nn.conv2d(x, w)`` in data layout ``D``, kernel layout
  ``Kw`` and output layout ``O`` (not already ``T``/``K``/``T``) becomes
  ``layout_transform(nn.conv2d(x_T, w_K, data_layout=T, kernel_layout=K), T, O)``
  (for the two kinds above: ``K`` is ``OIHW1i{c}o``, or ``x_T`` is ``x`` in ``NCHW``,
  ``K`` is ``OIHW{c}o`` and ``out_layout=T``)
  where ``x_T`` is ``x`` in layout ``T`` — ``layout_transform(x, D, T)``, or
  the value already available in ``T`` (below) — and ``w_K`` is
  ``layout_transform(w, Kw, K)``, computed now when ``w`` is a constant (bound
  weights are pre-transformed at compile time). For a blocked ``T`` only when
  the block divides the data channels, the weight's input channels (per group)
  and the output channels (known integers), or for the two kinds above.
* **Alter-Elide** — a value that exists in layout ``T`` (a rewritten
  convolution's output, or a layout-agnostic elementwise operator — ``nn.relu``,
  ``exp``, ``cast``, ... — applied to such a value) is used *as it is* by the
  next convolution: between consecutive convolutions (with elementwise
  operators in between) no transform is left; only uses in the original layout
  (other operators, the function's result) get one ``layout_transform`` back,
  shared by all of them. A transform inserted on a value that is itself a
  ``layout_transform`` the other way cancels with it (running the pass twice,
  or to ``NCHW`` after ``NHWC``/``NCHW16c``, leaves no round trips).

* **Alter-Winograd** — at the same time, a convolution moved to a blocked ``T`` that is
  3×3, stride 1, dilation 1, ungrouped, float32, with a bound weight, and that
  :func:`passes.alter_winograd.winograd_tile` finds worth it (``F(4x4, 3x3)`` from 28 px
  outputs, ``F(2x2, 3x3)`` from 7 px, small or memory-bound layers kept direct, by the
  target's :class:`~passes.alter_winograd.WinogradPolicy`) becomes
  ``nn.contrib_conv2d_winograd_without_weight_transform(x_T,
  nn.contrib_conv2d_winograd_weight_transform(w, tile_size=m), ...)`` in ``T``; FoldConstant
  computes the weight's transform at build time (``passes/alter_winograd.py``). Its result
  is available in ``T`` like a convolution's. Values agree within float tolerance (the
  transforms round differently), not bit for bit.

* **Alter-Pool** — a pool (``nn.max_pool2d``, ``nn.avg_pool2d``, the global pools) of a
  value available in ``T``, in that value's original layout, pools in ``T``
  (``layout=T``; every channel is pooled on its own, so the numbers are the same in any
  layout): its result is available in ``T`` too, and a conv → pool → conv chain keeps no
  transform (TVM's x86 backend pools ``NCHW{c}c`` the same way).

* **Alter-Broadcast** — a broadcasting binary operator (``add``, ``multiply``,
  ...) with an operand available in ``T`` is computed in ``T`` too: the other
  operand is another such value (a residual connection), a constant (padded
  to rank 4 and re-laid out at compile time — a per-channel bias ``(C, 1, 1)``
  becomes ``(1, 1, 1, C)`` for NHWC and ``(1, C/c, 1, 1, c)`` for NCHW{c}c; a
  constant with one channel gets a unit block axis), or a full-shape tensor
  (one transform).

Limits: other layout-sensitive operators (``bias_add`` — run
CanonicalizeOps first —, ``concatenate``) take their input in the original
layout (a transform back is inserted before them); the program in
graph form (values reached through ``let``-bound variables are not followed
across the binding, but are rewritten correctly); one block size for data and
kernel input/output channels (TVM may pick ``ic_bn != oc_bn`` per layer).

Invariants: pure; one memoized, iterative walk per function; every node keeps
its type (transforms back restore the original layout); values are the same
(data movement is exact; the blocked convolution is bit-identical to the
unblocked one; float convolutions in another layout agree within
summation-order tolerance).
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from passes.alter_winograd import DEFAULT_POLICY, WinogradPolicy, rewrite_winograd
from passes.canonicalize_ops import normalized_attrs
from passes.common import typed_or_same
from passes.manager import Pass, register_pass
from semantics import ops
from semantics.errors import RelayError
from semantics.expr import Attrs, Call, Constant, Expr, Function, Op, frozen_array
from semantics.module import IRModule
from semantics.ops.layouts import parse_layout
from semantics.types import TensorType
from semantics.visitor import ExprMutator

__all__ = ["BLOCKS", "DEFAULT_BLOCK", "KERNEL_LAYOUTS", "alter_op_layout", "alter_op_layout_pass",
           "kernel_layout_for"]

# The unblocked target data layouts and the kernel layout each goes with (TVM's pairs).
KERNEL_LAYOUTS = {"NHWC": "HWIO", "NCHW": "OIHW"}

# Unary elementwise operators: they commute with any re-layout of their input.
_LAYOUT_AGNOSTIC = frozenset((
    "nn.relu", "nn.leaky_relu", "negative", "abs", "sign", "exp", "log", "sqrt", "rsqrt",
    "tanh", "sigmoid", "erf", "floor", "ceil", "round", "trunc", "clip", "cast", "copy",
    "logical_not", "zeros_like", "ones_like",
))

# Pools: each channel is pooled on its own, so they run in any layout of the channels.
_POOLS = frozenset(("nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d",
                    "nn.global_max_pool2d"))

# Broadcasting binary operators: they commute with a re-layout of both operands.
_BROADCAST_BINARY = frozenset((
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
    "right_shift", "left_shift", "bitwise_and", "bitwise_or", "bitwise_xor",
))

P = TypeVar("P", IRModule, Expr)


DEFAULT_BLOCK = 16
"""The channel block of the registered pass (``optimize`` at ``-O3`` without a target, or
``alter_op_layout(p)``): 16, TVM's choice for AVX-512. A build passes its target's block
instead (:func:`alter_op_layout_pass`, ``Target.lanes``); the pass itself never looks at
the machine or the environment."""

BLOCKS = (4, 8, 16)
"""The channel blocks a target may ask for (float32 lanes of SSE/NEON, AVX2, AVX-512)."""


def alter_op_layout_pass(block: int = DEFAULT_BLOCK,
                         winograd: WinogradPolicy = DEFAULT_POLICY) -> Pass:
    """The AlterOpLayout pass with channel block ``block`` (what ``optimize`` runs in its
    place when a build knows its target: ``backends.tvm.build`` passes ``Target.lanes``)
    and the Winograd rule's view of the target (``passes.alter_winograd``; its ``enabled``
    False keeps every convolution direct).

    Raises:
        ValueError: a block not in :data:`BLOCKS`.
    """
    if isinstance(block, bool) or block not in BLOCKS:
        raise ValueError(f"alter_op_layout: block {block!r} is not one of "
                         f"{', '.join(map(str, BLOCKS))}")
    if block == DEFAULT_BLOCK and winograd == DEFAULT_POLICY:
        return ALTER_OP_LAYOUT
    layout = f"NCHW{block}c"
    return Pass(ALTER_OP_LAYOUT.name, ALTER_OP_LAYOUT.func_name,
                lambda m: _alter_module(m, layout, winograd), ALTER_OP_LAYOUT.opt_level,
                ALTER_OP_LAYOUT.doc)


def kernel_layout_for(layout: str) -> str:
    """The kernel layout that goes with the target data layout ``layout``.

    Raises:
        ValueError: an unsupported target layout.
    """
    if layout in KERNEL_LAYOUTS:
        return KERNEL_LAYOUTS[layout]
    block = _block_of(layout)
    if not block:
        raise ValueError(f"alter_op_layout: unsupported layout {layout!r} (supported: "
                         f"{', '.join(KERNEL_LAYOUTS)}, NCHW{{c}}c such as NCHW16c)")
    return f"OIHW{block}i{block}o"


def _block_of(layout: str) -> int:
    """The channel block of a target layout ``NCHW{c}c`` (0: unblocked or another layout)."""
    if not layout.startswith("NCHW"):
        return 0
    try:
        axes = parse_layout("alter_op_layout", layout)
    except RelayError:
        return 0
    if len(axes) != 5 or axes[4][0] != "c" or layout != f"NCHW{axes[4][1]}c":
        return 0
    return axes[4][1]


def _alter_module(mod: IRModule, layout: str, winograd: WinogradPolicy | None = None
                  ) -> IRModule:
    typed = typed_or_same(mod)
    out = {name: _alter(fn, layout, winograd) for name, fn in typed.functions.items()}
    if all(out[n] is typed.functions[n] for n in out):
        return mod
    return typed.with_functions(out)


@register_pass("AlterOpLayout", "alter_op_layout", opt_level=3)
def _registered(mod: IRModule) -> IRModule:
    """Move nn.conv2d to NCHW{c}c (c = 16, or the build target's lanes), eliding transforms;
    eligible 3x3 convolutions with bound weights become Winograd ones."""
    return _alter_module(mod, f"NCHW{DEFAULT_BLOCK}c", DEFAULT_POLICY)


ALTER_OP_LAYOUT: Pass = _registered


def alter_op_layout(program: P, layout: str | None = None, *, block: int | None = None) -> P:
    """Convert convolutions to ``layout`` (see the module docstring).

    Args:
        program: a module or an expression.
        layout: the target data layout: ``"NCHW{c}c"`` (kernels ``OIHW{c}i{c}o``),
            ``"NHWC"`` (kernels ``HWIO``) or ``"NCHW"`` (kernels ``OIHW``); None (and no
            ``block``): the registered pass's choice, ``NCHW{c}c`` with
            ``c =`` :data:`DEFAULT_BLOCK` (16).
        block: shorthand for ``layout=f"NCHW{block}c"``.
    Returns:
        The program of the same kind.
    Raises:
        ValueError: an unsupported target layout, or both ``layout`` and ``block``.
    """
    if block is not None:
        if layout is not None:
            raise ValueError("alter_op_layout: give layout or block, not both")
        layout = f"NCHW{block}c"
    if layout is None:
        return ALTER_OP_LAYOUT(program)
    kernel_layout_for(layout)  # validates
    target = layout
    custom = Pass(ALTER_OP_LAYOUT.name, ALTER_OP_LAYOUT.func_name,
                  lambda m: _alter_module(m, target))
    return custom(program)


def _transform(e: Expr, src: str, dst: str, span: object) -> Expr:
    """``layout_transform(e, src, dst)``; computed now for a constant; ``e`` when equal.

    An inverse pair cancels: ``layout_transform(layout_transform(y, dst, src), src, dst)``
    is ``y`` (data movement there and back is the identity on every well-typed ``y``).
    """
    if src == dst:
        return e
    if _is_transform(e, dst, src):
        assert isinstance(e, Call)
        return e.args[0]
    if isinstance(e, Constant):
        data = ops.get("layout_transform").reference(e.data, src_layout=src, dst_layout=dst)
        return Constant(frozen_array(np.asarray(data)), span=e.span)
    return Call(Op("layout_transform"), (e,), Attrs({"src_layout": src, "dst_layout": dst}),
                span=span)  # type: ignore[arg-type]


def _shared_transform(e: Expr, src: str, dst: str, span: object,
                      shared: dict[tuple[int, str, str], Expr]) -> Expr:
    """:func:`_transform`, one node per (value, src, dst): every use of a value moved into
    the target layout shares one transform."""
    key = (id(e), src, dst)
    out = shared.get(key)
    if out is None:
        out = shared[key] = _transform(e, src, dst, span)
    return out


def _is_transform(e: Expr, src: str, dst: str) -> bool:
    """``e`` is ``layout_transform(_, src, dst)``."""
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "layout_transform" \
        and len(e.args) == 1 and e.attrs.get("src_layout") == src \
        and e.attrs.get("dst_layout") == dst


def _is_inverse_pair(e: Call) -> bool:
    """``e`` is ``layout_transform(layout_transform(y, B, A), A, B)``."""
    src, dst = e.attrs.get("src_layout"), e.attrs.get("dst_layout")
    return isinstance(src, str) and isinstance(dst, str) and _is_transform(e.args[0], dst, src)


def _alter(fn: Function, target: str, winograd: WinogradPolicy | None = None) -> Function:
    out = _Alter(target, winograd if _block_of(target) else None).mutate(fn)
    assert isinstance(out, Function)
    return out


class _Alter(ExprMutator):
    """Children first: each operator call is rewritten knowing which operands are in the
    target layout already (``in_target``: id(original node) -> (its value in the target
    layout, the node's own layout))."""

    def __init__(self, target: str, winograd: WinogradPolicy | None = None):
        self.target = target
        self.winograd = winograd
        self.kernel_target = kernel_layout_for(target)
        self.in_target: dict[int, tuple[Expr, str]] = {}
        self.shared: dict[tuple[int, str, str], Expr] = {}

    def visit_call(self, new: Call, old: Call) -> Expr:
        if not isinstance(old.op, Op):
            return new
        target, in_target = self.target, self.in_target
        name = old.op.name
        if name == "nn.conv2d":
            return _alter_conv(old, new, target, self.kernel_target, in_target, self.shared,
                               self.winograd)
        if name in _LAYOUT_AGNOSTIC and len(old.args) == 1 and id(old.args[0]) in in_target:
            # [Alter-Elide] through a layout-agnostic operator.
            value, layout = in_target[id(old.args[0])]
            moved = new if value is new.args[0] else Call(
                new.op, (value,), new.attrs, new.type_args, span=new.span)
            in_target[id(old)] = (moved, layout)
            return _transform(moved, target, layout, new.span)
        if name in _POOLS and len(old.args) == 1 and id(old.args[0]) in in_target:
            return _alter_pool(old, new, target, in_target)
        if name in _BROADCAST_BINARY and len(old.args) == 2 and any(
                id(a) in in_target for a in old.args):
            return _alter_binary(old, new, target, in_target, self.shared)
        if name == "layout_transform" and len(old.args) == 1 and _is_inverse_pair(new):
            # [Alter-Elide] of a pair the program had
            inner = new.args[0]
            assert isinstance(inner, Call)
            return inner.args[0]
        return new


# [Alter-Conv2D]
def _alter_conv(node: Call, new: Expr, target: str, kernel_target: str,
                in_target: dict[int, tuple[Expr, str]],
                shared: dict[tuple[int, str, str], Expr],
                winograd: WinogradPolicy | None = None) -> Expr:
    if len(node.args) != 2 or not isinstance(node.checked_type, TensorType):
        return new
    assert isinstance(new, Call)
    attrs = normalized_attrs(node)
    data_layout, kernel_layout = attrs["data_layout"], attrs["kernel_layout"]
    out_layout = attrs["out_layout"] or data_layout
    conv_data, conv_kernel = target, kernel_target
    block = _block_of(target)
    if block and not _divisible(node, data_layout, kernel_layout, block):
        variant = _blocked_variant(node, data_layout, kernel_layout, block, attrs["groups"])
        if variant is None:
            return new
        conv_data, conv_kernel = variant
    if data_layout == conv_data and kernel_layout == conv_kernel and out_layout == target:
        in_target[id(node)] = (new, target)  # already there: a source for the next conv
        return new
    known = in_target.get(id(node.args[0])) if conv_data == target else None
    data = known[0] if known is not None else _shared_transform(
        new.args[0], data_layout, conv_data, new.span, shared)
    weight = _shared_transform(new.args[1], kernel_layout, conv_kernel, new.span, shared)
    conv_attrs = dict(new.attrs)
    conv_attrs.update(data_layout=conv_data, kernel_layout=conv_kernel)
    conv_attrs.pop("out_layout", None)
    if conv_data != target:
        conv_attrs["out_layout"] = target
    conv: Expr = Call(new.op, (data, weight), Attrs(conv_attrs), new.type_args, span=new.span)
    if winograd is not None and conv_data == target:  # [Alter-Winograd]
        assert isinstance(conv, Call)
        conv = rewrite_winograd(node, conv, winograd) or conv
    in_target[id(node)] = (conv, out_layout)
    return _transform(conv, target, out_layout, new.span)


# [Alter-Pool]
def _alter_pool(node: Call, new: Expr, target: str,
                in_target: dict[int, tuple[Expr, str]]) -> Expr:
    """A pool whose input is available in the target layout pools it there (see the module
    docstring); a pool in another layout than its input's original one is left alone."""
    assert isinstance(new, Call)
    value, layout = in_target[id(node.args[0])]
    attrs = normalized_attrs(node)
    if attrs["layout"] != layout or attrs["out_layout"] not in ("", layout):
        return new
    if layout == target and value is new.args[0]:
        in_target[id(node)] = (new, target)  # already there: a source for the next conv
        return new
    pool_attrs = dict(new.attrs)
    pool_attrs["layout"] = target
    pool_attrs.pop("out_layout", None)
    pool = Call(new.op, (value,), Attrs(pool_attrs), new.type_args, span=new.span)
    in_target[id(node)] = (pool, layout)
    return _transform(pool, target, layout, new.span)


def _channels(t: object, layout: str, axes: str) -> list[object]:
    """The (unblocked) extents of the primal ``axes`` of a tensor of type ``t`` in ``layout``."""
    assert isinstance(t, TensorType)
    parsed = parse_layout("nn.conv2d", layout)
    at = {a: i for i, (a, _) in enumerate(parsed)}
    out: list[object] = []
    for a in axes:
        d = t.shape[at[a]]
        if a.lower() in at and isinstance(d, int):
            d *= parsed[at[a.lower()]][1]
        out.append(d)
    return out


def _divisible(node: Call, data_layout: str, kernel_layout: str, block: int) -> bool:
    """The block divides the conv's data channels, weight input channels and output channels
    (all known integers)."""
    dims = _channels(node.args[0].checked_type, data_layout, "C") + _channels(
        node.args[1].checked_type, kernel_layout, "OI")
    return all(isinstance(d, int) and d % block == 0 for d in dims)


def _blocked_variant(node: Call, data_layout: str, kernel_layout: str, block: int,
                     groups: int) -> tuple[str, str] | None:
    """The (data, kernel) layouts of a convolution the block does not fully divide whose
    output can still be ``NCHW{block}c`` (None: none):

    * a depthwise convolution (``groups`` = data channels = output channels, one input
      channel per group) whose channels the block divides: data ``NCHW{block}c``, kernel
      ``OIHW1i{block}o`` (one input channel, ``block`` output channels a block);
    * an ungrouped convolution of few input channels (3 RGB channels) whose output
      channels the block divides: data ``NCHW`` (read unblocked), kernel ``OIHW{block}o``,
      output ``NCHW{block}c`` — the next convolution reads it without a transform.
    """
    dims = _channels(node.args[0].checked_type, data_layout, "C") + _channels(
        node.args[1].checked_type, kernel_layout, "OI")
    if not all(isinstance(d, int) for d in dims):
        return None
    c, o, i = (int(d) for d in dims)  # type: ignore[call-overload]
    if groups == c == o and i == 1 and c % block == 0:
        return f"NCHW{block}c", f"OIHW1i{block}o"
    if groups == 1 and o % block == 0 and c % block:
        return "NCHW", f"OIHW{block}o"
    return None


def _constant_to_target(data: np.ndarray, layout: str, target: str) -> np.ndarray | None:
    """A constant of rank <= 4 broadcasting against a ``layout`` tensor, re-laid out to
    broadcast the same way against the ``target`` tensor (None: not expressible)."""
    padded = data.reshape((1,) * (4 - data.ndim) + tuple(data.shape))
    nchw = np.transpose(padded, [layout.index(a) for a in "NCHW"])
    block = _block_of(target)
    if not block:
        return np.ascontiguousarray(np.transpose(nchw, ["NCHW".index(a) for a in target]))
    n, c, h, w = nchw.shape
    if c == 1:  # broadcast along the channels: a unit block axis broadcasts along the block
        return np.ascontiguousarray(nchw.reshape(n, 1, h, w, 1))
    if c % block:
        return None
    return np.asarray(ops.get("layout_transform").reference(nchw, src_layout="NCHW",
                                                             dst_layout=target))


# [Alter-Broadcast]
def _alter_binary(node: Call, new: Expr, target: str, in_target: dict[int, tuple[Expr, str]],
                  shared: dict[tuple[int, str, str], Expr]) -> Expr:
    """A broadcasting binary operator with an operand available in the target layout.

    The other operand follows into the target layout: an operand available there too (a
    residual connection of two convolutions), a constant of rank <= 4 (padded with leading
    unit axes and re-laid out now: broadcasting commutes with permuting all axes, and with
    blocking the channel axis when the constant has all channels or one), or a
    tensor of the result's full shape (one ``layout_transform``). Anything else: unchanged.
    """
    assert isinstance(new, Call)
    out_t = node.checked_type
    if not isinstance(out_t, TensorType) or out_t.ndim != 4:
        return new
    layouts = {in_target[id(a)][1] for a in node.args if id(a) in in_target}
    if len(layouts) != 1:
        return new
    (layout,) = layouts
    moved: list[Expr] = []
    for old_arg, new_arg in zip(node.args, new.args, strict=True):
        known = in_target.get(id(old_arg))
        arg_t = old_arg.checked_type
        if known is not None:
            if not isinstance(arg_t, TensorType) or arg_t.shape != out_t.shape:
                return new  # broadcasting would enlarge it: leave the call alone
            moved.append(known[0])
        elif isinstance(new_arg, Constant) and new_arg.data.ndim <= 4 and len(layout) == 4:
            data = _constant_to_target(new_arg.data, layout, target)
            if data is None:
                return new
            moved.append(Constant(frozen_array(data), span=new_arg.span))
        elif isinstance(arg_t, TensorType) and arg_t.shape == out_t.shape:
            moved.append(_shared_transform(new_arg, layout, target, new.span, shared))
        else:
            return new
    result = Call(new.op, tuple(moved), new.attrs, new.type_args, span=new.span)
    in_target[id(node)] = (result, layout)
    return _transform(result, target, layout, new.span)
