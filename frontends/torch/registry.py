"""The PyTorch importer's converter tables and the values its converters exchange.

Two tables, keyed by :func:`target_name` of an FX node's target:

* :data:`ATEN` — ATen overloads (``"aten.relu.default"``) and the Python functions
  ``torch.export`` records for symbolic integer arithmetic (``"operator.mul"``,
  ``"torch.sym_max"``). A converter receives the node's arguments, already converted
  (a :class:`~frontends.onnx.builder.Value` per tensor, a :class:`SymValue` per symbolic
  integer, Python numbers and lists as they are), and returns a Value, a SymValue or a list
  of them (for a multi-output node).
* :data:`HIGHER_ORDER` — higher-order operators (``"higher_order.cond"``): their
  converters also receive the :class:`GraphConverter`-like context, to convert the
  subgraphs they carry (``frontends.torch.control``).

A :class:`SymValue` is a symbolic integer (a ``SymInt`` of the exported program: a size of
a dynamic dimension and arithmetic on it). It carries both views Relay needs: its dimension
(an int or a SymPy expression over the program's shape variables, used in types and to pick
reshape codes) and the run-time int64 scalar that computes it (``shape_of`` + ``take`` +
arithmetic), used when the integer flows into data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import sympy

from frontends.onnx.builder import Unsupported, Value, call, const
from semantics.shapes import Dim, canon_dim, floor_div, is_concrete, shape_var

AtenFn = Callable[..., Any]
ATEN: dict[str, AtenFn] = {}
HIGHER_ORDER: dict[str, AtenFn] = {}

_F = TypeVar("_F", bound=Callable[..., Any])

#: ATen overloads that only check or constrain symbolic values at run time in PyTorch;
#: they produce nothing Relay needs and convert to nothing.
NO_OPS = frozenset({"aten._assert_scalar.default", "aten._assert_tensor_metadata.default",
                    "aten.sym_constrain_range.default",
                    "aten.sym_constrain_range_for_size.default",
                    "aten._assert_async.msg"})


def aten(*names: str) -> Callable[[_F], _F]:
    """Register a converter for the ATen overloads (or Python functions) ``names``."""
    def deco(fn: _F) -> _F:
        for n in names:
            ATEN[n] = fn
        return fn
    return deco


def higher_order(*names: str) -> Callable[[_F], _F]:
    """Register a converter for higher-order operators (``"higher_order.cond"``)."""
    def deco(fn: _F) -> _F:
        for n in names:
            HIGHER_ORDER[n] = fn
        return fn
    return deco


def target_name(target: Any) -> str:
    """The table key of an FX ``call_function`` target: ``"aten.add.Tensor"`` for an ATen
    overload, ``"higher_order.cond"`` for a higher-order operator, ``"operator.mul"`` or
    ``"torch.sym_max"`` for a Python function."""
    import torch

    if isinstance(target, torch._ops.HigherOrderOperator):
        return "higher_order." + target.name()
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    module = getattr(target, "__module__", None) or ""
    module = {"_operator": "operator"}.get(module, module)
    name = getattr(target, "__name__", None) or str(target)
    return f"{module}.{name}" if module else name


def is_supported(name: str) -> bool:
    return name in ATEN or name in HIGHER_ORDER or name in NO_OPS or name == "operator.getitem"


# --- symbolic integers -------------------------------------------------------------------

@dataclass(eq=False)
class SymValue:
    """A symbolic integer: its dimension (for types) and its run-time int64 scalar."""

    dim: Dim
    runtime: Value
    #: ``(x, axis)`` when the integer is the size of ``x``'s dimension ``axis`` (a tensor
    #: with that dimension, for creating tensors of a symbolic shape)
    origin: tuple[Value, int] | None = None

    def __int__(self) -> int:
        if is_concrete(self.dim):
            return int(self.dim)  # type: ignore[arg-type]
        raise Unsupported(f"the symbolic size {self.dim} is used where Relay needs a static "
                          "attribute")

    def __index__(self) -> int:
        return int(self)

    @property
    def is_static(self) -> bool:
        return is_concrete(self.dim)


def sym_const(n: int) -> SymValue:
    return SymValue(int(n), const(np.int64(n)))


def dim_of(v: Any) -> Dim:
    """A torch ``SymInt`` (or int) as one of our dims: its SymPy expression rebuilt over our
    shape variables (named as PyTorch names its symbols, ``s0``)."""
    import torch

    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, torch.SymInt):
        return canon_dim(_from_sympy(v.node.expr))
    raise Unsupported(f"expected an integer size, got {v!r}")


def _from_sympy(e: Any) -> Any:
    """A torch SymPy expression over our shape variables (torch's own functions — FloorDiv,
    PythonMod, Max, Min — as SymPy's)."""
    if e.is_Integer:
        return int(e)
    if e.is_Symbol:
        return shape_var(str(e))
    args = [_from_sympy(a) for a in e.args]
    kind = type(e).__name__
    if isinstance(e, sympy.Add):
        return sympy.Add(*args)
    if isinstance(e, sympy.Mul):
        return sympy.Mul(*args)
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) >= 0:
        return sympy.Pow(args[0], args[1])
    if kind == "FloorDiv" and len(args) == 2:
        return floor_div(args[0], args[1])
    if kind in ("Mod", "PythonMod") and len(args) == 2:
        return sympy.Mod(args[0], args[1])
    if kind in ("Max", "Min"):
        return (sympy.Max if kind == "Max" else sympy.Min)(*args)
    raise Unsupported(f"the symbolic size {e} ({kind}) has no Relay shape expression")


