"""Type-level slips: a value of the right shape and contents but the wrong dtype.

A constant folded into a wider dtype than the expression it replaces (``int32`` folded
as ``int64``, ``float32`` as ``float64``), and a ``cast`` to the wrong width. The
program still type-checks where the dtype flows only into ``main``'s (unannotated)
result; the harness compares dtypes exactly, so only the dtype tells the outcomes apart.
"""

from __future__ import annotations

import numpy as np

from conformance.mutants.core import Mutant, is_op, rewrite_sites
from semantics.expr import Call, Constant, Expr
from semantics.module import IRModule

_WIDER = {"int8": "int16", "int16": "int32", "int32": "int64", "uint8": "uint16",
          "uint16": "uint32", "uint32": "uint64", "float16": "float32", "float32": "float64"}


def _constant_dtype(mod: IRModule) -> IRModule:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not isinstance(old, Constant) or old.data.dtype.name not in _WIDER:
            return None
        return Constant(old.data.astype(_WIDER[old.data.dtype.name]))

    return rewrite_sites(mod, rewrite, limit=24)


def _cast_width(mod: IRModule) -> IRModule:
    def rewrite(new: Expr, old: Expr) -> Expr | None:
        if not is_op(old, "cast") or not isinstance(new, Call):
            return None
        dtype = new.attrs.get("dtype")
        if dtype not in _WIDER:
            return None
        return Call(new.op, new.args, new.attrs.replace(dtype=_WIDER[dtype]))

    return rewrite_sites(mod, rewrite, every=True)


MUTANTS = [
    Mutant("folded constant dtype widened", "type-level",
           "a constant folded into a wider dtype of the same kind",
           _constant_dtype, ("def @main(%x: int32) { (%x, 2) }", (np.int32(1),))),
    Mutant("cast to the wrong width", "type-level", "cast(x, dtype=d) emitted with a wider d",
           _cast_width, ("def @main(%x: int32) { cast(%x, dtype=\"int8\") }", (np.int32(1),))),
]
