"""AlterOpLayout's Winograd rule: which convolutions become Winograd ones, and the rewrite.

**Alter-Winograd** (a rule of ``alter_op_layout``, TVM's ``_alter_conv2d_layout`` for
Winograd): an ``nn.conv2d`` with a 3×3 kernel, stride 1, dilation 1, one group, float32
data, weight and result, a *bound* weight (a closed expression: a constant, or constant
arithmetic FoldScaleAxis left, such as a weight scaled by a folded batch norm), moved by
AlterOpLayout to the blocked layout ``NCHW{c}c`` with all its channels divisible by the
block, becomes::

    nn.contrib_conv2d_winograd_without_weight_transform(
        x_T, nn.contrib_conv2d_winograd_weight_transform(w_OIHW, tile_size=m),
        tile_size=m, padding=..., channels=O, kernel_size=[3, 3], data_layout=T)

when :func:`winograd_tile` picks a tile ``m`` for it. The weight's transform is an ordinary
operator call on a closed expression, so FoldConstant (which runs after AlterOpLayout)
computes it at build time; a transform larger than FoldConstant folds
(:data:`~passes.fold_constant.MAX_FOLDED_ELEMENTS`) is computed by this rule itself with the
oracle, so a bound weight is never transformed at run time.

The choice (:func:`winograd_tile`) is the issue's measurements turned into a rule:

* the tile from the output size: ``F(4x4, 3x3)`` when both output extents are at least
  :data:`F4_MIN_OUTPUT` (28: 2.0–2.9× faster than direct on ResNet-18's 56 and 28 px layers),
  ``F(2x2, 3x3)`` from :data:`F2_MIN_OUTPUT` (7: 1.7–2.0× at 14 px, 1.15–1.3× at 7 px),
  direct below;
* a cost rule that keeps small layers direct: the multiply-adds of the transformed domain
  plus the transforms (weighted by :data:`TRANSFORM_COST`: they are memory-bound where the
  GEMM is not) must be below :data:`MAX_COST_RATIO` of the direct convolution's (a 16 → 16
  channel layer stays direct; ResNet's 64 to 512 channel layers qualify);
* memory traffic: a weight larger than the target's L2 cache is streamed from memory once
  per call, which costs :data:`WEIGHT_COST` multiply-adds a value spread over the output's
  tiles — for both forms, and the transformed weight is 1.8× (``F(2x2, 3x3)``) to 4×
  (``F(4x4, 3x3)``) larger than the kernel: a layer with few tiles and large weights
  stays direct.

The Target record's facts arrive as a :class:`WinogradPolicy` (``backends.tvm.build``
fills it from ``Target``: its lanes and L2 size); the pass never reads the machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from passes.canonicalize_ops import normalized_attrs
from semantics.expr import Attrs, Call, Constant, Expr, Function, Op, Var, frozen_array
from semantics.ops.nn_relations import pad4, pair
from semantics.types import TensorType
from semantics.visitor import post_order

__all__ = ["DEFAULT_POLICY", "F2_MIN_OUTPUT", "F4_MIN_OUTPUT", "MAX_COST_RATIO", "TRANSFORM_COST",
           "WEIGHT_COST", "WinogradPolicy", "rewrite_winograd", "winograd_tile"]

WEIGHT_TRANSFORM = "nn.contrib_conv2d_winograd_weight_transform"
WINOGRAD = "nn.contrib_conv2d_winograd_without_weight_transform"

F4_MIN_OUTPUT = 28
"""Output extents (both) from which ``F(4x4, 3x3)`` is chosen."""

F2_MIN_OUTPUT = 7
"""Output extents (both) from which ``F(2x2, 3x3)`` is chosen (below: direct)."""

TRANSFORM_COST = 4.0
"""Weight of one transform operation against one multiply-add of the GEMM."""

MAX_COST_RATIO = 0.8
"""A Winograd convolution must cost at most this share of the direct one."""

WEIGHT_COST = 4.0
"""Multiply-adds one weight value streamed from memory (not from L2) costs."""


@dataclass(frozen=True)
class WinogradPolicy:
    """What the Winograd rule knows of the target: ``enabled`` (False: never rewrite), the
    vector ``lanes`` and the ``l2_bytes`` of one core (``Target.lanes``, ``Target.l2_bytes``)."""

    enabled: bool = True
    lanes: int = 16
    l2_bytes: int = 512 * 1024


DEFAULT_POLICY = WinogradPolicy()
"""The registered pass's policy (``optimize`` at ``-O3`` without a target): a 16-lane core
with 512 KB of L2."""


def winograd_tile(batch: int, in_c: int, out_c: int, out_h: int, out_w: int,
                  policy: WinogradPolicy = DEFAULT_POLICY) -> int:
    """The tile size ``m`` of ``F(m x m, 3x3)`` for a stride-1 3×3 convolution, or 0 (keep
    it direct): the module docstring's rules."""
    if not policy.enabled or min(batch, in_c, out_c) < 1:
        return 0
    side = min(out_h, out_w)
    m = 4 if side >= F4_MIN_OUTPUT else 2 if side >= F2_MIN_OUTPUT else 0
    if not m:
        return 0
    alpha = m + 2
    tiles = batch * -(-out_h // m) * -(-out_w // m)
    pairs = float(in_c * out_c)

    def streamed(values: float) -> float:   # per tile: a weight beyond L2 comes from memory
        return WEIGHT_COST * values / tiles if values * 4 > policy.l2_bytes else 0.0

    direct = 9.0 * m * m * pairs + streamed(9.0 * pairs)
    winograd = alpha * alpha * (pairs + TRANSFORM_COST * (4 * in_c + 3 * out_c)) \
        + streamed(alpha * alpha * pairs)
    if winograd > MAX_COST_RATIO * direct:
        return 0
    return m


def _closed(e: Expr) -> bool:
    """``e`` is built of constants and operator calls only (a bound weight)."""
    for node in post_order(e):
        if isinstance(node, (Var, Function)):
            return False
        if isinstance(node, Call) and not isinstance(node.op, Op):
            return False
    return True


def rewrite_winograd(node: Call, conv: Call, policy: WinogradPolicy) -> Expr | None:
    """The Winograd form of ``conv`` (the blocked convolution AlterOpLayout made of the
    original ``node``), or None when the rule does not apply (module docstring)."""
    if conv.attrs.get("out_layout") or not isinstance(node.checked_type, TensorType):
        return None
    attrs = normalized_attrs(node)
    if pair(attrs["strides"]) != (1, 1) or pair(attrs["dilation"]) != (1, 1) \
            or attrs["groups"] != 1:
        return None
    data_t, weight_t, out_t = (node.args[0].checked_type, node.args[1].checked_type,
                               node.checked_type)
    if not (isinstance(data_t, TensorType) and isinstance(weight_t, TensorType)
            and isinstance(out_t, TensorType)
            and data_t.dtype == weight_t.dtype == out_t.dtype == "float32"):
        return None
    kernel_layout = attrs["kernel_layout"]
    kshape = dict(zip(kernel_layout, weight_t.shape, strict=False))
    if len(kernel_layout) != 4 or kshape.get("H") != 3 or kshape.get("W") != 3:
        return None
    out_layout = attrs["out_layout"] or attrs["data_layout"]
    oshape = dict(zip(out_layout, out_t.shape, strict=False))
    dims = [oshape.get(a) for a in "NCHW"] + [kshape.get("I")]
    if len(out_layout) != 4 or not all(isinstance(d, int) for d in dims):
        return None
    batch, out_c, out_h, out_w, in_c = (int(d) for d in dims)  # type: ignore[arg-type]
    if not _closed(node.args[1]):
        return None
    m = winograd_tile(batch, in_c, out_c, out_h, out_w, policy)
    if not m:
        return None
    u = _transformed(conv.args[1], conv.attrs["kernel_layout"], m, in_c * out_c * (m + 2) ** 2)
    wattrs = {"tile_size": m, "padding": list(pad4(attrs["padding"])), "channels": out_c,
              "kernel_size": [3, 3], "data_layout": conv.attrs["data_layout"]}
    return Call(Op(WINOGRAD), (conv.args[0], u), Attrs(wattrs), span=conv.span)


def _transformed(weight: Expr, layout: str, m: int, elements: int) -> Expr:
    """``weight_transform(w in OIHW)``: a call FoldConstant folds, or (beyond its limit) the
    constant computed now."""
    from passes.fold_constant import MAX_FOLDED_ELEMENTS

    oihw: Expr = weight if layout == "OIHW" else Call(
        Op("layout_transform"), (weight,), Attrs({"src_layout": layout, "dst_layout": "OIHW"}),
        span=weight.span)
    u: Expr = Call(Op(WEIGHT_TRANSFORM), (oihw,), Attrs({"tile_size": m}), span=weight.span)
    if elements <= MAX_FOLDED_ELEMENTS:
        return u
    from interpreter import evaluate

    value: Any = evaluate(u, check=True)
    return Constant(frozen_array(np.asarray(value)), span=weight.span)