def size_of(x: Value, axis: int) -> SymValue:
    """The size of ``x``'s dimension ``axis``: static, or computed from ``shape_of(x)``."""
    d = canon_dim(x.shape[axis])
    if isinstance(d, int):
        return sym_const(d)
    shape = call("shape_of", [x], dtype="int64")
    return SymValue(d, call("take", [shape, const(np.int64(axis))], axis=0), (x, axis))


# --- small helpers shared by the converter modules ----------------------------------------

def ident(name: str) -> str:
    """``name`` as a Relay identifier (other characters become ``_``; ``p_`` before a digit)."""
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else "p_" + out


def dtype_name(torch_dtype: Any) -> str:
    name = str(torch_dtype).replace("torch.", "")
    if name not in ("bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32",
                    "float64"):
        raise Unsupported(f"unsupported dtype {torch_dtype}")
    return name


def like(x: Value, v: Any) -> Value:
    """``v`` — a Value, a :class:`SymValue` or a Python number — as a Value; a number or a
    symbolic integer takes ``x``'s dtype (PyTorch's rule for a scalar operand)."""
    if isinstance(v, Value):
        return v
    if isinstance(v, SymValue):
        if v.is_static:
            return const(np.asarray(int(v), dtype=x.dtype))
        return call("cast", [v.runtime], dtype=x.dtype)
    return const(np.asarray(v, dtype=x.dtype))


def _category(dtype: str) -> int:
    return 0 if dtype == "bool" else 2 if dtype.startswith("float") else 1


def promote(a: Value, b: Any) -> tuple[Value, Value]:
    """``a`` and ``b`` (a Value, a symbolic integer or a number) cast to one dtype by
    PyTorch's rule: a number takes ``a``'s dtype; between tensors the higher category (bool
    < integer < float) wins, a dimensioned tensor's dtype over a 0-d one's within a category,
    numpy's promotion otherwise."""
    if not isinstance(b, Value):
        return a, like(a, b)
    if a.dtype == b.dtype:
        return a, b
    ca, cb = _category(a.dtype), _category(b.dtype)
    if ca != cb:
        dt = a.dtype if ca > cb else b.dtype
    elif (a.ndim == 0) != (b.ndim == 0):
        dt = b.dtype if a.ndim == 0 else a.dtype
    else:
        dt = np.promote_types(a.dtype, b.dtype).name
    cast = [v if v.dtype == dt else call("cast", [v], dtype=dt) for v in (a, b)]
    return cast[0], cast[1]


def ints(v: Any) -> tuple[int, ...]:
    if isinstance(v, (list, tuple)):
        return tuple(int(x) for x in v)
    return (int(v),)


def pair(v: Any) -> tuple[int, int]:
    t = ints(v)
    return (t[0], t[0]) if len(t) == 1 else (t[0], t[1])


class Unavailable:
    """A multi-output node's output the importer does not produce (e.g. max-pool indices)."""

    def __init__(self, what: str):
        self.what = what
