"""Soundness obligations of the memory dialect's relations (``semantics/ops/memory.py``).

``AllocStorage``, ``AllocTensor`` and ``Kill`` take or return types that are not tensors
(``Storage``, any type), outside :mod:`proofs.relcheck`'s tensor-shape domain, and
``ReshapeTensor``'s reference needs its shape argument to hold ``newshape``.  Each is checked
here exhaustively over a bounded domain of argument types and attributes against a
specification written from TVM's definitions (``memory.cc``, ``vm.cc``): the relation accepts
exactly the specified calls with exactly the specified result, and on every accepted call
the reference's value has that type.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from proofs.core import PROVED, REFUTED, Verdict, obligation
from semantics.errors import RelayError
from semantics.expr import Attrs
from semantics.types import FuncType, TensorType, TupleType, Type

INT64 = TensorType((), "int64")
DIMS = (0, 1, 2, 3)


def _is_int(t: Type, rank: int | None = None) -> bool:
    return isinstance(t, TensorType) and t.dtype.startswith(("int", "uint")) and \
        (rank is None or t.ndim == rank)


def _relation(op: str, args: tuple[Type, ...], attrs: dict[str, Any]) -> Type | None:
    """The relation's verdict: its result, or None when it rejects the call."""
    from semantics import ops

    opdef = ops.get(op)
    try:
        return opdef.relation(args, Attrs(dict(opdef.normalize_attrs(attrs))))
    except RelayError:
        return None


def _same(a: Type | None, b: Type | None) -> bool:
    from semantics import alpha_equal

    return (a is None and b is None) or (a is not None and b is not None and alpha_equal(a, b))


def _check(cases: Iterator[tuple[str, tuple[Type, ...], dict[str, Any], Type | None]],
           reference: Callable[[tuple[Type, ...], dict[str, Any], Type], str | None]
           ) -> Verdict:
    from semantics.printer import pretty

    count = 0
    for op, args, attrs, want in cases:
        count += 1
        got = _relation(op, args, attrs)
        shown = f"{op}({', '.join(pretty(a) for a in args)}; {attrs})"
        if not _same(got, want):
            gave = "rejection" if got is None else pretty(got)
            wanted = "rejection" if want is None else pretty(want)
            return Verdict(REFUTED, f"{shown}: relation gives {gave}, the specification "
                                    f"{wanted}", method="bounded enumeration")
        if got is not None:
            problem = reference(args, attrs, got)
            if problem:
                return Verdict(REFUTED, f"{shown}: {problem}", method="bounded enumeration")
    return Verdict(PROVED, method=f"bounded enumeration ({count} calls) + reference")


def _tensor_types() -> list[TensorType]:
    return [TensorType(s, d) for s in ((), (1,), (2,), (3,), (2, 2))
            for d in ("int64", "int32", "float32")]


# --- AllocStorage ----------------------------------------------------------------------------

def _alloc_storage_cases() -> Iterator[tuple[str, tuple[Type, ...], dict[str, Any], Any]]:
    from semantics.ops.memory import storage_type

    for size, shape, align in itertools.product(_tensor_types(), _tensor_types()[:6],
                                                _tensor_types()):
        ok = size.dtype == "int64" and not size.shape and align.dtype == "int64" and \
            not align.shape
        yield "memory.alloc_storage", (size, shape, align), {}, storage_type() if ok else None


def _alloc_storage_ref(args: tuple[Type, ...], attrs: dict[str, Any], out: Type) -> str | None:
    from semantics import ops
    from semantics.ops.memory import StorageValue

    shape = args[1]
    assert isinstance(shape, TensorType)
    dims = tuple(int(d) for d in shape.shape)   # type: ignore[arg-type]
    v = ops.get("memory.alloc_storage").impl(np.int64(24), np.zeros(dims, shape.dtype),
                                             np.int64(8), dtype="float32", virtual_device=None)
    return None if isinstance(v, StorageValue) and v.size == 24 else f"reference gave {v!r}"


# --- AllocTensor -----------------------------------------------------------------------------

def _alloc_tensor_cases() -> Iterator[tuple[str, tuple[Type, ...], dict[str, Any], Any]]:
    from semantics.ops.memory import storage_type

    firsts: list[Type] = [storage_type(), INT64]
    offsets: list[Type] = [INT64, TensorType((), "int32"), TensorType((), "float32"),
                           TensorType((1,), "int64")]
    shapes: list[Type] = [TensorType((n,), d) for n in (0, 1, 2) for d in ("int64", "float32")]
    shapes.append(TensorType((1, 1), "int64"))
    statics = [None, (), (2,), (2, 3)]
    for first, offset, shape, const, asserted in itertools.product(firsts, offsets, shapes,
                                                                   statics, statics):
        attrs = {"const_shape": const, "assert_shape": asserted, "dtype": "float32"}
        static = const if const is not None else asserted
        ok = first is firsts[0] and _is_int(offset, 0) and _is_int(shape, 1) and \
            static is not None and shape.shape[0] == len(static)  # type: ignore[attr-defined]
        want = TensorType(tuple(static), "float32") if ok and static is not None else None
        yield "memory.alloc_tensor", (first, offset, shape), attrs, want


