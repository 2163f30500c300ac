"""Runtime values of the big-step semantics (RULES.md, "Evaluation": the value grammar).

    v ::= t                      a tensor: ``numpy.ndarray`` of its exact Relay dtype (0-d: scalar)
        | (v1, ..., vn)          a tuple: a Python ``tuple``; ``()`` is the unit value
        | ⟨fn, Γ⟩ | ⟨fn, Γ, f⟩   a closure: :class:`Closure` (``f``: the let-rec self binding)
        | op                     an operator as a value: :class:`OpValue`
        | C                      a constructor as a function: :class:`ConstructorFunction`
        | C(v1, ..., vn)         an ADT value: :class:`ConstructorValue`
        | ℓ                      a reference: :class:`RefValue`

The store Δ of the rules (locations ℓ ↦ values) is not a separate table: a
location *is* a :class:`RefValue` object and ``Δ(ℓ)`` is its ``.value``
(``fresh(ℓ)`` in Semantics-Ref-Create is "a new object"). Python's heap keeps
the store, so references shared between closures alias exactly as the rules
say.

A nullary constructor is its own value: evaluating ``Nil`` gives the ADT value
``Nil`` (a :class:`ConstructorValue` with no fields), and calling it with no
arguments gives that value again (Semantics-ADT-Constructor with n = 0).

Also here, for the conformance kit: :func:`compare_values` (the differential
harness's comparison: float tolerances, NaN equal to NaN, functions opaque, with
an explanation of the first difference) and :func:`show_value` (the exact
rendering of counterexamples).

Everything here is iterative: values can be 10,000-element lists (nested
``ConstructorValue``s), so printing (:func:`value_str`, :func:`show_value`) and
comparison (:func:`values_equal`, :func:`compare_values`) keep their own stacks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from semantics import errors
from semantics.dtypes import SCALAR_DTYPES, literal
from semantics.errors import InternalError, RelayRuntimeError
from semantics.ops.memory import StorageValue

if TYPE_CHECKING:
    from interpreter.env import Env
    from semantics.expr import Constructor, Function, Var
    from semantics.ops.registry import OpDef
    from semantics.span import Span

__all__ = [
    "Closure", "ConstructorFunction", "ConstructorValue", "OpValue", "RefValue",
    "is_value", "value_str", "values_equal", "compare_values", "show_value", "value_kind",
    "TOLERANCES", "not_a_function", "construct",
]


class Closure:
    """A function value ``⟨fn, Γ⟩``: a Function node and the environment it closed over.

    Invariants: ``function`` is the Function node whose evaluation (Semantics-Closure,
    Semantics-Let-Rec or Semantics-Global) made this closure; ``env`` is the
    environment at that point (an empty environment for a global function, whose
    recursion goes through the module); ``self_var`` is the let-bound variable of a
    recursive closure (Semantics-Let-Rec), bound to the closure itself on every call,
    else None; ``name`` (``@f`` or ``%f``, or None) is for error messages only.
    Closures are compared by identity.
    """

    __slots__ = ("function", "env", "self_var", "name")

    def __init__(self, function: Function, env: Env, self_var: Var | None = None,
                 name: str | None = None):
        self.function = function
        self.env = env
        self.self_var = self_var
        self.name = name

    @property
    def params(self) -> tuple[Var, ...]:
        return self.function.params

    @property
    def body(self) -> Any:
        return self.function.body

    def __repr__(self) -> str:
        return "<closure>"


class RefValue:
    """A mutable reference cell (a store location ℓ; ``value`` is Δ(ℓ)).

    Invariants: ``value`` is always a value; two RefValues are the same location
    only if they are the same object (comparison is by identity).
    """

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:
        return value_str(self, limit=200)


class OpValue:
    """A primitive operator used as a value (Semantics-Op).

    Calling it from Relay (Semantics-Call-Op with no attributes) or from Python
    (``v(*arrays)``) runs the registry's reference implementation with the
    operator's default attributes. Invariant: ``opdef.name == name``.
    """

    __slots__ = ("name", "opdef")

    def __init__(self, name: str, opdef: OpDef):
        self.name = name
        self.opdef = opdef

    def __call__(self, *args: Any) -> Any:
        return self.opdef.reference(*args)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpValue) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("OpValue", self.name))

    def __repr__(self) -> str:
        return self.name


class ConstructorFunction:
    """A constructor with fields used as a function value (Semantics-Constructor).

    Invariant: ``constructor.inputs`` is non-empty (a nullary constructor
    evaluates to its :class:`ConstructorValue` directly).
    """

    __slots__ = ("constructor",)

    def __init__(self, constructor: Constructor):
        self.constructor = constructor

    @property
    def name(self) -> str:
        return self.constructor.name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConstructorFunction) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("ConstructorFunction", self.name))

    def __repr__(self) -> str:
        return self.name


class ConstructorValue:
    """An ADT value ``C(v1, ..., vn)``.

    Users build arguments by name, ``ConstructorValue("Cons", (np.int32(1),
    ConstructorValue("Nil")))``; ``evaluate`` resolves the name against the
    program's constructors (and converts the fields to the declared field types).

    Invariants: ``fields`` is a tuple of values; ``constructor`` is the
    :class:`~semantics.expr.Constructor` node that built the value (None only for
    a value built by a user and not yet resolved); ``name == constructor.name``
    when it is set. Equality (``==``) is structural and iterative
    (:func:`values_equal`); ConstructorValues are unhashable.
    """

    __slots__ = ("name", "fields", "constructor")

    def __init__(self, name: str, fields: Iterable[Any] = (),
                 constructor: Constructor | None = None):
        self.name = name
        self.fields = fields if type(fields) is tuple else tuple(fields)
        self.constructor = constructor

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConstructorValue):
            return NotImplemented
        return values_equal(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return value_str(self)


_RELAY_DTYPE_NAMES = frozenset(SCALAR_DTYPES)
_VALUE_TYPES = (np.ndarray, tuple, Closure, RefValue, OpValue, ConstructorFunction,
                ConstructorValue, StorageValue)


def check_op_result(name: str, result: Any) -> Any:
    """An operator's result as values: tensors (0-d arrays for numpy scalars), tuples of them,
    or a storage (``memory.alloc_storage``); ``InternalError`` otherwise."""
    if isinstance(result, np.generic):
        return np.asarray(result)
    if isinstance(result, (np.ndarray, StorageValue)):
        return result
    if type(result) is tuple:
        return tuple(check_op_result(name, r) for r in result)
    raise InternalError(
        f"operator {name} returned {type(result).__name__}, not a tensor (registry contract)")


def not_a_function(f: Any, span: Span | None) -> RelayRuntimeError:
    """The error of calling ``f``, a value that is not a function (every executor's)."""
    return RelayRuntimeError(errors.not_a_function(value_str(f, limit=60)), span)


def construct(f: ConstructorFunction | ConstructorValue, args: Sequence[Any],
              span: Span | None) -> ConstructorValue:
    """Apply a constructor value to ``args`` (Semantics-ADT-Constructor), for every executor:
    a nullary constructor's value or an unresolved name is not a function, and the number
    of arguments must be the constructor's arity."""
    ctor = f.constructor
    if ctor is None or (type(f) is ConstructorValue and (f.fields or ctor.inputs)):
        raise not_a_function(f, span)
    if len(args) != len(ctor.inputs):
        raise RelayRuntimeError(
            errors.wrong_arity(f"constructor {ctor.name}", len(ctor.inputs), len(args)), span)
    return ConstructorValue(ctor.name, tuple(args), ctor)


def is_value(x: Any) -> bool:
    """True when ``x`` is a runtime value (shallow: the fields are not inspected)."""
    if isinstance(x, np.ndarray):
        return x.dtype.name in _RELAY_DTYPE_NAMES
    return isinstance(x, _VALUE_TYPES)


# --- printing -------------------------------------------------------------------------------

def tensor_str(t: np.ndarray) -> str:
    """A 0-d tensor as its Relay literal (``1``, ``1.5f``, ``7u8``, ``True``); others numpy-style,
    on one line: ``array([[1, 2], [3, 4]], dtype=int32)``."""
    dtype = t.dtype.name
    if t.ndim == 0 and dtype in _RELAY_DTYPE_NAMES:
        return literal(t, dtype)
    body = " ".join(line.strip() for line in np.array2string(t, separator=", ").splitlines())
    if t.size == 0 and t.ndim != 1:
        body += f", shape={tuple(t.shape)}"
    return f"array({body}, dtype={dtype})"


def value_str(v: Any, limit: int | None = None) -> str:
    """The short text form of a value, as ``relay run`` prints it.

    Tensors: 0-d as Relay literals, others as ``array([...], dtype=...)``;
    tuples ``(a, b)`` (``(a,)`` for one field); ADT values ``Cons(1, Nil)``;
    closures ``<closure>``; references ``ref(v)`` (``ref(...)`` when printed
    inside itself); operators and constructor functions by name. With
    ``limit``, the text is cut to about ``limit`` characters and ends in ``...``.
    Iterative: deep lists do not reach Python's recursion limit.
    """
    out: list[str] = []
    size = 0
    open_refs: set[int] = set()
    # Work items: a value to print, or a literal string (or a ref to close).
    stack: list[Any] = [("v", v)]
    while stack:
        kind, item = stack.pop()
        if kind == "s":
            piece = item
        elif kind == "close-ref":
            open_refs.discard(item)
            piece = ")"
        else:
            x = item
            if isinstance(x, np.ndarray):
                piece = tensor_str(x)
            elif isinstance(x, np.generic):
                piece = tensor_str(np.asarray(x))
            elif type(x) is tuple:
                if not x:
                    piece = "()"
                else:
                    piece = "("
                    stack.append(("s", ",)" if len(x) == 1 else ")"))
                    for i in range(len(x) - 1, -1, -1):
                        stack.append(("v", x[i]))
                        if i:
                            stack.append(("s", ", "))
            elif isinstance(x, ConstructorValue):
                if not x.fields:
                    piece = x.name
                else:
                    piece = x.name + "("
                    stack.append(("s", ")"))
                    for i in range(len(x.fields) - 1, -1, -1):
                        stack.append(("v", x.fields[i]))
                        if i:
                            stack.append(("s", ", "))
            elif isinstance(x, RefValue):
                if id(x) in open_refs:
                    piece = "ref(...)"
                else:
                    open_refs.add(id(x))
                    piece = "ref("
                    stack.append(("close-ref", id(x)))
                    stack.append(("v", x.value))
            elif isinstance(x, Closure):
                piece = "<closure>"
            elif isinstance(x, (OpValue, ConstructorFunction)):
                piece = x.name
            elif isinstance(x, StorageValue):
                piece = f"<storage {x.size} bytes>"
            else:
                piece = f"<python {type(x).__name__}>"
        out.append(piece)
        size += len(piece)
        if limit is not None and size > limit:
            text = "".join(out)
            return text[: max(0, limit - 3)] + "..."
    return "".join(out)


# --- comparison -----------------------------------------------------------------------------

def values_equal(a: Any, b: Any, *, nan_equal: bool = True) -> bool:
    """Structural equality of two values (for tests and the conformance harness).

    Tensors are equal when dtype, shape and elements agree (NaN equals NaN when
    ``nan_equal``); tuples and ADT values field by field (ADT values also by
    constructor name); references, closures by identity; operators and
    constructor functions by name. Python scalars are compared as 0-d arrays of
    their own dtype against the other side's dtype. Iterative.
    """
    stack: list[tuple[Any, Any]] = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        if isinstance(x, (np.ndarray, np.generic)) or isinstance(y, (np.ndarray, np.generic)):
            if not _tensors_equal(x, y, nan_equal):
                return False
        elif type(x) is tuple and type(y) is tuple:
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif isinstance(x, ConstructorValue) and isinstance(y, ConstructorValue):
            if x.name != y.name or len(x.fields) != len(y.fields):
                return False
            stack.extend(zip(x.fields, y.fields))
        elif isinstance(x, (OpValue, ConstructorFunction)):
            if type(x) is not type(y) or x.name != y.name:
                return False
        elif isinstance(x, StorageValue) and isinstance(y, StorageValue):
            if not storages_equal(x, y):
                return False
        else:
            return False
    return True


def storages_equal(x: StorageValue, y: StorageValue) -> bool:
    """Two storages are equal when they hold the same bytes with the same alignment."""
    return x.alignment == y.alignment and bool(np.array_equal(x.data, y.data))


def _tensors_equal(x: Any, y: Any, nan_equal: bool) -> bool:
    if not isinstance(x, (np.ndarray, np.generic)):
        if not isinstance(x, (bool, int, float)):
            return False
        x = np.asarray(x, dtype=np.asarray(y).dtype)
    if not isinstance(y, (np.ndarray, np.generic)):
        if not isinstance(y, (bool, int, float)):
            return False
        y = np.asarray(y, dtype=np.asarray(x).dtype)
    x = np.asarray(x)
    y = np.asarray(y)
    if x.dtype != y.dtype or x.shape != y.shape:
        return False
    use_nan = nan_equal and x.dtype.kind == "f"
    return bool(np.array_equal(x, y, equal_nan=use_nan))


# --- the conformance comparison and exact rendering -------------------------------------------
# Used by the conformance kit's differential harness (``conformance.values_equal`` wraps
# :func:`compare_values`) and its counterexample reports (:func:`show_value`).

# Relative / absolute tolerances per float dtype (integers and bools compare exactly).
TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-3), "float32": (1e-5, 1e-6), "float64": (1e-9, 1e-12)}


