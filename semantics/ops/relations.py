"""Shared, named type relations and the helpers every operator family builds on.

What lives here (paper §3.3.2 "type relations"; RULES.md "Typing", rule Type-Call with
relations):

* **dim and shape helpers** — :func:`broadcast_dim` / :func:`broadcast_shapes` (NumPy/TVM
  broadcasting over concrete, ``?`` and symbolic dims), :func:`normalize_axis`,
  :func:`reduce_axes` / :func:`reduced_shape`, dtype-class checks
  (:func:`require_dtype_class`, :func:`require_dtype_match`), :func:`require_scalar`;
* **the reusable relations**, each a :class:`~semantics.ops.registry.Relation` named as in
  TVM: ``Identity``, ``Broadcast``, ``BroadcastCompare`` (bool result), ``Cast``, ``Clip``,
  ``Where``, ``Reduce``, ``ArgReduce``, ``Variance``, ``InitOp``, ``Full``, ``FullLike``,
  ``Arange``.  Factories (:func:`identity_relation`, :func:`broadcast_relation`,
  :func:`reduce_relation`) build variants that also restrict the dtype class (the name stays
  the TVM name, so error messages read "relation Broadcast failed ...");

The reference implementations' contract and helpers are in :mod:`semantics.ops.reference`;
dim arithmetic and canonical forms in :mod:`semantics.shapes`.

Broadcasting rules (TVM's ``BroadcastShape``; dims aligned from the right, the shorter
shape padded with 1s), for one pair of dims ``a``, ``b``:

====================  =========================================================
``a == 1``            ``b``
``b == 1``            ``a``
``a`` is ``?``        ``b`` (``?`` with ``?`` is ``?``)
``b`` is ``?``        ``a``
otherwise             ``solver.equal(a, b)`` must hold — equal concrete ints take the fast
                      path; symbolic dims must be provably equal (``n`` and ``n``
                      unify; ``n`` and ``m`` or ``n`` and ``3`` are an error).
====================  =========================================================

As in TVM, ``?`` against a symbolic ``n`` gives ``n`` (the run-time check that ``?`` is 1
or ``n`` is the backend's business); a symbolic dim is treated as 1 only when it *is* the
constant 1.

Invariants: relations never touch SymPy for concrete dims; they return ``None`` while an
argument they need is not yet known (an ``IncompleteType`` / ``TypeVar``); every failure is
a ``RelayTypeError`` built by :func:`~semantics.ops.registry.relation_error`, naming the
relation and the argument types.  ``attrs`` reaching a relation are normalized (defaults
filled) by ``OpDef.normalize_attrs``.
"""

from __future__ import annotations

from collections.abc import Sequence

from semantics.dtypes import split_lanes
from semantics.errors import InternalError
from semantics.expr import Attrs
from semantics.ops.registry import Relation, is_known, relation_error, tensor_args
from semantics.shapes import ANY, Dim, DimSolver, canon_dim, dim_str, is_one
from semantics.types import TensorType, Type

# --- dtype classes ------------------------------------------------------------------------

ANY_DTYPE = "any"
NUMERIC = "numeric"        # signed/unsigned integers and floats (not bool)
FLOAT = "float"
INTEGER = "integer"        # signed and unsigned integers
BOOL = "bool"

_CLASS_TEXT = {ANY_DTYPE: "any dtype", NUMERIC: "a numeric dtype (integer or float)",
               FLOAT: "a float dtype", INTEGER: "an integer dtype", BOOL: "bool"}


def dtype_in_class(dtype: str, cls: str) -> bool:
    """Whether ``dtype`` (lanes allowed: the class of ``float32x4`` is float) is in ``cls``."""
    base, _ = split_lanes(dtype)
    if cls == ANY_DTYPE:
        return True
    if cls == BOOL:
        return base == "bool"
    if cls == FLOAT:
        return base.startswith("float")
    if cls == INTEGER:
        return base.startswith(("int", "uint"))
    if cls == NUMERIC:
        return base != "bool"
    raise InternalError(f"unknown dtype class {cls}")


def require_dtype_class(rel: str, arg_types: tuple[Type, ...], dtype: str, cls: str,
                        what: str = "argument") -> None:
    """Raise the relation's error unless ``dtype`` is in ``cls``.

    Args:
        rel: relation name for the message; arg_types: shown in the message.
        dtype: the dtype to test; cls: one of ANY_DTYPE, NUMERIC, FLOAT, INTEGER, BOOL.
        what: how to call the tensor in the message ("argument", "condition", ...).
    Raises:
        RelayTypeError: ``relation <rel> failed for (...): <what> must have <cls>, found ...``.
    """
    if not dtype_in_class(dtype, cls):
        raise relation_error(rel, arg_types, f"{what} must have {_CLASS_TEXT[cls]}, "
                                             f"found {dtype}")


