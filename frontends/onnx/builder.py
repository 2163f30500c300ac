"""A typed expression builder for the importers: every emitted call carries its Relay type.

A :class:`Value` is a Relay expression together with its type (computed by the operator's
registered type relation as the call is built, so shapes — static or symbolic — are known to
the converters without running the type checker) and, when the value is known at import
time, its numpy value. Calls whose arguments are all known are folded with the operator's
numpy reference (the oracle's own implementation), which is how ONNX shape arithmetic
(``Shape`` → ``Gather`` → ``Concat`` → ``Reshape``) becomes static attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from semantics import ops
from semantics.errors import RelayError
from semantics.expr import Call, Constant, Expr, Op, Tuple, TupleGetItem
from semantics.shapes import as_int, is_concrete
from semantics.types import TensorType, TupleType, Type, TypeCall

RELAY_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float16", "float32", "float64")

#: Constants up to this many elements are folded through operators at import time.
FOLD_LIMIT = 1 << 16


class ImporterError(RelayError):
    """A model that cannot be imported: unsupported operators, attributes or dynamic values."""


class Unsupported(Exception):
    """Raised by a converter for one node; the importer collects these into one error."""


@dataclass(eq=False)
class Value:
    """An imported value: its expression (None until materialized for constants), type and,
    when known at import time, its numpy value."""

    type: Type
    expr_: Expr | None = None
    const: np.ndarray | None = None
    #: An initializer: its value is readable statically but is not folded into constants.
    param: bool = False
    #: For a run-time integer value of one element: ``(base, k)`` when it is known to equal
    #: ``base + k`` (e.g. a loop counter plus one), so that a ``Slice`` from ``base + i`` to
    #: ``base + j`` has the static length ``j - i``.
    offset_of: tuple[Value, int] | None = None
    #: For a run-time integer tensor computed from tensor shapes (``Shape``, then ``Gather``,
    #: ``Concat``, arithmetic...): its elements as dims (ints, shape variables, ``?``), an
    #: object array of the value's shape (see :mod:`frontends.onnx.shape_values`).
    sym: np.ndarray | None = None
    #: For a sequence of static length: the rank of each element (-1: not a tensor), so that
    #: ``SequenceAt`` at a known position of a sequence of several ranks unwraps its element.
    ranks: tuple[int, ...] | None = None

    @property
    def expr(self) -> Expr:
        if self.expr_ is None:
            assert self.const is not None
            # Constant copies (C order for a C-contiguous source); np.ascontiguousarray
            # would turn a 0-d array into a 1-d one.
            self.expr_ = Constant(np.require(self.const, requirements="C"))
        return self.expr_

    @property
    def tensor(self) -> TensorType:
        if not isinstance(self.type, TensorType):
            if isinstance(self.type, TypeCall) and self.type.func.name.startswith("OnnxTensor"):
                raise Unsupported(
                    f"needs a tensor of one rank, got an element of a sequence of tensors of "
                    f"several ranks ({self.type.func.name}, frontends/onnx/seq_types.py) whose "
                    f"rank is only known at run time")
            raise Unsupported(f"expected a tensor, got a value of type {self.type}")
        return self.type

    @property
    def shape(self) -> tuple[Any, ...]:
        return tuple(self.tensor.shape)

    @property
    def ndim(self) -> int:
        return len(self.tensor.shape)

    @property
    def dtype(self) -> str:
        return self.tensor.dtype

    def static_shape(self) -> tuple[int, ...]:
        """The shape as ints; ``Unsupported`` when a dim is symbolic or unknown."""
        shape = self.shape
        if not all(is_concrete(d) for d in shape):
            raise Unsupported(f"needs a static shape, got {shape}")
        return tuple(int(d) for d in shape)


def const(array: Any, dtype: str | None = None) -> Value:
    """A known value (a Relay ``Constant`` when used as data)."""
    arr = np.asarray(array, dtype=dtype)
    if arr.dtype.name not in RELAY_DTYPES:
        raise Unsupported(f"unsupported element type {arr.dtype.name}")
    if arr.dtype == np.float64 and dtype is None and not isinstance(array, np.ndarray):
        arr = arr.astype(np.float32)
    return Value(TensorType(tuple(int(d) for d in arr.shape), arr.dtype.name), None, arr)


def _attrs_of(opdef: Any, attrs: dict[str, Any]) -> Any:
    """The operator's normalized attributes; an invalid one (e.g. a symbolic dim where Relay
    wants an int) is ``Unsupported`` for the node."""
    try:
        return opdef.normalize_attrs({k: v for k, v in attrs.items() if v is not None})
    except RelayError as err:
        raise Unsupported(f"{opdef.name}: {err.message}") from None


def call(name: str, args: Sequence[Value], fold: bool = True, **attrs: Any) -> Value:
    """``name(args..., attrs)`` with its type from the operator's relation (folded if known)."""
    opdef = ops.get(name)
    norm = _attrs_of(opdef, attrs)
    arg_types = tuple(a.type for a in args)
    try:
        out = opdef.relation(arg_types, norm)
    except RelayError as err:
        raise Unsupported(f"{name}: {err.message}") from None
    if out is None:
        raise Unsupported(f"{name}: the argument types {arg_types} are not resolved")
    if fold and args and all(_foldable(a) for a in args) and _small(out):
        result = opdef.impl(*[a.const for a in args], **dict(norm))
        if isinstance(result, np.ndarray) or np.isscalar(result):
            return Value(out, None, np.asarray(result, dtype=getattr(out, "dtype", None)))
    return Value(out, Call(Op(name), tuple(a.expr for a in args), norm))