def compare_values(a: Any, b: Any, *, exact_floats: bool = False,
                   tolerances: dict[str, tuple[float, float]] | None = None,
                   opaque: tuple[type, ...] = (), signed_zeros: bool = True
                   ) -> tuple[bool, str]:
    """Compare two runtime values as the conformance harness does.

    Tensors: same dtype and shape; integers/bools exactly; floats within
    ``tolerances[dtype]`` (default :data:`TOLERANCES`), NaN equals NaN, infinities by
    sign, a zero equals a zero of the same sign only (``x + 0 -> x`` is wrong at
    ``-0.0``). With ``exact_floats`` floats compare bitwise up to NaN payloads. Tuples
    and ADT values structurally, references by their
    contents (cycles cut), function values (closures, operators, constructor functions
    and instances of ``opaque``) are opaque: any two agree. Iterative.

    Args:
        a: the expected value (the oracle's).
        b: the value to check.
        exact_floats: bitwise float comparison instead of tolerances.
        tolerances: ``dtype -> (rtol, atol)`` overriding :data:`TOLERANCES`.
        opaque: further classes of function values (e.g. an external implementation's).
        signed_zeros: compare the sign of zeros (``False``: ``-0.0`` equals ``0.0``, for
            passes that legitimately reassociate float arithmetic).
    Returns:
        ``(equal, where-and-why)``; the explanation is empty when equal.
    """
    tol = tolerances or TOLERANCES
    stack: list[tuple[Any, Any, str]] = [(a, b, "result")]
    seen: set[tuple[int, int]] = set()
    functions = (Closure, OpValue, ConstructorFunction, *opaque)
    while stack:
        x, y, path = stack.pop()
        if isinstance(x, np.generic):
            x = np.asarray(x)
        if isinstance(y, np.generic):
            y = np.asarray(y)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            ok, why = _tensors_agree(x, y, exact_floats, tol, signed_zeros)
            if not ok:
                return False, f"at {path}: {why}"
            continue
        if isinstance(x, tuple) or isinstance(y, tuple):
            if not (isinstance(x, tuple) and isinstance(y, tuple)):
                return False, f"at {path}: {value_kind(x)} vs {value_kind(y)}"
            if len(x) != len(y):
                return False, f"at {path}: tuples of {len(x)} and {len(y)} fields"
            stack.extend((p, q, f"{path}.{i}") for i, (p, q) in enumerate(zip(x, y, strict=False)))
            continue
        if isinstance(x, ConstructorValue) or isinstance(y, ConstructorValue):
            if not (isinstance(x, ConstructorValue) and isinstance(y, ConstructorValue)):
                return False, f"at {path}: {value_kind(x)} vs {value_kind(y)}"
            if x.name != y.name or len(x.fields) != len(y.fields):
                return False, f"at {path}: constructor {x.name} vs {y.name}"
            stack.extend((p, q, f"{path}.{x.name}[{i}]")
                         for i, (p, q) in enumerate(zip(x.fields, y.fields, strict=False)))
            continue
        if isinstance(x, RefValue) or isinstance(y, RefValue):
            if not (isinstance(x, RefValue) and isinstance(y, RefValue)):
                return False, f"at {path}: {value_kind(x)} vs {value_kind(y)}"
            if (id(x), id(y)) in seen:
                continue
            seen.add((id(x), id(y)))
            stack.append((x.value, y.value, f"!{path}"))
            continue
        if isinstance(x, functions) and isinstance(y, functions):
            continue
        if isinstance(x, StorageValue) and isinstance(y, StorageValue):
            if not storages_equal(x, y):
                return False, f"at {path}: {x!r} vs {y!r}"
            continue
        return False, f"at {path}: {value_kind(x)} vs {value_kind(y)}"
    return True, ""


