"""Relay's memory dialect: ``memory.alloc_storage``, ``memory.alloc_tensor``, ``memory.kill``,
``vm.reshape_tensor`` and ``vm.shape_of`` (family ``memory``).

TVM's VM compiler rewrites a program into these operators when it makes allocation explicit
(``ManifestAlloc``, ``ManifestLifetimes``), and its tests print and parse programs that use
them.  Here they parse, type-check and evaluate with the meaning TVM gives them; the facts
below are those of TVM v0.19.0 (``src/relay/op/memory/memory.cc``, ``src/relay/op/vm/vm.cc``).

* ``memory.alloc_storage(size, shape, alignment, dtype="float32", virtual_device=None)``:
  ``size`` and ``alignment`` are ``int64`` scalars, ``shape`` any tensor (TVM reads it for 2-d
  texture storage; a flat buffer ignores it).  The result has the type ``Storage`` — the
  prelude's ADT without constructors, ``type Storage {}``, written ``Storage`` or ``Storage[]``
  as TVM prints it (relation ``AllocStorage``).  Its value is a zero-filled region of ``size``
  bytes (:class:`StorageValue`); TVM's memory is uninitialized, ours is zeros so that every
  evaluation is deterministic.  A negative size, or an alignment that is not a positive power
  of two, is a ``RelayRuntimeError``.  ``dtype`` is a hint and ``virtual_device`` a placement
  (any value): neither changes the value.
* ``memory.alloc_tensor(storage, offset, shape, dtype="float32", const_shape=None,
  assert_shape=None)``: a tensor of ``dtype`` viewing ``storage``'s bytes from byte ``offset``
  (an integer scalar).  ``shape`` is a 1-d integer tensor; the static shape is ``const_shape``
  (its length must be ``shape``'s) or else ``assert_shape``; one of them is required
  (relation ``AllocTensor``).  At run time ``shape`` must hold exactly that shape and the
  tensor must lie inside the storage (``offset >= 0``, ``offset + bytes <= size``); otherwise
  a ``RelayRuntimeError``.  Nothing writes a storage, so the tensor holds the storage's bytes
  as they were allocated (zeros).
* ``memory.kill(x)``: frees ``x`` in TVM's VM; in the reference a no-op on any value,
  returning ``()`` (relation ``Kill``: any type to unit).
* ``vm.reshape_tensor(data, shape, newshape=[...])``: ``data`` reshaped (row-major) to
  ``newshape``; ``shape`` is a 1-d integer tensor that must hold ``newshape`` at run time, and
  the element counts must agree (relation ``ReshapeTensor``; TVM does not check the count).
* ``vm.shape_of(data, dtype="int64")``: ``data``'s shape as a 1-d tensor (relation
  ``ShapeOf``, as ``shape_of`` whose default dtype is ``int32``).

All five are opaque to fusion, as in TVM.  ``vm.invoke_tvm_op`` and ``vm.shape_func`` are not
registered: they write into their output arguments, which has no meaning for immutable
values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semantics.dtypes import is_bool
from semantics.errors import RelayRuntimeError
from semantics.expr import Attrs
from semantics.ops import attr_checks as C
from semantics.ops.reference import as_relay_array, concrete_shape, np_dtype, reference
from semantics.ops.registry import AttrSpec, OpPattern, Relation, is_known, register_op
from semantics.ops.registry import relation_error as _error
from semantics.ops.relations import require_arity
from semantics.ops.transform import _check_shape_dtype, _shape_of
from semantics.ops.transform_relations import SHAPE_OF, ArgTypes, expect_tensors
from semantics.shapes import DimSolver
from semantics.types import GlobalTypeVar, TensorType, Type, TypeCall, unit_type

FAMILY = "memory"
STORAGE = "Storage"


def storage_type() -> TypeCall:
    """The type ``Storage[]`` of a storage value (the prelude's ``type Storage {}``)."""
    return TypeCall(GlobalTypeVar(STORAGE), ())


def is_storage_type(t: Type) -> bool:
    """Whether ``t`` is ``Storage`` (written ``Storage`` or ``Storage[]``)."""
    if isinstance(t, TypeCall):
        return t.func.name == STORAGE and not t.args
    return isinstance(t, GlobalTypeVar) and t.name == STORAGE


@dataclass(eq=False)
class StorageValue:
    """A region of memory (the value of ``memory.alloc_storage``): zero-filled bytes."""

    data: np.ndarray = field(repr=False)
    alignment: int
    dtype_hint: str

    @property
    def size(self) -> int:
        return int(self.data.size)

    def __repr__(self) -> str:
        return f"<Storage {self.size} bytes, alignment {self.alignment}>"


# --- relations ---------------------------------------------------------------------------------

def _int64_scalar(rel: str, arg_types: ArgTypes, t: TensorType, what: str) -> None:
    if t.dtype != "int64" or t.shape:
        raise _error(rel, arg_types, f"{what} must be an int64 scalar, found {t.dtype} of rank "
                                     f"{t.ndim}")


def _shape_tensor(rel: str, arg_types: ArgTypes, t: TensorType) -> int | None:
    """The length of a 1-d integer shape tensor (None when it is not a known int)."""
    if t.ndim != 1 or not t.dtype.startswith(("int", "uint")):
        raise _error(rel, arg_types, f"shape must be a 1-d integer tensor, found {t.dtype} of "
                                     f"rank {t.ndim}")
    n = t.shape[0]
    return n if isinstance(n, int) else None


def _alloc_storage_rel(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("AllocStorage", arg_types, 3)
    if ts is None:
        return None
    _int64_scalar("AllocStorage", arg_types, ts[0], "size")
    _int64_scalar("AllocStorage", arg_types, ts[2], "alignment")
    return storage_type()


def _alloc_tensor_rel(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    require_arity("AllocTensor", arg_types, 3)
    storage, offset, shape = arg_types
    if not all(is_known(t) for t in arg_types):
        return None
    if not is_storage_type(storage):
        raise _error("AllocTensor", arg_types, "the first argument must be a Storage")
    if not isinstance(offset, TensorType) or offset.shape or \
            not offset.dtype.startswith(("int", "uint")):
        raise _error("AllocTensor", arg_types, "offset must be an integer scalar")
    if not isinstance(shape, TensorType):
        raise _error("AllocTensor", arg_types, "shape must be a 1-d integer tensor")
    rank = _shape_tensor("AllocTensor", arg_types, shape)
    static = attrs["const_shape"] if attrs["const_shape"] is not None else attrs["assert_shape"]
    if static is None:
        raise _error("AllocTensor", arg_types, "the static shape is unknown: give const_shape "
                                               "or assert_shape")
    if rank is not None and rank != len(static):
        raise _error("AllocTensor", arg_types, f"the shape tensor has {rank} elements but the "
                                               f"static shape {list(static)} has {len(static)}")
    return TensorType(tuple(static), attrs["dtype"])


def _kill_rel(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    require_arity("Kill", arg_types, 1)
    return unit_type()


def _reshape_tensor_rel(arg_types: ArgTypes, attrs: Attrs, solver: DimSolver) -> Type | None:
    ts = expect_tensors("ReshapeTensor", arg_types, 2)
    if ts is None:
        return None
    data, shape = ts
    newshape = tuple(attrs["newshape"])
    rank = _shape_tensor("ReshapeTensor", arg_types, shape)
    if rank is not None and rank != len(newshape):
        raise _error("ReshapeTensor", arg_types, f"the shape tensor has {rank} elements but "
                                                 f"newshape {list(newshape)} has {len(newshape)}")
    dims = [d for d in data.shape if isinstance(d, int)]
    if len(dims) == data.ndim:
        count = math.prod(dims)
        if count != math.prod(newshape):
            raise _error("ReshapeTensor", arg_types, f"cannot reshape {count} elements to "
                                                     f"{list(newshape)}")
    return TensorType(newshape, data.dtype)


ALLOC_STORAGE = Relation("AllocStorage", _alloc_storage_rel,
                         "int64 size and alignment, any shape tensor -> Storage")
ALLOC_TENSOR = Relation("AllocTensor", _alloc_tensor_rel,
                        "Storage, integer offset, 1-d shape -> Tensor[const_shape or "
                        "assert_shape, dtype]")
KILL = Relation("Kill", _kill_rel, "any type -> ()")
RESHAPE_TENSOR = Relation("ReshapeTensor", _reshape_tensor_rel,
                          "data, 1-d shape -> Tensor[newshape, data's dtype], element count kept")


# --- references --------------------------------------------------------------------------------

def _alloc_storage(size: Any, shape: Any, alignment: Any, *, dtype: str = "float32",
                   virtual_device: Any = None) -> StorageValue:
    op = "memory.alloc_storage"
    n = int(as_relay_array(size, op))
    align = int(as_relay_array(alignment, op))
    as_relay_array(shape, op)
    if n < 0:
        raise RelayRuntimeError(f"{op}: negative size {n}")
    if align <= 0 or align & (align - 1):
        raise RelayRuntimeError(f"{op}: alignment {align} is not a positive power of two")
    try:
        data = np.zeros(n, dtype=np.uint8)
    except (MemoryError, ValueError) as exc:
        raise RelayRuntimeError(f"{op}: cannot allocate {n} bytes") from exc
    return StorageValue(data, align, dtype)


def _alloc_tensor(storage: Any, offset: Any, shape: Any, *, dtype: str = "float32",
                  const_shape: Any = None, assert_shape: Any = None) -> np.ndarray:
    op = "memory.alloc_tensor"
    if not isinstance(storage, StorageValue):
        raise RelayRuntimeError(f"{op}: the first argument must be a storage, got "
                                f"{type(storage).__name__}")
    start = int(as_relay_array(offset, op))
    dims = tuple(int(d) for d in as_relay_array(shape, op).reshape(-1))
    static = tuple(const_shape if const_shape is not None else assert_shape or ())
    if dims != static:
        raise RelayRuntimeError(f"{op}: the shape tensor holds {list(dims)}, the static shape "
                                f"is {list(static)}")
    element = np_dtype(dtype)
    nbytes = int(np.prod(dims, dtype=np.int64)) * element.itemsize
    if start < 0 or start + nbytes > storage.size:
        raise RelayRuntimeError(f"{op}: a tensor of {nbytes} bytes at offset {start} does not "
                                f"fit a storage of {storage.size} bytes")
    raw = storage.data[start:start + nbytes].copy()
    return raw.view(element).reshape(dims)


def _kill(x: Any) -> tuple[()]:
    return ()


def _reshape_tensor(out: Type, data: np.ndarray, shape: np.ndarray, newshape: Any
                    ) -> np.ndarray:
    target = concrete_shape(out)
    held = tuple(int(d) for d in shape.reshape(-1))
    if held != target:
        raise RelayRuntimeError(f"vm.reshape_tensor: the shape tensor holds {list(held)}, "
                                f"newshape is {list(target)}")
    return data.reshape(target)


def _check_alloc_dtype(v: Any) -> str | None:
    return "must not be bool" if is_bool(v) else None


register_op("memory.alloc_storage", num_inputs=3, relation=ALLOC_STORAGE,
            pattern=OpPattern.OPAQUE, impl=_alloc_storage, family=FAMILY,
            doc="Allocate a zero-filled storage of size bytes (int64) with the given alignment.",
            attrs=(AttrSpec("dtype", "dtype", "float32", doc="the dtype hint"),
                   AttrSpec("virtual_device", "any", None, doc="the placement (ignored)")))
register_op("memory.alloc_tensor", num_inputs=3, relation=ALLOC_TENSOR,
            pattern=OpPattern.OPAQUE, impl=_alloc_tensor, family=FAMILY,
            doc="A tensor of dtype viewing a storage's bytes from an offset, of a static shape.",
            attrs=(AttrSpec("dtype", "dtype", "float32", check=_check_alloc_dtype,
                            doc="the element dtype"),
                   AttrSpec("const_shape", "optional_ints", None,
                            check=C.check_ints_len(minimum=0), doc="the constant shape"),
                   AttrSpec("assert_shape", "optional_ints", None,
                            check=C.check_ints_len(minimum=0), doc="the asserted shape")))
register_op("memory.kill", num_inputs=1, relation=KILL, pattern=OpPattern.OPAQUE, impl=_kill,
            family=FAMILY, doc="Free a value (TVM's VM); the reference returns ().")
register_op("vm.reshape_tensor", num_inputs=2, relation=RESHAPE_TENSOR,
            pattern=OpPattern.OPAQUE,
            impl=reference("vm.reshape_tensor", RESHAPE_TENSOR, _reshape_tensor), family=FAMILY,
            doc="Reshape data to newshape, checked against a run-time shape tensor.",
            attrs=(AttrSpec("newshape", "ints", required=True,
                            check=C.check_ints_len(minimum=0), doc="the static result shape"),))
register_op("vm.shape_of", num_inputs=1, relation=SHAPE_OF, pattern=OpPattern.OPAQUE,
            impl=reference("vm.shape_of", SHAPE_OF, _shape_of), family=FAMILY,
            doc="The shape of the input as a 1-d tensor of dtype (int64 by default).",
            attrs=(AttrSpec("dtype", "dtype", "int64", check=_check_shape_dtype),))
