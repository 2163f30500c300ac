"""Operators the model importers need beyond the core families: ``nn.lrn``.

* **nn.lrn** (local response normalization, as in AlexNet / GoogLeNet and ONNX ``LRN``):
  ``y = x / (bias + alpha / size * s) ** beta`` where ``s`` sums ``x**2`` over the
  ``size`` neighbours along ``axis`` — from ``c - (size - 1) // 2`` to
  ``c + ceil((size - 1) / 2)``, clipped at the edges, summed tap by tap in window order
  in the dtype. TVM's ``nn.lrn`` with the same attributes computes the same (it divides
  ``alpha`` by ``size`` too). Float tensors of any rank; the relation is the identity with
  ``axis`` checked.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from semantics.expr import Attrs
from semantics.ops import attr_checks as T
from semantics.ops.reference import reference
from semantics.ops.registry import AttrSpec, OpPattern, Relation, register_op
from semantics.ops.relations import FLOAT, normalize_axis, require_dtype_class
from semantics.ops.transform_relations import ArgTypes, expect_tensors
from semantics.shapes import DimSolver
from semantics.types import Type

FAMILY = "extra"


def _lrn_relation(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("LRN", arg_types, 1)
    if ts is None:
        return None
    (data,) = ts
    require_dtype_class("LRN", arg_types, data.dtype, FLOAT)
    normalize_axis("LRN", arg_types, attrs["axis"], data.ndim)
    return data


LRN = Relation("LRN", _lrn_relation, "Identity on float tensors, axis checked")


def _lrn(out: Type, data: np.ndarray, size: int, axis: int, alpha: float, beta: float,
         bias: float) -> np.ndarray:
    if data.ndim == 0 or data.size == 0:
        sq = data * data
        return data / (bias + alpha / size * sq) ** beta
    axis = axis % data.ndim
    moved = np.moveaxis(data, axis, 0)
    sq = (moved * moved).astype(data.dtype)
    c = moved.shape[0]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    padded = np.concatenate([np.zeros((lo,) + sq.shape[1:], sq.dtype), sq,
                             np.zeros((hi,) + sq.shape[1:], sq.dtype)])
    # The window sum tap by tap, in window order (as the compiled kernel sums): a running
    # sum's differences would lose small windows next to large ones (and give inf - inf).
    window = np.zeros_like(sq)
    for k in range(size):
        window = window + padded[k:k + c]
    scale = np.asarray(bias, data.dtype) + np.asarray(alpha / size, data.dtype) * window
    y = moved / scale ** np.asarray(beta, data.dtype)
    return np.moveaxis(y, 0, axis).astype(data.dtype, copy=False)


def _register(name: str, num_inputs: int, relation: Relation, pattern: OpPattern, compute: Any,
              doc: str, *attrs: AttrSpec) -> None:
    register_op(name, num_inputs=num_inputs, relation=relation, pattern=pattern,
                impl=reference(name, relation, compute), attrs=attrs, doc=doc, family=FAMILY)


_register("nn.lrn", 1, LRN, OpPattern.OPAQUE, _lrn,
          "Local response normalization across `axis` (AlexNet, GoogLeNet, ONNX LRN).",
          AttrSpec("size", "int", 5, check=T.check_at_least(1), doc="window length"),
          AttrSpec("axis", "int", 1, doc="the channel axis"),
          AttrSpec("alpha", "float", 1e-4, doc="scale (divided by size)"),
          AttrSpec("beta", "float", 0.75, doc="exponent"),
          AttrSpec("bias", "float", 2.0, doc="offset"))