def require_dtype_match(rel: str, arg_types: tuple[Type, ...],
                        tensors: Sequence[TensorType]) -> str:
    """The common dtype of ``tensors``; the relation's error if they differ (TVM requires it).

    Returns:
        The shared dtype string.
    Raises:
        RelayTypeError: ``... dtypes differ: int32 vs float32``.
    """
    first = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype != first:
            raise relation_error(rel, arg_types, f"dtypes differ: {first} vs {t.dtype}")
    return first


def require_arity(rel: str, arg_types: tuple[Type, ...], n: int) -> None:
    """The relation's error unless exactly ``n`` arguments were given."""
    if len(arg_types) != n:
        raise relation_error(rel, arg_types,
                             f"expected {n} argument{'s' if n != 1 else ''}, "
                             f"got {len(arg_types)}")


def require_scalar(rel: str, arg_types: tuple[Type, ...], t: TensorType, what: str) -> None:
    """The relation's error unless ``t`` is rank 0 (``Tensor[(), dtype]``)."""
    if t.shape:
        raise relation_error(rel, arg_types,
                             f"{what} must be a scalar (rank 0), found rank {len(t.shape)}")


# --- dims and shapes ----------------------------------------------------------------------

def broadcast_dim(rel: str, arg_types: tuple[Type, ...], a: Dim, b: Dim,
                  solver: DimSolver) -> Dim:
    """The broadcast of two dims (table in the module docstring).

    Raises:
        RelayTypeError: the dims are incompatible (or not provably equal).
    """
    if not (isinstance(a, int) and isinstance(b, int)):
        a, b = canon_dim(a), canon_dim(b)
    if isinstance(a, int) and isinstance(b, int):   # fast path: no SymPy
        if a == b or b == 1:
            return a
        if a == 1:
            return b
        raise relation_error(rel, arg_types, f"shapes are not broadcastable: "
                                             f"dimensions {a} and {b} differ")
    if is_one(a):
        return b
    if is_one(b):
        return a
    if a is ANY:
        return b
    if b is ANY:
        return a
    verdict = solver.equal(a, b)
    if verdict is True:
        return a if isinstance(a, int) or not isinstance(b, int) else b
    how = "differ" if verdict is False else "cannot be proven equal"
    raise relation_error(rel, arg_types, f"shapes are not broadcastable: dimensions "
                                         f"{dim_str(a)} and {dim_str(b)} {how}")


def broadcast_shapes(rel: str, arg_types: tuple[Type, ...], a: Sequence[Dim],
                     b: Sequence[Dim], solver: DimSolver) -> tuple[Dim, ...]:
    """NumPy/TVM broadcasting of two shapes (aligned from the right).

    Args:
        rel, arg_types: for the error message.
        a, b: the two shapes; solver: decides symbolic equalities.
    Returns:
        The broadcast shape, of rank ``max(len(a), len(b))``.
    Raises:
        RelayTypeError: some pair of dims is incompatible.
    """
    na, nb = len(a), len(b)
    n = max(na, nb)
    out: list[Dim] = []
    for i in range(n):
        da = a[i - (n - na)] if i >= n - na else 1
        db = b[i - (n - nb)] if i >= n - nb else 1
        out.append(broadcast_dim(rel, arg_types, da, db, solver))
    return tuple(out)


def normalize_axis(rel: str, arg_types: tuple[Type, ...], axis: int, ndim: int) -> int:
    """``axis`` in ``[-ndim, ndim)`` mapped to ``[0, ndim)``.

    Raises:
        RelayTypeError: ``axis <a> is out of range for rank <n>``.
    """
    if not -ndim <= axis < ndim:
        raise relation_error(rel, arg_types, f"axis {axis} is out of range for rank {ndim}")
    return axis + ndim if axis < 0 else axis


def reduce_axes(rel: str, arg_types: tuple[Type, ...], axis: Sequence[int] | None, ndim: int,
                exclude: bool) -> tuple[int, ...]:
    """The sorted axes a reduction folds (TVM's ``GetReduceAxes``).

    ``axis=None`` or an empty list means every axis (whatever ``exclude`` says, as in TVM);
    otherwise each axis is normalized, duplicates are an error, and with ``exclude`` the
    complement is reduced.

    Raises:
        RelayTypeError: an axis out of range or given twice.
    """
    if axis is None or len(axis) == 0:
        return tuple(range(ndim))
    seen: list[int] = []
    for a in axis:
        k = normalize_axis(rel, arg_types, a, ndim)
        if k in seen:
            raise relation_error(rel, arg_types, f"axis {a} is given twice")
        seen.append(k)
    chosen = sorted(seen)
    if exclude:
        return tuple(i for i in range(ndim) if i not in chosen)
    return tuple(chosen)


