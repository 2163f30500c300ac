"""``bind_params``: named parameters of ``main`` become constants (docs/architecture.md#toolchain).

Models and importers return ``(IRModule, params)``: ``main`` takes the data
input(s) first, then the weights, and ``params`` maps the weights' parameter
names (without ``%``) to numpy arrays (TVM's ``bind_params_by_name``
convention). ``bind_params(mod, params)`` substitutes a :class:`Constant`
holding each array for every use of its parameter and removes the parameter
from ``main``'s signature, so later passes (FoldConstant, FoldScaleAxis) can
pre-compute with the weights at compile time.

This is not a registered pass: it takes data besides the program.

Checks (user errors, ``RelayTypeError`` with the prefix ``bind_params:``):
a name that is no parameter of ``main``, a name that two parameters share
(the binding would be ambiguous), and an array that does not inhabit the
parameter's annotated tensor type (dtype different, rank different, or a
concrete dimension different; a symbolic or ``?`` dimension accepts any
size). Arrays are copied: mutating the caller's array afterwards does not
change the module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from semantics.errors import RelayTypeError
from semantics.expr import Constant, Expr, Function, Var
from semantics.module import IRModule
from semantics.printer import pretty
from semantics.rewrite import substitute
from semantics.shapes import as_int, is_concrete
from semantics.types import TensorType

__all__ = ["bind_params"]


def bind_params(mod: IRModule | Function, params: Mapping[str, Any]) -> IRModule | Function:
    """Bind parameters of ``main`` (or of a function) by name to constants.

    Args:
        mod: a module (its ``main`` is bound) or a function.
        params: parameter names (``"conv1_weight"``, no ``%``) to numpy arrays (or
            anything ``numpy.asarray`` accepts).
    Returns:
        The module (or function) with those parameters removed and their uses
        replaced by constants; the input itself when ``params`` is empty.
    Raises:
        RelayTypeError: an unknown or ambiguous name, or a value that does not fit the
            parameter's type annotation; a module without ``main``.
    """
    if isinstance(mod, IRModule):
        if "main" not in mod:
            raise RelayTypeError("bind_params: the module has no @main")
        bound = _bind_function(mod["main"], params)
        return mod if bound is mod["main"] else mod.with_function("main", bound)
    if isinstance(mod, Function):
        return _bind_function(mod, params)
    raise TypeError(f"bind_params: expected an IRModule or a Function, got {type(mod).__name__}")


def _bind_function(fn: Function, params: Mapping[str, Any]) -> Function:
    if not params:
        return fn
    by_name: dict[str, list[Var]] = {}
    for p in fn.params:
        by_name.setdefault(p.name_hint, []).append(p)
    mapping: dict[Var, Expr] = {}
    for name, value in params.items():
        found = by_name.get(name)
        if not found:
            known = ", ".join(f"%{p.name_hint}" for p in fn.params) or "none"
            raise RelayTypeError(f"bind_params: no parameter named %{name} "
                                 f"(parameters: {known})")
        if len(found) > 1:
            raise RelayTypeError(f"bind_params: {len(found)} parameters are named %{name}; "
                                 "the binding is ambiguous")
        var = found[0]
        mapping[var] = Constant(_checked_array(var, value), span=var.span)
    body = substitute(fn.body, mapping)
    kept = tuple(p for p in fn.params if p not in mapping)
    return Function(kept, body, fn.ret_type, fn.type_params, fn.attrs, span=fn.span)


def _checked_array(var: Var, value: Any) -> np.ndarray:
    """``value`` as an array, checked against ``var``'s annotation when it has one.

    Not copied here: the ``Constant`` made of it copies (and freezes) its data.
    """
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise RelayTypeError(f"bind_params: the value for %{var.name_hint} is not an array: "
                             f"{err}") from None
    if array.dtype == object:
        raise RelayTypeError(f"bind_params: the value for %{var.name_hint} is not a numeric "
                             "array")
    ann = var.type_annotation
    if ann is None:
        return array
    if not isinstance(ann, TensorType):
        raise RelayTypeError(f"bind_params: %{var.name_hint} has type {pretty(ann)}, "
                             "not a tensor type")
    if array.dtype.name != ann.dtype or array.ndim != ann.ndim or any(
            is_concrete(d) and as_int(d) != n for d, n in zip(ann.shape, array.shape, strict=True)):
        raise RelayTypeError(
            f"bind_params: %{var.name_hint} has type {pretty(ann)}, got an array of shape "
            f"{tuple(array.shape)} and dtype {array.dtype.name}")
    return array
