"""AlterOpLayout (``alter_op_layout``): convolutions in the layout the backend wants.

What TVM does, and what we can: TVM's x86 backend rewrites ``nn.conv2d`` from
NCHW to a blocked layout ``NCHW{c}c`` (16 channels a block for AVX-512) with
``nn.contrib_conv2d_NCHWc``. Our operator registry has no blocked-layout
convolution (``nn.conv2d`` takes any permutation of NCHW/OIHW, and
``layout_transform`` is the only operator that understands blocked layouts),
so the blocked rewrite cannot be expressed. This pass does the same job for
the layouts the registry supports: it moves every ``nn.conv2d`` to a *target
layout* — ``NHWC`` with ``HWIO`` kernels by default (the layout TVM's ARM and
tensor-core schedules want), or ``NCHW``/``OIHW`` — inserting the
``layout_transform`` s that are needed and no others.

Rewrites, by name (``T`` the target data layout, ``K`` its kernel layout):

* **Alter-Conv2D** — ``nn.conv2d(x, w)`` in data layout ``D``, kernel layout
  ``Kw`` and output layout ``O`` (not already ``T``/``K``/``T``) becomes
  ``layout_transform(nn.conv2d(x_T, w_K, data_layout=T, kernel_layout=K), T, O)``
  where ``x_T`` is ``x`` in layout ``T`` — ``layout_transform(x, D, T)``, or
  the value already available in ``T`` (below) — and ``w_K`` is
  ``layout_transform(w, Kw, K)``, computed now when ``w`` is a constant (bound
  weights are pre-transformed at compile time).
* **Alter-Elide** — a value that exists in layout ``T`` (a rewritten
  convolution's output, or a layout-agnostic elementwise operator — ``nn.relu``,
  ``exp``, ``cast``, ... — applied to such a value) is used *as it is* by the
  next convolution: between consecutive convolutions (with elementwise
  operators in between) no transform is left; only uses in the original layout
  (other operators, the function's result) get one ``layout_transform`` back,
  shared by all of them. A transform inserted on a value that is itself a
  ``layout_transform`` the other way cancels with it (running the pass twice,
  or to ``NCHW`` after ``NHWC``, leaves no round trips).

* **Alter-Broadcast** — a broadcasting binary operator (``add``, ``multiply``,
  ...) with an operand available in ``T`` is computed in ``T`` too: the other
  operand is another such value (a residual connection), a constant (padded
  to rank 4 and transposed at compile time — a per-channel bias ``(C, 1, 1)``
  becomes ``(1, 1, 1, C)`` for NHWC), or a full-shape tensor (one transform).

Limits: other layout-sensitive operators (pools, ``bias_add`` — run
CanonicalizeOps first —, ``concatenate``) take their input in the original
layout (a transform back is inserted before them); the program in
graph form (values reached through ``let``-bound variables are not followed
across the binding, but are rewritten correctly); the blocked ``NCHW{c}c``
layouts and per-target block sizes are absent (see above).

Invariants: pure; one memoized, iterative walk per function; every node keeps
its type (transforms back restore the original layout); values are the same
(data movement is exact; float convolutions agree within summation-order
tolerance).
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from passes.canonicalize_ops import normalized_attrs
from passes.common import typed_or_same
from passes.manager import Pass, register_pass
from semantics import ops
from semantics.expr import Attrs, Call, Constant, Expr, Function, Op, children, with_children
from semantics.module import IRModule
from semantics.types import TensorType
from semantics.visitor import post_order

__all__ = ["DEFAULT_LAYOUT", "KERNEL_LAYOUTS", "alter_op_layout"]

DEFAULT_LAYOUT = "NHWC"

# The target data layouts and the kernel layout each goes with (TVM's pairs).
KERNEL_LAYOUTS = {"NHWC": "HWIO", "NCHW": "OIHW"}

# Unary elementwise operators: they commute with any re-layout of their input.
_LAYOUT_AGNOSTIC = frozenset((
    "nn.relu", "nn.leaky_relu", "negative", "abs", "sign", "exp", "log", "sqrt", "rsqrt",
    "tanh", "sigmoid", "erf", "floor", "ceil", "round", "trunc", "clip", "cast", "copy",
    "logical_not", "zeros_like", "ones_like",
))

# Broadcasting binary operators: they commute with a re-layout of both operands.
_BROADCAST_BINARY = frozenset((
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
))

P = TypeVar("P", IRModule, Expr)


def _alter_module(mod: IRModule, layout: str) -> IRModule:
    typed = typed_or_same(mod)
    out = {name: _alter(fn, layout) for name, fn in typed.functions.items()}
    if all(out[n] is typed.functions[n] for n in out):
        return mod
    return typed.with_functions(out)


@register_pass("AlterOpLayout", "alter_op_layout", opt_level=3)
def _registered(mod: IRModule) -> IRModule:
    """Move nn.conv2d to the NHWC/HWIO layout, eliding transforms between convolutions."""
    return _alter_module(mod, DEFAULT_LAYOUT)


ALTER_OP_LAYOUT: Pass = _registered


def alter_op_layout(program: P, layout: str = DEFAULT_LAYOUT) -> P:
    """Convert convolutions to ``layout`` (see the module docstring).

    Args:
        program: a module or an expression.
        layout: the target data layout, ``"NHWC"`` (kernels ``HWIO``) or ``"NCHW"``
            (kernels ``OIHW``).
    Returns:
        The program of the same kind.
    Raises:
        ValueError: an unsupported target layout.
    """
    if layout not in KERNEL_LAYOUTS:
        raise ValueError(f"alter_op_layout: unsupported layout {layout!r} (supported: "
                         f"{', '.join(KERNEL_LAYOUTS)})")
    if layout == DEFAULT_LAYOUT:
        return ALTER_OP_LAYOUT(program)
    custom = Pass(ALTER_OP_LAYOUT.name, ALTER_OP_LAYOUT.func_name,
                  lambda m: _alter_module(m, layout))
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
        return Constant(np.asarray(data), span=e.span)
    return Call(Op("layout_transform"), (e,), Attrs({"src_layout": src, "dst_layout": dst}),
                span=span)  # type: ignore[arg-type]


def _is_transform(e: Expr, src: str, dst: str) -> bool:
    """``e`` is ``layout_transform(_, src, dst)``."""
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name == "layout_transform" \
        and len(e.args) == 1 and e.attrs.get("src_layout") == src \
        and e.attrs.get("dst_layout") == dst


def _is_inverse_pair(e: Call) -> bool:
    """``e`` is ``layout_transform(layout_transform(y, B, A), A, B)``."""
    src, dst = e.attrs.get("src_layout"), e.attrs.get("dst_layout")
    return isinstance(src, str) and isinstance(dst, str) and _is_transform(e.args[0], dst, src)


def _alter(fn: Function, target: str) -> Function:
    kernel_target = KERNEL_LAYOUTS[target]
    memo: dict[int, Expr] = {}
    # id(original node) -> (its value in the target layout, the node's own layout)
    in_target: dict[int, tuple[Expr, str]] = {}
    for node in post_order(fn):
        kids = children(node)
        new = with_children(node, tuple(memo[id(k)] for k in kids)) if kids else node
        if isinstance(node, Call) and isinstance(node.op, Op):
            name = node.op.name
            if name == "nn.conv2d":
                new = _alter_conv(node, new, target, kernel_target, memo, in_target)
            elif name in _LAYOUT_AGNOSTIC and len(node.args) == 1 \
                    and id(node.args[0]) in in_target:
                # [Alter-Elide] through a layout-agnostic operator.
                value, layout = in_target[id(node.args[0])]
                assert isinstance(new, Call)
                moved = new if value is new.args[0] else Call(
                    new.op, (value,), new.attrs, new.type_args, span=new.span)
                in_target[id(node)] = (moved, layout)
                new = _transform(moved, target, layout, new.span)
            elif name in _BROADCAST_BINARY and len(node.args) == 2 and any(
                    id(a) in in_target for a in node.args):
                new = _alter_binary(node, new, target, in_target)
            elif name == "layout_transform" and len(node.args) == 1:
                assert isinstance(new, Call)
                if _is_inverse_pair(new):  # [Alter-Elide] of a pair the program had
                    inner = new.args[0]
                    assert isinstance(inner, Call)
                    new = inner.args[0]
        memo[id(node)] = new
    out = memo[id(fn)]
    assert isinstance(out, Function)
    return out


# [Alter-Conv2D]
def _alter_conv(node: Call, new: Expr, target: str, kernel_target: str,
                memo: dict[int, Expr], in_target: dict[int, tuple[Expr, str]]) -> Expr:
    if len(node.args) != 2 or not isinstance(node.checked_type, TensorType):
        return new
    assert isinstance(new, Call)
    attrs = normalized_attrs(node)
    data_layout, kernel_layout = attrs["data_layout"], attrs["kernel_layout"]
    out_layout = attrs["out_layout"] or data_layout
    if data_layout == target and kernel_layout == kernel_target and out_layout == target:
        in_target[id(node)] = (new, target)  # already there: a source for the next conv
        return new
    known = in_target.get(id(node.args[0]))
    data = known[0] if known is not None else _transform(new.args[0], data_layout, target,
                                                          new.span)
    weight = _transform(new.args[1], kernel_layout, kernel_target, new.span)
    conv_attrs = dict(new.attrs)
    conv_attrs.update(data_layout=target, kernel_layout=kernel_target)
    conv_attrs.pop("out_layout", None)
    conv = Call(new.op, (data, weight), Attrs(conv_attrs), new.type_args, span=new.span)
    in_target[id(node)] = (conv, out_layout)
    return _transform(conv, target, out_layout, new.span)


# [Alter-Broadcast]
def _alter_binary(node: Call, new: Expr, target: str,
                  in_target: dict[int, tuple[Expr, str]]) -> Expr:
    """A broadcasting binary operator with an operand available in the target layout.

    The other operand follows into the target layout: an operand available there too (a
    residual connection of two convolutions), a constant of rank <= 4 (padded with leading
    unit axes and transposed now: broadcasting commutes with permuting all axes), or a
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
        elif isinstance(new_arg, Constant) and new_arg.data.ndim <= 4:
            data = new_arg.data
            padded = data.reshape((1,) * (4 - data.ndim) + tuple(data.shape))
            perm = [layout.index(a) for a in target]
            moved.append(Constant(np.ascontiguousarray(np.transpose(padded, perm)),
                                  span=new_arg.span))
        elif isinstance(arg_t, TensorType) and arg_t.shape == out_t.shape:
            moved.append(_transform(new_arg, layout, target, new.span))
        else:
            return new
    result = Call(new.op, tuple(moved), new.attrs, new.type_args, span=new.span)
    in_target[id(node)] = (result, layout)
    return _transform(result, target, layout, new.span)