def reduced_shape(shape: Sequence[Dim], axes: Sequence[int], keepdims: bool) -> tuple[Dim, ...]:
    """``shape`` with ``axes`` dropped (or set to 1 when ``keepdims``)."""
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


# --- relations: elementwise ---------------------------------------------------------------

def identity_relation(cls: str = ANY_DTYPE, name: str = "Identity") -> Relation:
    """``fn(Tensor[s, t]) -> Tensor[s, t]`` for ``t`` in the dtype class ``cls``."""

    def rel(arg_types: tuple[Type, ...], attrs: Attrs, solver: DimSolver) -> Type | None:
        require_arity(name, arg_types, 1)
        ts = tensor_args(name, arg_types)
        if ts is None:
            return None
        require_dtype_class(name, arg_types, ts[0].dtype, cls)
        return TensorType(ts[0].shape, ts[0].dtype)

    return Relation(name, rel, f"result = argument type ({_CLASS_TEXT[cls]})")


def broadcast_relation(cls: str = NUMERIC, result_dtype: str | None = None,
                       name: str = "Broadcast") -> Relation:
    """Binary broadcast: equal dtypes in ``cls``, broadcast shapes.

    ``result_dtype=None`` keeps the operand dtype; ``"bool"`` makes a comparison (the
    lanes of a vector operand carry over: ``float32x4`` compares to ``boolx4``).
    """

    def rel(arg_types: tuple[Type, ...], attrs: Attrs, solver: DimSolver) -> Type | None:
        require_arity(name, arg_types, 2)
        ts = tensor_args(name, arg_types)
        if ts is None:
            return None
        dtype = require_dtype_match(name, arg_types, ts)
        require_dtype_class(name, arg_types, dtype, cls, "operands")
        shape = broadcast_shapes(name, arg_types, ts[0].shape, ts[1].shape, solver)
        out = dtype
        if result_dtype is not None:
            _, lanes = split_lanes(dtype)
            out = result_dtype if lanes == 1 else f"{result_dtype}x{lanes}"
        return TensorType(shape, out)

    what = "bool result" if result_dtype == "bool" else "operand dtype"
    return Relation(name, rel, f"equal dtypes ({_CLASS_TEXT[cls]}), broadcast shape, {what}")


IDENTITY = identity_relation()
BROADCAST = broadcast_relation()
BROADCAST_COMPARE = broadcast_relation(ANY_DTYPE, "bool", "BroadcastCompare")


def _cast_rel(arg_types: tuple[Type, ...], attrs: Attrs, solver: DimSolver) -> Type | None:
    require_arity("Cast", arg_types, 1)
    ts = tensor_args("Cast", arg_types)
    if ts is None:
        return None
    return TensorType(ts[0].shape, attrs["dtype"])


CAST = Relation("Cast", _cast_rel, "same shape, dtype from the 'dtype' attribute")


def _clip_rel(arg_types: tuple[Type, ...], attrs: Attrs, solver: DimSolver) -> Type | None:
    require_arity("Clip", arg_types, 1)
    ts = tensor_args("Clip", arg_types)
    if ts is None:
        return None
    require_dtype_class("Clip", arg_types, ts[0].dtype, NUMERIC)
    return TensorType(ts[0].shape, ts[0].dtype)


CLIP = Relation("Clip", _clip_rel, "Identity on numeric tensors (bounds are attributes)")


def _where_rel(arg_types: tuple[Type, ...], attrs: Attrs, solver: DimSolver) -> Type | None:
    require_arity("Where", arg_types, 3)
    ts = tensor_args("Where", arg_types)
    if ts is None:
        return None
    cond, x, y = ts
    dtype = require_dtype_match("Where", arg_types, (x, y))
    xy = broadcast_shapes("Where", arg_types, x.shape, y.shape, solver)
    shape = broadcast_shapes("Where", arg_types, cond.shape, xy, solver)
    return TensorType(shape, dtype)


WHERE = Relation("Where", _where_rel,
                 "x, y of one dtype; condition of any dtype (nonzero = true); all broadcast")


# --- relations: reductions ----------------------------------------------------------------

def reduce_relation(cls: str = NUMERIC, name: str = "Reduce", *, result_dtype: str | None = None,
                    min_rank: int = 0) -> Relation:
    """``Reduce``/``ArgReduce``: one tensor in ``cls``; ``axis``/``keepdims``/``exclude`` attrs.

    ``result_dtype`` overrides the dtype (``int32`` for ArgReduce); ``min_rank`` = 1 rejects
    scalars (TVM's ArgReduce does).
    """

    def rel(arg_types: tuple[Type, ...], attrs: Attrs, solver: DimSolver) -> Type | None:
        require_arity(name, arg_types, 1)
        ts = tensor_args(name, arg_types)
        if ts is None:
            return None
        data = ts[0]
        require_dtype_class(name, arg_types, data.dtype, cls)
        if data.ndim < min_rank:
            raise relation_error(name, arg_types, "the input must have rank at least "
                                                  f"{min_rank}")
        axes = _reduce_axes_of(name, arg_types, attrs, data.ndim)
        shape = reduced_shape(data.shape, axes, attrs["keepdims"])
        return TensorType(shape, result_dtype or data.dtype)

    return Relation(name, rel, f"reduce over 'axis' ({_CLASS_TEXT[cls]})")