def value_kind(x: Any) -> str:
    """A short description of what ``x`` is (``tensor int32[2, 3]``, ``tuple``, ...)."""
    if isinstance(x, np.ndarray):
        return f"tensor {x.dtype.name}{list(x.shape)}"
    return type(x).__name__


def _tensors_agree(x: Any, y: Any, exact_floats: bool,
                   tol: dict[str, tuple[float, float]], signed_zeros: bool = True
                   ) -> tuple[bool, str]:
    if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
        return False, f"{value_kind(x)} vs {value_kind(y)}"
    if x.dtype != y.dtype:
        return False, f"dtype {x.dtype.name} vs {y.dtype.name}"
    if x.shape != y.shape:
        return False, f"shape {list(x.shape)} vs {list(y.shape)}"
    if x.dtype.kind != "f":
        if not np.array_equal(x, y):
            return False, f"{_first_diff(x, y)}"
        return True, ""
    nan_x, nan_y = np.isnan(x), np.isnan(y)
    if not np.array_equal(nan_x, nan_y):
        return False, f"NaN mismatch: {_first_diff(x, y)}"
    xs, ys = x[~nan_x], y[~nan_y]
    if exact_floats:
        if not np.array_equal(xs, ys):
            return False, _first_diff(x, y)
        if not np.array_equal(np.signbit(xs), np.signbit(ys)):
            return False, f"sign of zero: {_first_diff(x, y, signed=True)}"
        return True, ""
    inf_x, inf_y = np.isinf(xs), np.isinf(ys)
    if not np.array_equal(inf_x, inf_y) or not np.array_equal(xs[inf_x], ys[inf_y]):
        return False, f"infinity mismatch: {_first_diff(x, y)}"
    zero_x, zero_y = xs == 0, ys == 0
    if signed_zeros and np.any(zero_x & zero_y & (np.signbit(xs) != np.signbit(ys))):
        return False, f"sign of zero: {_first_diff(x, y, signed=True)}"
    rtol, atol = tol.get(x.dtype.name, (0.0, 0.0))
    fx, fy = xs[~inf_x].astype(np.float64), ys[~inf_y].astype(np.float64)
    if not np.all(np.abs(fx - fy) <= atol + rtol * np.abs(fy)):
        return False, f"beyond tolerance (rtol={rtol}, atol={atol}): {_first_diff(x, y)}"
    return True, ""


