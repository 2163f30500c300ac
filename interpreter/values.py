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

Everything here is iterative: values can be 10,000-element lists (nested
``ConstructorValue``s), so printing (:func:`value_str`) and comparison
(:func:`values_equal`) keep their own stacks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from semantics.dtypes import SCALAR_DTYPES, literal

if TYPE_CHECKING:
    from interpreter.env import Env
    from semantics.expr import Constructor, Function, Var
    from semantics.ops.registry import OpDef

__all__ = [
    "Closure", "ConstructorFunction", "ConstructorValue", "OpValue", "RefValue",
    "is_value", "value_str", "values_equal",
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
                ConstructorValue)


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
        else:
            return False
    return True


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