def _reduce_axes_of(name: str, arg_types: tuple[Type, ...], attrs: Attrs,
                    ndim: int) -> tuple[int, ...]:
    axis = attrs["axis"]
    if attrs["exclude"] and axis is None:
        raise relation_error(name, arg_types, "exclude=True needs an explicit axis list")
    return reduce_axes(name, arg_types, axis, ndim, attrs["exclude"])


REDUCE = reduce_relation()
ARG_REDUCE = reduce_relation(NUMERIC, "ArgReduce", result_dtype="int32", min_rank=1)


def _variance_rel(arg_types: tuple[Type, ...], attrs: Attrs, solver: DimSolver) -> Type | None:
    name = "Variance"
    require_arity(name, arg_types, 2)
    ts = tensor_args(name, arg_types)
    if ts is None:
        return None
    data, mean = ts
    dtype = require_dtype_match(name, arg_types, ts)
    require_dtype_class(name, arg_types, dtype, FLOAT)
    if data.ndim == 0:
        raise relation_error(name, arg_types, "the input must have rank at least 1")
    if mean.ndim != data.ndim:
        raise relation_error(name, arg_types, f"the mean must have the input's rank {data.ndim}, "
                                              f"found rank {mean.ndim}")
    joined = broadcast_shapes(name, arg_types, data.shape, mean.shape, solver)
    for d, j in zip(data.shape, joined):
        if canon_dim(d) is ANY or canon_dim(j) is ANY:
            continue
        if is_one(canon_dim(d)) and not is_one(canon_dim(j)):
            raise relation_error(name, arg_types, "the mean must broadcast to the input's shape")
    axes = _reduce_axes_of(name, arg_types, attrs, data.ndim)
    return TensorType(reduced_shape(data.shape, axes, attrs["keepdims"]), dtype)


VARIANCE = Relation("Variance", _variance_rel,
                    "variance(data, mean): float data, mean of the same rank broadcasting to it")


# --- relations: creation ------------------------------------------------------------------

def _init_rel(arg_types: tuple[Type, ...], attrs: Attrs, solver: DimSolver) -> Type | None:
    require_arity("InitOp", arg_types, 0)
    return TensorType(tuple(attrs["shape"]), attrs["dtype"])


INIT_OP = Relation("InitOp", _init_rel, "no inputs; shape and dtype from the attributes")


def _full_rel(arg_types: tuple[Type, ...], attrs: Attrs, solver: DimSolver) -> Type | None:
    require_arity("Full", arg_types, 1)
    ts = tensor_args("Full", arg_types)
    if ts is None:
        return None
    require_scalar("Full", arg_types, ts[0], "the fill value")
    dtype = attrs["dtype"] or ts[0].dtype
    return TensorType(tuple(attrs["shape"]), dtype)


FULL = Relation("Full", _full_rel,
                "scalar fill value; shape from 'shape', dtype from 'dtype' (else the fill's)")


def _full_like_rel(arg_types: tuple[Type, ...], attrs: Attrs, solver: DimSolver) -> Type | None:
    require_arity("FullLike", arg_types, 2)
    ts = tensor_args("FullLike", arg_types)
    if ts is None:
        return None
    require_scalar("FullLike", arg_types, ts[1], "the fill value")
    return TensorType(ts[0].shape, ts[0].dtype)


FULL_LIKE = Relation("FullLike", _full_like_rel, "the data's type; scalar fill value")


def _arange_rel(arg_types: tuple[Type, ...], attrs: Attrs, solver: DimSolver) -> Type | None:
    require_arity("Arange", arg_types, 3)
    dtype = attrs["dtype"]
    for t in arg_types:
        if is_known(t):
            if not isinstance(t, TensorType):
                raise relation_error("Arange", arg_types, "expected tensor arguments")
            require_scalar("Arange", arg_types, t, "start, stop and step")
            if t.dtype != dtype:
                raise relation_error("Arange", arg_types,
                                     f"start, stop and step must have dtype {dtype} "
                                     f"(the 'dtype' attribute), found {t.dtype}")
    require_dtype_class("Arange", arg_types, dtype, NUMERIC, "the 'dtype' attribute")
    return TensorType((ANY,), dtype)


ARANGE = Relation("Arange", _arange_rel,
                  "three scalars of the 'dtype' attribute; result Tensor[(?), dtype]")