def _alloc_tensor_ref(args: tuple[Type, ...], attrs: dict[str, Any], out: Type) -> str | None:
    from semantics import ops

    assert isinstance(out, TensorType)
    dims = tuple(int(d) for d in out.shape)   # type: ignore[arg-type]
    storage = ops.get("memory.alloc_storage").impl(np.int64(4 * int(np.prod(dims))),
                                                   np.zeros(1, "int64"), np.int64(8))
    v = ops.get("memory.alloc_tensor").impl(storage, np.int64(0), np.array(dims, "int64"),
                                            **attrs)
    if v.shape != dims or v.dtype != np.float32:
        return f"reference gave a {v.dtype}{list(v.shape)} tensor"
    return None


# --- Kill ------------------------------------------------------------------------------------

def _kill_cases() -> Iterator[tuple[str, tuple[Type, ...], dict[str, Any], Any]]:
    from semantics.ops.memory import storage_type

    kinds: list[Type] = [INT64, TupleType(()), TupleType((INT64, INT64)),
                         FuncType((INT64,), INT64), storage_type()]
    for t in kinds:
        yield "memory.kill", (t,), {}, TupleType(())
    yield "memory.kill", (INT64, INT64), {}, None


def _kill_ref(args: tuple[Type, ...], attrs: dict[str, Any], out: Type) -> str | None:
    from semantics import ops

    v = ops.get("memory.kill").impl(np.int64(1))
    return None if v == () else f"reference gave {v!r}"


# --- ReshapeTensor ---------------------------------------------------------------------------

def _reshape_tensor_cases() -> Iterator[tuple[str, tuple[Type, ...], dict[str, Any], Any]]:
    datas = [TensorType(s, "float32") for r in range(3) for s in itertools.product(DIMS, repeat=r)]
    news = [n for r in range(3) for n in itertools.product((0, 1, 2, 3, 6), repeat=r)]
    for data, n, new in itertools.product(datas, (0, 1, 2), news):
        shape = TensorType((n,), "int64")
        count = int(np.prod(data.shape, dtype=np.int64))  # type: ignore[arg-type]
        ok = n == len(new) and count == int(np.prod(new, dtype=np.int64))
        want = TensorType(tuple(new), "float32") if ok else None
        yield "vm.reshape_tensor", (data, shape), {"newshape": list(new)}, want
    yield "vm.reshape_tensor", (TensorType((6,), "float32"), TensorType((1,), "float32")), \
        {"newshape": [6]}, None


def _reshape_tensor_ref(args: tuple[Type, ...], attrs: dict[str, Any], out: Type) -> str | None:
    from semantics import ops

    data = args[0]
    assert isinstance(data, TensorType) and isinstance(out, TensorType)
    shape = tuple(int(d) for d in data.shape)   # type: ignore[arg-type]
    x = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.float32).reshape(shape)
    new = tuple(attrs["newshape"])
    v = ops.get("vm.reshape_tensor").impl(x, np.array(new, "int64"), **attrs)
    if v.shape != new or not np.array_equal(v.reshape(-1), x.reshape(-1)):
        return f"reference gave a {list(v.shape)} tensor"
    return None


CHECKS: dict[str, tuple[str, Callable[[], Verdict]]] = {
    "AllocStorage": ("memory.alloc_storage",
                     lambda: _check(_alloc_storage_cases(), _alloc_storage_ref)),
    "AllocTensor": ("memory.alloc_tensor",
                    lambda: _check(_alloc_tensor_cases(), _alloc_tensor_ref)),
    "Kill": ("memory.kill", lambda: _check(_kill_cases(), _kill_ref)),
    "ReshapeTensor": ("vm.reshape_tensor",
                      lambda: _check(_reshape_tensor_cases(), _reshape_tensor_ref)),
}

#: The relations with an obligation here (added to :data:`proofs.relations.COVERED`).
COVERED: frozenset[str] = frozenset(CHECKS)

for _name, (_op, _fn) in CHECKS.items():
    obligation(f"relation.{_name}",
               f"relation {_name} (operator {_op}) is sound and complete for the operator's "
               "definition [bounded enumeration]", _fn)
