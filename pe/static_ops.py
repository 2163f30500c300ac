"""Evaluating an operator during partial evaluation (``pe.evaluator``): when every argument
of a call is a static tensor (or a static tuple of them), the registry's reference
implementation computes the result now and the call disappears from the residual program.

Failures (a Relay error, an arithmetic error, a bad attribute) are not reported here: the call
stays residual and the oracle reports the failure at run time, so partial evaluation never
changes which programs fail.  Results over :data:`MAX_STATIC_ELEMENTS` elements stay residual
too: folding them would grow the program.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pe.values import PValue, STensor, STuple
from semantics.expr import Call, Op
from semantics.ops.bound import BoundOp

__all__ = ["MAX_STATIC_ELEMENTS", "checked_result", "evaluate_op", "static_tensors"]

MAX_STATIC_ELEMENTS = 1 << 20
"""A static operator result larger than this stays a residual call (the program would grow)."""


def static_tensors(pv: PValue) -> Any:
    """The Python value of a static tensor (or tuple of them) as an operator takes it, or None."""
    s = pv.static
    if type(s) is STensor:
        return s.data
    if type(s) is STuple:
        out = []
        for x in s.fields:
            if not isinstance(x.static, STensor):
                return None
            out.append(x.static.data)
        return tuple(out)
    return None


def evaluate_op(op: Op, arrays: list[Any], call: Call) -> Any:
    """``⟦op⟧(arrays; attrs)`` with the shared operator call object, or None when it fails
    or is large. A failure is left for run time, where the oracle reports it.
    """
    result = BoundOp.attempt_call(op.name, call.attrs, arrays)
    return None if result is None else checked_result(result)


def checked_result(value: Any) -> Any:
    """An operator's result as a static value: arrays (and tuples of them) of at most
    :data:`MAX_STATIC_ELEMENTS` elements each; None for anything else."""
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        return value if value.size <= MAX_STATIC_ELEMENTS else None
    if type(value) is tuple:
        parts = [checked_result(v) for v in value]
        return None if any(p is None for p in parts) else tuple(parts)
    return None