def _first_diff(x: np.ndarray, y: np.ndarray, signed: bool = False) -> str:
    if x.ndim == 0:
        return f"{show_value(x)} != {show_value(y)}"
    with np.errstate(all="ignore"):
        if x.dtype.kind == "f":
            neq = ~((x == y) | (np.isnan(x) & np.isnan(y)))
            if signed:
                neq |= (np.signbit(x) != np.signbit(y)) & ~np.isnan(x)
        else:
            neq = x != y
    idx = tuple(int(i) for i in np.argwhere(neq)[0]) if neq.any() else ()
    if not idx:
        return "values differ"
    return f"element {list(idx)}: {show_value(x[idx])} != {show_value(y[idx])}"


def show_value(v: Any, limit: int = 2000) -> str:
    """An exact, readable rendering of a value for counterexamples, iteratively.

    Scalars are Relay literals (``-0f``, ``nanf``, ``127i8``), other tensors
    ``Tensor[(2, 3), int32]([[...]])``, tuples, ADT values, ``ref(...)``; functions
    ``<closure>`` or ``<name>``. Output longer than ``limit`` characters ends in ``...``.

    Args:
        v: any runtime value.
        limit: roughly how many characters to print.
    Returns:
        The text.
    """
    out: list[str] = []
    stack: list[Any] = [v]
    open_refs: set[int] = set()
    while stack:
        if sum(len(s) for s in out) > limit:
            out.append("...")
            break
        x = stack.pop()
        if isinstance(x, str):          # a literal piece of punctuation pushed below
            out.append(x)
        elif isinstance(x, (np.ndarray, np.generic)):
            arr = np.asarray(x)
            if arr.ndim == 0:
                out.append(literal(arr, arr.dtype.name) if arr.dtype.name in _RELAY_DTYPE_NAMES
                           else repr(arr))
            else:
                body = " ".join(np.array2string(arr, separator=", ", threshold=64).split())
                out.append(f"Tensor[{tuple(arr.shape)}, {arr.dtype.name}]({body})")
        elif isinstance(x, tuple):
            parts: list[Any] = ["("]
            for i, f in enumerate(x):
                if i:
                    parts.append(", ")
                parts.append(f)
            parts.append(",)" if len(x) == 1 else ")")
            stack.extend(reversed(parts))
        elif isinstance(x, ConstructorValue):
            if not x.fields:
                out.append(x.name)
                continue
            parts = [f"{x.name}("]
            for i, f in enumerate(x.fields):
                if i:
                    parts.append(", ")
                parts.append(f)
            parts.append(")")
            stack.extend(reversed(parts))
        elif isinstance(x, RefValue):
            if id(x) in open_refs:
                out.append("ref(...)")
                continue
            open_refs.add(id(x))
            stack.extend(reversed(["ref(", x.value, ")"]))
        elif isinstance(x, Closure):
            out.append("<closure>")
        elif isinstance(x, (OpValue, ConstructorFunction)):
            out.append(f"<{x.name}>")
        else:
            out.append(repr(x))
    return "".join(out)