def call_tuple(name: str, fields: Sequence[Value], **attrs: Any) -> Value:
    """``name((fields...), attrs)`` for operators taking one tuple argument (concatenate)."""
    opdef = ops.get(name)
    norm = _attrs_of(opdef, attrs)
    tt = TupleType(tuple(f.type for f in fields))
    try:
        out = opdef.relation((tt,), norm)
    except RelayError as err:
        raise Unsupported(f"{name}: {err.message}") from None
    if out is None:
        raise Unsupported(f"{name}: the argument types are not resolved")
    if all(_foldable(f) for f in fields) and _small(out):
        result = opdef.impl(tuple(f.const for f in fields), **dict(norm))
        return Value(out, None, np.asarray(result, dtype=getattr(out, "dtype", None)))
    return Value(out, Call(Op(name), (Tuple(tuple(f.expr for f in fields)),), norm))


def project(v: Value, i: int) -> Value:
    """Field ``i`` of a tuple value (``v.i``)."""
    if not isinstance(v.type, TupleType):
        raise Unsupported(f"expected a tuple, got {v.type}")
    return Value(v.type.fields[i], TupleGetItem(v.expr, i))


def affine(v: Value) -> tuple[Value, int]:
    """``(base, k)`` with ``v == base + k`` (``(v, 0)`` when nothing more is known)."""
    return v.offset_of if v.offset_of is not None else (v, 0)


def keep_offset(result: Value, source: Value, delta: int = 0) -> Value:
    """Record on ``result`` (a reshaping of ``source``, plus ``delta``) that it equals
    ``base + k + delta`` when ``source`` is a run-time one-element integer ``base + k``."""
    if source.const is None and result.const is None and _one_int(source) and _one_int(result):
        base, k = affine(source)
        result.offset_of = (base, k + delta)
    return result


def _one_int(v: Value) -> bool:
    t = v.type
    return (isinstance(t, TensorType) and t.dtype.startswith(("int", "uint"))
            and all(is_concrete(d) and d == 1 for d in t.shape))


def _small(t: Type) -> bool:
    """Whether a result of type ``t`` is small enough to fold at import time: every tensor
    of it has a static shape of at most :data:`FOLD_LIMIT` elements (the inputs being small
    says nothing: ``tile`` of a 10-element constant by ``[1e9, 1e9]`` is not)."""
    tensors = list(t.fields) if isinstance(t, TupleType) else [t]
    total = 0
    for u in tensors:
        if not isinstance(u, TensorType) or not all(is_concrete(d) for d in u.shape):
            return False
        count = 1
        for d in u.shape:
            count *= as_int(d)
        total += count
    return total <= FOLD_LIMIT


def _foldable(v: Value) -> bool:
    return v.const is not None and not v.param and v.const.size <= FOLD_LIMIT


def static(v: Value | None, what: str) -> np.ndarray:
    """The import-time value of ``v``; ``Unsupported`` when it is only known at run time."""
    if v is None or v.const is None:
        raise Unsupported(f"{what} must be known at import time (an initializer or constant)")
    return v.const


def static_ints(v: Value | None, what: str) -> list[int]:
    """The import-time value of ``v`` as a flat list of ints."""
    return [int(x) for x in np.asarray(static(v, what)).reshape(-1)]


def required(ins: list[Value | None], i: int) -> Value:
    """Input ``i`` of a node; ``Unsupported`` when it is missing."""
    if i >= len(ins) or ins[i] is None:
        raise Unsupported(f"input {i} is required")
    v = ins[i]
    assert v is not None
    return v


def checked_index(idx: Value, n: int) -> Value:
    """``idx`` as int64 in ``[0, n)`` (negatives + n); out of range: a run-time error (a
    ``take`` in mode ``fast`` from ``arange(n)``)."""
    i = call("cast", [idx], dtype="int64")
    i = call("where", [call("less", [i, const(np.int64(0))]),
                       call("add", [i, const(np.int64(n))]), i])
    return call("take", [const(np.arange(n, dtype=np.int64)), i], axis=0, mode="fast")
