"""The operator registry (``semantics.ops.get``, ``list_ops``) and the operator families.

Importing this package registers every family: see :mod:`semantics.ops.registry`
for the protocol and the family modules for the operators.
"""

from __future__ import annotations

from semantics.ops import families as _families  # noqa: F401  (registers every operator)
from semantics.ops.registry import (
    AttrSpec,
    OpDef,
    OpPattern,
    Relation,
    exists,
    get,
    list_ops,
    register_op,
)

__all__ = ["AttrSpec", "OpDef", "OpPattern", "Relation", "exists", "get", "list_ops",
           "register_op"]
