"""The operator registry (``semantics.ops.get``, ``list_ops``) and the operator families.

Importing this package registers every family: see :mod:`semantics.ops.registry`
for the protocol and the family modules for the operators.  Layout:

* :mod:`.registry` — ``OpDef``, ``AttrSpec``, ``Relation``, ``register_op``, ``get``;
* :mod:`.tables` — per-operator rule tables of consumers (gradients, lowerings,
  quantization annotations) with completeness checks (``missing``);
* :mod:`.reference` — the one reference-implementation contract
  (``compute(out_type, *arrays, **attrs)``) and the runtime-value helpers;
* :mod:`.relations`, :mod:`.transform_relations`, :mod:`.nn_relations` — type relations;
  :mod:`.attr_checks` — attribute checks;
* families: :mod:`.tensor`, :mod:`.creation`, :mod:`.reduce`, :mod:`.nn`, :mod:`.transform`,
  :mod:`.grad_ops` (the backward operators gradient rules use).
"""

from __future__ import annotations

from semantics.ops import families as _families  # noqa: F401  (registers every operator)
from semantics.ops.registry import (
    AttrSpec,
    OpDef,
    OpPattern,
    Relation,
    Traps,
    exists,
    get,
    list_ops,
    register_op,
)
from semantics.ops.tables import (
    GRADIENTS,
    LOWERINGS,
    QUANT_ANNOTATIONS,
    TANGENTS,
    RuleTable,
    declare_no_gradient,
    declare_no_tangent,
    missing,
    register_gradient,
    register_lowering,
    register_quant_annotation,
    register_tangent,
)

__all__ = ["GRADIENTS", "LOWERINGS", "QUANT_ANNOTATIONS", "TANGENTS", "AttrSpec", "OpDef",
           "OpPattern", "Relation", "RuleTable", "Traps", "declare_no_gradient",
           "declare_no_tangent", "exists", "get", "list_ops", "missing", "register_gradient",
           "register_lowering", "register_op", "register_quant_annotation", "register_tangent"]
