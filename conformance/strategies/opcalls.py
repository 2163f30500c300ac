"""Operator calls for the well-typed generator: which operator can produce which tensor type.

Two sources, both read from the registry *at generation time* (operators
registered later are picked up without changing this file):

* **Probing relations** (:func:`producers`): for a wanted tensor type ``T``,
  every operator without required attributes whose relation, applied to
  ``(T,)``, ``(T, T)`` or ``(T, T, T)`` (for a ``bool`` result also to
  same-shaped tensors of the other dtypes), returns exactly ``T``; plus
  ``cast`` from another dtype. This makes elementwise and broadcast
  operators available *type-directedly*, anywhere an expression of type
  ``T`` is wanted.
* **Valid-call strategies** of the operator families
  (``conformance/strategies/ops.py`` and ``ops_nn.py``, owned by the operator
  authors; see :func:`valid_call`): an operator's argument types, attributes
  and — where the operator constrains values (indices, shapes) — argument
  values, from which the generator builds ``let %v = op(args); ...``
  bindings. Operators with no family strategy fall back to probing with
  random tensor types and default attributes.

Results are cached per (operator set, type). ``SAFE_TO_SHARE`` decides which
operator calls may be graph-shared: those that cannot trap at run time.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from conformance.strategies.typeutil import type_key
from semantics.expr import Attrs
from semantics.types import TensorType, Type

# Operators that may trap (or depend on values in ways that make sharing ambiguous).
_TRAPPING_WORDS = ("div", "mod", "power", "take", "gather", "scatter", "one_hot", "adv_index",
                   "sparse", "dyn.", "unravel", "strided_set")


def safe_to_share(op_name: str) -> bool:
    """True for an operator whose calls never raise at run time (graph sharing is unambiguous)."""
    return not any(w in op_name for w in _TRAPPING_WORDS)


@dataclass(frozen=True)
class OpCall:
    """A valid call: operator, argument types, attributes as written, result type.

    ``arg_values`` (optional, one entry per argument) holds numpy arrays (a
    tuple of arrays for a tuple argument) the argument must equal — trap-free
    values such as nonzero divisors or in-range indices; the generator emits
    them as constants.
    """

    op: str
    arg_types: tuple[Type, ...]
    attrs: Attrs
    result: Type
    arg_values: tuple[Any, ...] | None = None


_PRODUCER_CACHE: dict[tuple[tuple[str, ...], str, tuple[str, ...]], list[OpCall]] = {}


NOT_GENERATED: dict[str, str] = {
    "memory.alloc_storage": "its Storage result is no value the generated programs use, and "
                            "the TVM backend refuses explicit allocation "
                            "(tests/semantics/test_memory_dialect.py covers it)",
    "memory.alloc_tensor": "it needs a Storage argument, which only memory.alloc_storage "
                           "makes (tests/semantics/test_memory_dialect.py covers it)",
}
"""Registered operators the generator does not call, with the reason (the coverage report
lists them as excluded)."""


def registry_ops() -> list[str]:
    """Every registered operator the generator may call (all but :data:`NOT_GENERATED`)."""
    from semantics.ops import list_ops

    return [op for op in list_ops() if op not in NOT_GENERATED]


def _relation_result(name: str, arg_types: Sequence[Type], attrs: dict[str, Any] | None = None
                     ) -> Type | None:
    from semantics.ops import get

    try:
        op = get(name)
        norm = op.normalize_attrs(attrs or {})
        return op.relation(tuple(arg_types), norm)
    except Exception:  # noqa: BLE001 - probing: any rejection means "not this signature"
        return None


def _no_required_attrs(name: str) -> bool:
    from semantics.ops import get

    return not any(spec.required for spec in get(name).attrs.values())


def producers(target: TensorType, ops: Sequence[str], dtypes: Sequence[str]) -> list[OpCall]:
    """Calls of ``ops`` (default attributes) whose result type is exactly ``target``."""
    key = (tuple(ops), type_key(target), tuple(dtypes))
    hit = _PRODUCER_CACHE.get(key)
    if hit is not None:
        return hit
    from semantics.ops import get

    want = type_key(target)
    out: list[OpCall] = []
    sources = [target] + ([TensorType(target.shape, d) for d in dtypes if d != target.dtype]
                          if target.dtype == "bool" else [])
    for name in ops:
        op = get(name)
        if not _no_required_attrs(name):
            continue
        arities = (op.num_inputs,) if op.num_inputs >= 0 else ()
        for n in arities:
            if n == 0 or n > 3:
                continue
            for src in sources:
                res = _relation_result(name, (src,) * n)
                if isinstance(res, TensorType) and type_key(res) == want:
                    out.append(OpCall(name, (src,) * n, Attrs({}), res))
    if "cast" in ops:
        for d in dtypes:
            if d != target.dtype:
                src = TensorType(target.shape, d)
                res = _relation_result("cast", (src,), {"dtype": target.dtype})
                if isinstance(res, TensorType) and type_key(res) == want:
                    out.append(OpCall("cast", (src,), Attrs({"dtype": target.dtype}), res))
    _PRODUCER_CACHE[key] = out
    return out


# --- the operator families' valid-call strategies -------------------------------------------

def family_tables() -> tuple[dict[str, Any], dict[str, Any]]:
    """``(VALID_CALLS, INPUTS)`` of :mod:`conformance.strategies.ops` (extensions loaded);
    empty tables when that module is absent."""
    try:
        mod = importlib.import_module("conformance.strategies.ops")
    except ImportError:
        return {}, {}
    load = getattr(mod, "load_extensions", None)
    if callable(load):
        load()
    return getattr(mod, "VALID_CALLS", {}), getattr(mod, "INPUTS", {})


# --- drawing a valid call ---------------------------------------------------------------------

_PROBE_SHAPES = ((), (3,), (2, 3))
_SIGNATURE_CACHE: dict[tuple[str, tuple[str, ...], int, int], list[OpCall]] = {}


def probe_signatures(name: str, dtypes: Sequence[str], max_rank: int = 2, max_dim: int = 3
                     ) -> list[OpCall]:
    """Calls of ``name`` with default attributes over a fixed set of small tensor types.

    Tried: ``n`` equal argument types; for two arguments also (tensor, int32
    tensor of the same shape) and (tensor, scalar); for three arguments a
    ``bool`` first argument; for a variadic (tuple) input a pair of equal
    tensors. Cached per operator and dtype set.
    """
    key = (name, tuple(dtypes), max_rank, max_dim)
    hit = _SIGNATURE_CACHE.get(key)
    if hit is not None:
        return hit
    from semantics.ops import get

    op = get(name)
    out: list[OpCall] = []
    if _no_required_attrs(name):
        shapes = [s for s in _PROBE_SHAPES if len(s) <= max_rank and all(d <= max_dim for d in s)]
        for shape in shapes:
            for dt in dtypes:
                t = TensorType(shape, dt)
                candidates: list[tuple[tuple[Type, ...], bool]] = []
                n = op.num_inputs
                if n < 0:
                    candidates.append(((t, t), True))
                elif n == 0:
                    candidates.append(((), False))
                else:
                    candidates.append(((t,) * n, False))
                    if n == 2:
                        candidates.append(((t, TensorType(shape, "int32")), False))
                        candidates.append(((t, TensorType((), dt)), False))
                    if n == 3:
                        candidates.append(((TensorType(shape, "bool"), t, t), False))
                for args, tuple_arg in candidates:
                    from semantics.types import TupleType

                    rel_args = (TupleType(args),) if tuple_arg else args
                    res = _relation_result(name, rel_args)
                    if isinstance(res, (TensorType, TupleType)) and _concrete(res):
                        out.append(OpCall(name, rel_args, Attrs({}), res))
    _SIGNATURE_CACHE[key] = out
    return out


def _concrete(t: Type, allow_any: bool = False) -> bool:
    """Every dim an int (or ``?`` with ``allow_any``: value-dependent shapes such as arange's)."""
    from semantics.shapes import ANY
    from semantics.types import TupleType

    if isinstance(t, TensorType):
        return all(isinstance(d, int) or (allow_any and d is ANY) for d in t.shape)
    if isinstance(t, TupleType):
        return all(_concrete(f, allow_any) for f in t.fields)
    return False


_FAMILY_STRATEGIES: dict[str, Any] = {}


def draw_valid_call(draw: Any, name: str, dtypes: Sequence[str], max_rank: int = 2,
                    max_dim: int = 3) -> OpCall | None:
    """A valid call of operator ``name``: the family's valid-call strategy if there is one (with
    trap-free argument values when the family constrains them), else a probed signature; None
    when neither knows a call (the operator is then skipped)."""
    from hypothesis import strategies as st

    valid, inputs = family_tables()
    factory = valid.get(name)
    if factory is not None:
        strategy = _FAMILY_STRATEGIES.get(name)
        if strategy is None:
            strategy = _FAMILY_STRATEGIES[name] = factory()
        arg_types, attrs = draw(strategy)
        arg_types = tuple(arg_types)
        result = _relation_result(name, arg_types, dict(attrs))
        if result is not None and _concrete(result, allow_any=True):
            values = None
            if name in inputs:
                values = tuple(draw(inputs[name](arg_types, dict(attrs), True)))
            return OpCall(name, arg_types, Attrs(dict(attrs)), result, values)
    sigs = probe_signatures(name, dtypes, max_rank, max_dim)
    if not sigs:
        return None
    return draw(st.sampled_from(sigs))


# --- elementwise binary calls over given operand types ------------------------------------------

_BINARY_CACHE: dict[tuple[tuple[str, ...], str, str], list[OpCall]] = {}

# Trap-prone operators a probe may still call: integer divisions get a nonzero constant
# divisor most of the time (see ``programgen.operators``); the others are left out.
_PROBE_TRAPS_OK = ("divide", "floor_divide", "mod", "floor_mod", "power")


def binary_calls(a: TensorType, b: TensorType, ops: Sequence[str]) -> list[OpCall]:
    """Elementwise calls ``op(a, b)`` of the two-input operators among ``ops``.

    An operator qualifies when it needs no attribute, its relation accepts ``(a, b)`` and
    returns a tensor of their broadcast shape (of any dtype: comparisons give ``bool``),
    and it cannot trap at run time — apart from the divisions (callers give them a
    nonzero divisor) and ``power``. Cached per operator set and operand types.
    """
    key = (tuple(ops), type_key(a), type_key(b))
    hit = _BINARY_CACHE.get(key)
    if hit is not None:
        return hit
    from semantics.ops import get

    out: list[OpCall] = []
    try:
        want = tuple(np.broadcast_shapes(tuple(a.shape), tuple(b.shape)))  # type: ignore[arg-type]
    except ValueError:
        want = None
    if want is not None:
        for name in ops:
            if get(name).num_inputs != 2 or not _no_required_attrs(name) or \
                    (not safe_to_share(name) and name not in _PROBE_TRAPS_OK):
                continue
            res = _relation_result(name, (a, b))
            if isinstance(res, TensorType) and tuple(res.shape) == want:
                out.append(OpCall(name, (a, b), Attrs({}), res))
    _BINARY_CACHE[key] = out
    return out
