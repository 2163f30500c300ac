"""Type relations of the ``grad_ops`` family: Conv2DTranspose, Conv2DBackwardWeight, Pool2DGrad,
Pool2DPick (the operators that differentiation rules of the nn family need).

Protocol and dim conventions as in :mod:`semantics.ops.nn_relations` (concrete ints on the fast
path, ``?`` absorbing, SymPy expressions otherwise, equalities only through the ``DimSolver``;
``None`` while an argument is unknown). Every operator of the family takes float tensors of one
dtype; the convolutions' ``out_dtype`` ("" = that dtype) must be a float dtype too.

* **Conv2DTranspose** (``nn.conv2d_transpose(data, weight)``, layouts ``NCHW``/``IOHW``): data
  ``(N, I, H, W)``, weight ``(I, O/groups, KH, KW)`` (a conv2d ``OIHW`` weight read as ``IOHW``),
  result ``(N, O, H', W')`` with TVM's
  ``H' = (H - 1) * stride - pad_top - pad_bottom + dilation * (KH - 1) + 1 + output_padding``.
  ``output_padding`` must be smaller than the stride of its axis, so that ``nn.conv2d`` with the
  same attributes maps an ``H'`` input back to ``H`` outputs (the two are adjoint).
* **Conv2DBackwardWeight** (``nn.conv2d_backward_weight(grad, data)``, layouts
  ``NCHW``/``NCHW``/``OIHW``): grad ``(N, O, OH, OW)``, data ``(N, C, H, W)``; ``kernel_size``
  is required (strides make it ambiguous); result ``(O, C/groups, KH, KW)``. ``OH``/``OW`` must
  be the conv2d output extents of ``data`` under the attributes.
* **Pool2DGrad** (``nn.max_pool2d_grad``, ``nn.avg_pool2d_grad``: ``(out_grad, data)``): the
  data's type; ``out_grad`` must have exactly the type ``Pool2D`` gives ``data`` (in
  ``out_layout``).
* **Pool2DPick** (``nn.max_pool2d_pick(data, values)``): ``values`` has the data's type; the
  result has the pooled type ``Pool2D`` gives ``data``.
"""

from __future__ import annotations

from semantics.errors import InternalError
from semantics.expr import Attrs
from semantics.ops.nn_relations import POOL2D as _POOL2D
from semantics.ops.nn_relations import pad4, pair, window_out_dim
from semantics.ops.registry import Relation, relation_error
from semantics.ops.relations import FLOAT, require_dtype_class, require_dtype_match
from semantics.ops.transform_relations import ArgTypes, expect_tensors, unify_dims
from semantics.shapes import ANY, Dim, DimSolver, dim_add, dim_mul, exact_div
from semantics.types import TensorType, Type


def _float_pair(rel: str, arg_types: ArgTypes) -> tuple[TensorType, TensorType] | None:
    """The two arguments as tensors of one float dtype; None while one is unknown."""
    ts = expect_tensors(rel, arg_types, 2)
    if ts is None:
        return None
    dtype = require_dtype_match(rel, arg_types, ts)
    require_dtype_class(rel, arg_types, dtype, FLOAT)
    return ts[0], ts[1]


def _out_dtype(rel: str, arg_types: ArgTypes, data: TensorType, attrs: Attrs) -> str:
    """``out_dtype`` ("" = the inputs' dtype), which must be a float dtype."""
    out: str = attrs["out_dtype"] or data.dtype
    require_dtype_class(rel, arg_types, out, FLOAT, "out_dtype")
    return out


def _four_d(rel: str, arg_types: ArgTypes, *tensors: TensorType) -> None:
    for t in tensors:
        if t.ndim != 4:
            raise relation_error(rel, arg_types, "arguments must be 4-d")


def transpose_out_dim(rel: str, arg_types: ArgTypes, size: Dim, kernel: Dim, pad_lo: int,
                      pad_hi: int, stride: int, dilation: int, output_padding: int) -> Dim:
    """``(size - 1) * stride - pad_lo - pad_hi + dilation * (kernel - 1) + 1 + output_padding``.

    Raises:
        RelayTypeError: a concrete result below zero.
    """
    if size is ANY or kernel is ANY:
        return ANY
    out = dim_add(dim_mul(dim_add(size, -1), stride), -(pad_lo + pad_hi),
                  dim_mul(dilation, dim_add(kernel, -1)), 1 + output_padding)
    if isinstance(out, int) and out < 0:
        raise relation_error(rel, arg_types, f"the padding exceeds the output extent ({out})")
    return out


