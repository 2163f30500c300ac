"""Lowering rules of every operator family for the ``llvm`` target (importing registers them).

Rules live one family per module (:mod:`.tensor`, :mod:`.reduce`, :mod:`.transform`,
:mod:`.creation`, :mod:`.nn`) and are registered in
:data:`semantics.ops.tables.LOWERINGS` under ``(op, "llvm")``.  The contract of a rule —
``rule(call: OpCall) -> te.Tensor | tuple[te.Tensor, ...]``, raising ``Unsupported`` to
decline a call — is documented in :mod:`.base`.  An operator with no rule at all is
declared with ``LOWERINGS.declare_none(op, reason, "llvm")``; completeness is
``missing(LOWERINGS, qualifier="llvm") == []``.
"""

from __future__ import annotations

from backends.tvm.lower import (  # noqa: F401
    annotation,
    backward,
    bitwise,
    conv,
    creation,
    memory,
    nn,
    reduce,
    tensor,
    transform,
    winograd,
)
from backends.tvm.lower.base import TARGET, OpCall, Unsupported, lowering, no_lowering

__all__ = ["TARGET", "OpCall", "Unsupported", "lowering", "no_lowering"]
