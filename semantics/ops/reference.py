"""The one contract of the numpy reference implementations, and the helpers they share.

Every operator's reference is a *compute function* ``compute(out_type, *arrays, **attrs)``
— the shape of TVM's ``FTVMCompute`` (attributes, inputs, output type), so that a numpy
reference and a lowering read alike — wrapped by :func:`reference` into the operator's
``OpDef.impl(*args, **attrs)``.  The wrapper

* converts every argument to an ndarray of a Relay dtype (a tuple argument to a tuple of
  them); anything else is a ``RelayRuntimeError``;
* types the arguments with the operator's own relation, **memoized** per (argument dtypes
  and shapes, attributes): relations are pure, and the oracle calls operators on the same
  signatures over and over.  A relation failure — possible only when evaluating an
  unchecked program — is a ``RelayRuntimeError`` carrying the relation's message;
* runs ``compute(out_type, *arrays, **attrs)`` under ``np.errstate(all="ignore")`` (IEEE
  results, no warnings; set by the wrapper unless already installed — an evaluation installs
  it once with :func:`silence_numpy` — and compute functions never set it again), maps
  numpy's own exceptions to ``RelayRuntimeError``;
* insists that the result is an ndarray of *exactly* the relation's dtype and (concrete)
  shape — a tuple of them for a tuple type; numpy scalars (ufuncs on 0-d arrays return
  them) become 0-d arrays; a mismatch is an ``InternalError`` (a bug in the reference, not
  a user error).

``impl`` is two halves, also exposed as ``impl.decide(args, attrs) -> (verdict, arrays)``
(conversion and the memoized relation verdict) and ``impl.decided(verdict, arrays, attrs)``
(errstate, ``compute``, failures, result check): a caller that sees the same call over and
over (the interpreter, per call node) keeps the verdict for the last argument signature
and calls ``decided`` directly.

Also here: the dtype bridge (:func:`np_dtype`, :func:`relay_dtype_of`,
:func:`as_relay_array`), the *type of a runtime value* (:func:`value_type`), and the numeric
helpers of several families (:func:`cast_array` — the §5 ``cast`` —,
:func:`check_nonzero_divisor`, :func:`concrete_shape`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np

from semantics.dtypes import SCALAR_DTYPES, is_dtype, split_lanes
from semantics.errors import InternalError, RelayRuntimeError, RelayTypeError
from semantics.expr import Attrs
from semantics.ops.registry import Relation
from semantics.shapes import as_int
from semantics.types import TensorType, TupleType, Type

# --- dtypes ---------------------------------------------------------------------------------

RELAY_DTYPE_OF: dict[np.dtype, str] = {np.dtype(d): d for d in SCALAR_DTYPES}
"""numpy dtype (native byte order) -> Relay dtype name."""


def np_dtype(dtype: str) -> np.dtype:
    """The numpy dtype for a Relay dtype.

    Raises:
        RelayRuntimeError: vector dtypes (``float32x4``) and sub-byte integers (``uint1``)
            are kinded but not evaluated.
    """
    base, lanes = split_lanes(dtype)
    if lanes != 1 or not is_dtype(dtype):
        raise RelayRuntimeError(f"dtype {dtype} cannot be evaluated (vector lanes)")
    if base not in SCALAR_DTYPES:
        raise RelayRuntimeError(f"dtype {dtype} cannot be evaluated (sub-byte integers)")
    return np.dtype(base)


def relay_dtype_of(arr: np.ndarray | np.generic, op: str) -> str:
    """The Relay dtype of a numpy array (``RelayRuntimeError`` for anything else)."""
    name = RELAY_DTYPE_OF.get(arr.dtype)
    if name is None:
        raise RelayRuntimeError(f"operator {op}: argument of numpy dtype {arr.dtype} is not a "
                                "Relay tensor")
    return name


def as_relay_array(value: Any, op: str) -> np.ndarray:
    """``value`` as an ndarray of a Relay dtype (native byte order); else ``RelayRuntimeError``."""
    arr = np.asarray(value)
    if arr.dtype not in RELAY_DTYPE_OF and arr.dtype.name in SCALAR_DTYPES:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    relay_dtype_of(arr, op)
    return arr


def value_type(value: Any, op: str = "") -> Type:
    """The Relay type of a runtime value: a tensor (ndarray or numpy scalar) or a tuple of them.

    Raises:
        RelayRuntimeError: a value that is neither, or a numpy dtype with no Relay dtype.
    """
    if isinstance(value, tuple):
        return TupleType(tuple(value_type(v, op) for v in value))
    if isinstance(value, (np.ndarray, np.generic)):
        dtype = RELAY_DTYPE_OF.get(value.dtype)
        if dtype is None:
            dtype = relay_dtype_of(as_relay_array(value, op or "?"), op or "?")
        return TensorType(tuple(int(d) for d in value.shape), dtype)
    where = f"operator {op}: " if op else ""
    raise RelayRuntimeError(f"{where}expected a tensor argument, got {type(value).__name__}")


def concrete_shape(t: Type) -> tuple[int, ...]:
    """The shape of a tensor type whose dims are all ints (a result type at run time)."""
    if not isinstance(t, TensorType):
        raise InternalError(f"expected a tensor type, got {t}")
    return tuple(as_int(d) for d in t.shape)


# --- numeric helpers ----------------------------------------------------------------------

def check_nonzero_divisor(op: str, divisor: np.ndarray, out_shape: tuple[int, ...]) -> None:
    """§5: an integer division or modulo that would divide by zero traps.

    Only divisors that are actually used count (an empty result divides nothing).

    Raises:
        RelayRuntimeError: ``division by zero in <op>``.
    """
    if int(np.prod(out_shape, dtype=np.int64)) == 0:
        return
    if np.any(divisor == 0):
        raise RelayRuntimeError(f"division by zero in {op} (integer divisor is 0)")


def cast_array(x: np.ndarray, dtype: str) -> np.ndarray:
    """The §5 ``cast``: ``x`` converted to ``dtype``, never a numpy warning or exception.

    * to ``bool``: ``x != 0`` (NaN is true, as in C);
    * integer/bool to integer: two's-complement wrapping (keep the low bits);
    * float to integer: truncate toward zero, then wrap modulo ``2**bits`` (so ``300.7``
      to ``uint8`` is 44 and ``-1.5`` to ``uint8`` is 255); NaN and ±inf become 0.
      The wrap is computed exactly in float64 (``fmod`` is exact), then through int64;
    * to a float: round to nearest even, overflow to ±inf (IEEE).

    Callers outside a reference's wrapper must silence numpy's warnings themselves.

    Returns:
        A new array of exactly ``dtype`` with ``x``'s shape (0-d stays 0-d).
    """
    dst = np_dtype(dtype)
    src = x.dtype
    if dst == np.bool_:
        return np.asarray(x != 0)
    if dst.kind in "iu" and src.kind == "f":
        t = np.trunc(x.astype(np.float64))
        t = np.where(np.isfinite(t), t, 0.0)
        bits = dst.itemsize * 8
        modulus = float(2 ** bits)
        r = np.fmod(t, modulus)
        if bits == 64:
            r = np.where(r >= 2.0 ** 63, r - modulus, r)
            r = np.where(r < -(2.0 ** 63), r + modulus, r)
        return np.asarray(r.astype(np.int64).astype(dst))
    return np.asarray(x.astype(dst))


# --- the wrapper ----------------------------------------------------------------------------

Compute = Callable[..., Any]

# Entering ``np.errstate(all="ignore")`` costs about a microsecond (it rebuilds numpy's
# error-state object on every entry); the wrapper instead installs a prebuilt "ignore all"
# state in numpy's context variable and resets it afterwards — the same mechanism
# ``np.errstate`` uses. Should numpy's private layout change, the public context manager is
# used instead.
try:
    from numpy._core._ufunc_config import (  # type: ignore[attr-defined]
        _extobj_contextvar,
        _make_extobj,
    )

    _IGNORE_ALL: Any = _make_extobj(all="ignore")
    _set_errstate: Callable[[Any], Any] | None = _extobj_contextvar.set
    _reset_errstate: Callable[[Any], Any] = _extobj_contextvar.reset
    _get_errstate: Callable[[], Any] = _extobj_contextvar.get
except (ImportError, AttributeError, TypeError):  # pragma: no cover - other numpy layouts
    _set_errstate = None



def silence_numpy() -> Any:
    """Install numpy's "ignore all" error state (the wrapper's) for the current context.

    An evaluation calls this once on entry, so that the wrappers it calls find the state
    already installed and skip installing it per operator call. Returns a token for
    :func:`restore_numpy` (None when numpy's private layout is not the expected one: then
    each wrapper keeps using ``np.errstate`` itself).
    """
    if _set_errstate is None:  # pragma: no cover - other numpy layouts
        return None
    return _set_errstate(_IGNORE_ALL)


def restore_numpy(token: Any) -> None:
    """Undo :func:`silence_numpy` (``token`` is what it returned)."""
    if token is not None:
        _reset_errstate(token)


_NUMPY_FAILURES = (ValueError, TypeError, IndexError, OverflowError, ZeroDivisionError,
                   FloatingPointError, MemoryError)
_MEMO_LIMIT = 4096


def reference(op_name: str, relation: Relation, compute: Compute) -> Callable[..., Any]:
    """The operator's ``impl``: ``compute(out_type, *arrays, **attrs)`` made total and exact.

    See the module docstring for what the wrapper guarantees.

    Args:
        op_name: for messages; relation: the operator's relation; compute: the raw
            reference, receiving the relation's result type first.
    Returns:
        ``impl(*args, **attrs)`` (attributes normalized by the caller).
    """
    # (argument signature, attrs) -> (result type, exact layout or None); see _decide.
    verdicts: dict[Any, tuple[Type, Any]] = {}
    fast_errstate = _set_errstate

    def decide(args: tuple[Any, ...], attrs: dict[str, Any]) -> tuple[Any, tuple[Any, ...]]:
        """The memoized verdict on ``args`` and the arguments as arrays: ``(verdict, arrays)``."""
        key: Any = None
        verdict = None
        sig = []
        for a in args:
            if type(a) is np.ndarray:
                sig.append((a.dtype, a.shape))
            else:
                s = _clean_signature(a)
                if s is None:
                    sig = None  # type: ignore[assignment]
                    break
                sig.append(s)
        if sig is not None:
            key = (*sig, *attrs.items()) if attrs else tuple(sig)
            try:
                verdict = verdicts.get(key)
            except TypeError:            # an unhashable attribute value: no memo
                key = None
        if verdict is None:
            arrays = tuple(_as_arrays(a, op_name) for a in args)
            verdict = _decide(op_name, relation, arrays, attrs)
            if key is not None and _is_clean(args):
                if len(verdicts) >= _MEMO_LIMIT:
                    verdicts.clear()
                verdicts[key] = verdict
            return verdict, arrays
        return verdict, args

    def decided(verdict: tuple[Type, Any], arrays: Any, attrs: dict[str, Any]) -> Any:
        """``compute`` on arguments the verdict was decided for: errstate, failures, check.

        ``arrays`` are the arguments as :func:`decide` returned them (or ndarrays of exactly
        the dtypes and shapes it decided on, with the same attributes).
        """
        try:
            if fast_errstate is None:
                with np.errstate(all="ignore"):
                    result = compute(verdict[0], *arrays, **attrs)
            elif _get_errstate() is _IGNORE_ALL:   # already silenced (an evaluation runs)
                result = compute(verdict[0], *arrays, **attrs)
            else:
                token = fast_errstate(_IGNORE_ALL)
                try:
                    result = compute(verdict[0], *arrays, **attrs)
                finally:
                    _reset_errstate(token)
        except RelayRuntimeError:
            raise
        except _NUMPY_FAILURES as err:
            raise RelayRuntimeError(f"operator {op_name} failed: {err}") from None
        layout = verdict[1]
        if layout is not None:
            if type(layout) is tuple:           # one tensor: (numpy dtype, shape)
                tr = type(result)
                if tr is not np.ndarray and isinstance(result, np.generic):
                    result = np.asarray(result)
                    tr = np.ndarray
                if tr is np.ndarray and result.dtype == layout[0] \
                        and result.shape == layout[1]:
                    return result  # the common case: exactly the promised concrete type
            elif type(result) is tuple and len(result) == len(layout):  # tensors (a list)
                for r, (dtype, shape) in zip(result, layout):
                    if type(r) is not np.ndarray or r.dtype != dtype or r.shape != shape:
                        break
                else:
                    return result
        return check_result(op_name, result, verdict[0])

    def impl(*args: Any, **attrs: Any) -> Any:
        verdict, arrays = decide(args, attrs)
        return decided(verdict, arrays, attrs)

    def raw(*args: Any, **attrs: Any) -> Any:
        """``compute`` with the memoized result type only: no conversion, errstate or check."""
        try:
            key: Any = (*[(a.dtype, a.shape) for a in args], *attrs.items())
            verdict = verdicts.get(key)
        except (AttributeError, TypeError):
            key, verdict = None, None
        if verdict is None:
            verdict = _decide(op_name, relation, args, attrs)
            if key is not None and _is_clean(args):
                verdicts[key] = verdict
        return compute(verdict[0], *args, **attrs)

    impl.__name__ = getattr(compute, "__name__", "impl")
    impl.__qualname__ = f"reference({op_name})"
    impl.__doc__ = compute.__doc__
    impl.compute = compute  # type: ignore[attr-defined]
    # The two halves of ``impl``, for a caller that keeps verdicts per call site (the
    # interpreter's Semantics-Call-Op): impl(*args, **attrs) = decided(*decide(args, attrs),
    # attrs).
    impl.decide = decide  # type: ignore[attr-defined]
    impl.decided = decided  # type: ignore[attr-defined]
    # What "the operator without its wrapper" means for benchmarks (bench/interpreter.py).
    impl.__wrapped__ = raw  # type: ignore[attr-defined]
    return impl


def _decide(op_name: str, relation: Relation, arrays: tuple[Any, ...], attrs: dict[str, Any]
            ) -> tuple[Type, Any]:
    """The relation's verdict on concrete arguments: (result type, exact layout or None).

    The layout is (numpy dtype, shape) for a concrete tensor type, a list of them for a tuple
    of concrete tensor types, None otherwise (the result is then checked field by field).
    """
    types = tuple(value_type(a, op_name) for a in arrays)
    try:
        expected = relation(types, Attrs(attrs))
    except RelayTypeError as err:
        raise RelayRuntimeError(f"operator {op_name}: {err.message}") from None
    if expected is None:
        raise InternalError(f"relation {relation.name} undecided on run-time values")
    layout: Any = _layout(expected)
    if layout is None and isinstance(expected, TupleType):
        fields = tuple(_layout(f) for f in expected.fields)
        if all(f is not None for f in fields):
            layout = list(fields)   # a list: a tuple of tensors (a tuple is one tensor)
    return expected, layout


def _layout(t: Type) -> tuple[np.dtype, tuple[int, ...]] | None:
    """(numpy dtype, shape) of a tensor type with a scalar dtype and int dims, else None."""
    if isinstance(t, TensorType) and t.dtype in SCALAR_DTYPES \
            and all(type(d) is int for d in t.shape):
        return np.dtype(t.dtype), cast(tuple[int, ...], tuple(t.shape))
    return None


def _clean_signature(value: Any) -> Any:
    """The memo signature of a tuple argument of clean arrays, else None."""
    if type(value) is tuple:
        parts = []
        for v in value:
            s = (v.dtype, v.shape) if type(v) is np.ndarray else _clean_signature(v)
            if s is None:
                return None
            parts.append(s)
        return ("tuple", *parts)
    return None


def _is_clean(args: tuple[Any, ...]) -> bool:
    """Every argument an ndarray of a Relay dtype in native byte order (or a tuple of them)."""
    for a in args:
        if type(a) is tuple:
            if not _is_clean(a):
                return False
        elif type(a) is not np.ndarray or a.dtype not in RELAY_DTYPE_OF:
            return False
    return True


def _as_arrays(value: Any, op: str) -> Any:
    """An argument as the reference receives it: an ndarray, or a tuple of them."""
    if isinstance(value, tuple):
        return tuple(_as_arrays(v, op) for v in value)
    if type(value) is np.ndarray and value.dtype in RELAY_DTYPE_OF:
        return value
    if isinstance(value, (np.ndarray, np.generic, bool, int, float, list)):
        return as_relay_array(value, op)
    raise RelayRuntimeError(f"operator {op}: expected a tensor argument, "
                            f"got {type(value).__name__}")


def check_result(op_name: str, result: Any, expected: Type) -> Any:
    """``result`` checked against the relation's type (``InternalError`` on a mismatch).

    Tensors become ndarrays (a numpy scalar becomes a 0-d array); a tuple type expects a
    Python tuple of results, checked field by field.
    """
    if isinstance(expected, TupleType):
        if not isinstance(result, tuple) or len(result) != len(expected.fields):
            raise InternalError(f"reference of {op_name} returned {type(result).__name__}, "
                                f"its relation says a {len(expected.fields)}-tuple")
        return tuple(check_result(op_name, r, t) for r, t in zip(result, expected.fields))
    if isinstance(result, np.generic):      # numpy ufuncs turn 0-d results into scalars
        result = np.asarray(result)
    if not isinstance(result, np.ndarray):
        raise InternalError(f"reference of {op_name} returned {type(result).__name__}, "
                            "not an ndarray")
    if isinstance(expected, TensorType):
        if RELAY_DTYPE_OF.get(result.dtype) != expected.dtype:
            raise InternalError(f"reference of {op_name} returned dtype {result.dtype}, "
                                f"its relation says {expected.dtype}")
        ok = len(result.shape) == len(expected.shape) and all(
            not isinstance(d, int) or d == n for d, n in zip(expected.shape, result.shape))
        if not ok:
            raise InternalError(f"reference of {op_name} returned shape {result.shape}, "
                                f"its relation says {expected.shape}")
    return result