def _conv2d_transpose(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    rel = "Conv2DTranspose"
    ts = _float_pair(rel, arg_types)
    if ts is None:
        return None
    data, weight = ts
    _four_d(rel, arg_types, data, weight)
    n, c, h, w = data.shape
    i, og, kh, kw = weight.shape
    groups = attrs["groups"]
    unify_dims(solver, rel, arg_types, c, i, "data channels vs. weight input channels")
    if isinstance(c, int) and c % groups:
        raise relation_error(rel, arg_types, f"groups {groups} does not divide the {c} input "
                                             "channels")
    o = dim_mul(og, groups)
    if attrs["channels"] is not None:
        o = unify_dims(solver, rel, arg_types, o, attrs["channels"], "channels attribute")
    if attrs["kernel_size"] is not None:
        ks = pair(attrs["kernel_size"])
        kh = unify_dims(solver, rel, arg_types, kh, ks[0], "kernel_size attribute (height)")
        kw = unify_dims(solver, rel, arg_types, kw, ks[1], "kernel_size attribute (width)")
    sh, sw = pair(attrs["strides"])
    dh, dw = pair(attrs["dilation"])
    pt, pl, pb, pr = pad4(attrs["padding"])
    oph, opw = pair(attrs["output_padding"])
    if oph >= sh or opw >= sw:
        raise relation_error(rel, arg_types, f"output_padding {[oph, opw]} must be smaller than "
                                             f"the strides {[sh, sw]}")
    oh = transpose_out_dim(rel, arg_types, h, kh, pt, pb, sh, dh, oph)
    ow = transpose_out_dim(rel, arg_types, w, kw, pl, pr, sw, dw, opw)
    return TensorType((n, o, oh, ow), _out_dtype(rel, arg_types, data, attrs))


CONV2D_TRANSPOSE = Relation(
    "Conv2DTranspose", _conv2d_transpose,
    "transposed 2-d convolution (NCHW data, IOHW weight): the adjoint of conv2d in its data")


def _conv2d_backward_weight(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver
                            ) -> Type | None:
    rel = "Conv2DBackwardWeight"
    ts = _float_pair(rel, arg_types)
    if ts is None:
        return None
    grad, data = ts
    _four_d(rel, arg_types, grad, data)
    gn, o, oh, ow = grad.shape
    n, c, h, w = data.shape
    unify_dims(solver, rel, arg_types, gn, n, "batch of grad vs. data")
    groups = attrs["groups"]
    cg = exact_div(c, groups) if c is not ANY else ANY
    if cg is None:
        raise relation_error(rel, arg_types, f"groups {groups} does not divide the {c} data "
                                             "channels")
    if isinstance(o, int) and o % groups:
        raise relation_error(rel, arg_types, f"groups {groups} does not divide the {o} output "
                                             "channels")
    if attrs["channels"] is not None:
        o = unify_dims(solver, rel, arg_types, o, attrs["channels"], "channels attribute")
    kh, kw = pair(attrs["kernel_size"])
    sh, sw = pair(attrs["strides"])
    dh, dw = pair(attrs["dilation"])
    pt, pl, pb, pr = pad4(attrs["padding"])
    unify_dims(solver, rel, arg_types, oh,
               window_out_dim(rel, arg_types, h, kh, pt, pb, sh, dh), "grad height vs. the "
               "convolution's output height")
    unify_dims(solver, rel, arg_types, ow,
               window_out_dim(rel, arg_types, w, kw, pl, pr, sw, dw), "grad width vs. the "
               "convolution's output width")
    return TensorType((o, cg, kh, kw), _out_dtype(rel, arg_types, data, attrs))


CONV2D_BACKWARD_WEIGHT = Relation(
    "Conv2DBackwardWeight", _conv2d_backward_weight,
    "the OIHW weight gradient of conv2d from (grad, data): the adjoint of conv2d in its weight")


def _pooled(data: TensorType, attrs: Attrs, solver: DimSolver) -> TensorType:
    pooled = _POOL2D((data,), attrs, solver)
    if not isinstance(pooled, TensorType):
        raise InternalError(f"Pool2D of a known tensor gave {pooled!r}")
    return pooled


def _unify_types(rel: str, arg_types: ArgTypes, solver: DimSolver, got: TensorType,
                 want: TensorType, what: str) -> None:
    if got.ndim != want.ndim:
        raise relation_error(rel, arg_types, f"{what} must be {want.ndim}-d")
    for axis, (a, b) in enumerate(zip(got.shape, want.shape, strict=True)):
        unify_dims(solver, rel, arg_types, a, b, f"{what} axis {axis}")


def _pool2d_grad(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    rel = "Pool2DGrad"
    ts = _float_pair(rel, arg_types)
    if ts is None:
        return None
    out_grad, data = ts
    pooled = _pooled(data, attrs, solver)
    _unify_types(rel, arg_types, solver, out_grad, pooled, "out_grad vs. the pooled data")
    return data


POOL2D_GRAD = Relation("Pool2DGrad", _pool2d_grad,
                       "the data's type; out_grad has the type Pool2D gives the data")


def _pool2d_pick(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    rel = "Pool2DPick"
    ts = _float_pair(rel, arg_types)
    if ts is None:
        return None
    data, values = ts
    pooled = _pooled(data, attrs, solver)
    _unify_types(rel, arg_types, solver, values, data, "values vs. data")
    return pooled


POOL2D_PICK = Relation("Pool2DPick", _pool2d_pick,
                       "the type Pool2D gives the data; values have the data's type")
