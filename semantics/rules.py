"""Rule names of ``semantics/RULES.md`` as data (HOUSE_STYLE habit 3).

``RULES.md`` is the source of truth; this enum mirrors its rule names one to
one (a test checks both directions). The interpreter reports
``Semantics-*`` rules through ``trace``; the type checker cites ``Type-*``
and ``Kind-*`` rules in its error messages, and the ``code`` of every error
it raises is a ``Rule``. ``Rule`` is a string enum, so a code also compares
equal to the rule's name as written (``err.code == "Type-Call"``).
"""

from __future__ import annotations

import enum


class Rule(str, enum.Enum):
    """Every named rule of RULES.md. ``rule.value`` (and ``str(rule)``) is the name as written."""

    # --- evaluation (RULES.md §Evaluation) ---
    SEMANTICS_CONST = "Semantics-Const"
    SEMANTICS_ID = "Semantics-Id"
    SEMANTICS_GLOBAL = "Semantics-Global"
    SEMANTICS_CLOSURE = "Semantics-Closure"
    SEMANTICS_OP = "Semantics-Op"
    SEMANTICS_CONSTRUCTOR = "Semantics-Constructor"
    SEMANTICS_PRODUCT = "Semantics-Product"
    SEMANTICS_PROJECTION = "Semantics-Projection"
    SEMANTICS_IF_TRUE = "Semantics-If-True"
    SEMANTICS_IF_FALSE = "Semantics-If-False"
    SEMANTICS_LET = "Semantics-Let"
    SEMANTICS_LET_REC = "Semantics-Let-Rec"
    SEMANTICS_SHARED = "Semantics-Shared"
    SEMANTICS_CALL = "Semantics-Call"
    SEMANTICS_CALL_OP = "Semantics-Call-Op"
    SEMANTICS_ADT_CONSTRUCTOR = "Semantics-ADT-Constructor"
    SEMANTICS_ADT_MATCH = "Semantics-ADT-Match"
    SEMANTICS_MATCH_FAIL = "Semantics-Match-Fail"
    SEMANTICS_PATTERN_WILDCARD = "Semantics-Pattern-Wildcard"
    SEMANTICS_PATTERN_VAR = "Semantics-Pattern-Var"
    SEMANTICS_PATTERN_CONSTRUCTOR = "Semantics-Pattern-Constructor"
    SEMANTICS_PATTERN_TUPLE = "Semantics-Pattern-Tuple"
    SEMANTICS_REF_CREATE = "Semantics-Ref-Create"
    SEMANTICS_REF_READ = "Semantics-Ref-Read"
    SEMANTICS_REF_WRITE = "Semantics-Ref-Write"
    SEMANTICS_GRAD = "Semantics-Grad"

    # --- typing (RULES.md §Typing) ---
    TYPE_VAR = "Type-Var"
    TYPE_GLOBAL = "Type-Global"
    TYPE_CONSTANT = "Type-Constant"
    TYPE_OP = "Type-Op"
    TYPE_ADT_CONSTRUCTOR = "Type-ADT-Constructor"
    TYPE_PRODUCT = "Type-Product"
    TYPE_PROJECTION = "Type-Projection"
    TYPE_LET = "Type-Let"
    TYPE_LET_REC = "Type-Let-Rec"
    TYPE_FUNCTION = "Type-Function"
    TYPE_FUNCTION_DEFINITION = "Type-Function-Definition"
    TYPE_CALL = "Type-Call"
    TYPE_CALL_OP = "Type-Call-Op"
    TYPE_IF = "Type-If"
    TYPE_ADT_MATCH = "Type-ADT-Match"
    TYPE_PATTERN_WILDCARD = "Type-Pattern-Wildcard"
    TYPE_PATTERN_VAR = "Type-Pattern-Var"
    TYPE_PATTERN_CONSTRUCTOR = "Type-Pattern-Constructor"
    TYPE_PATTERN_TUPLE = "Type-Pattern-Tuple"
    TYPE_REF = "Type-Ref"
    TYPE_READ_REF = "Type-Read-Ref"
    TYPE_WRITE_REF = "Type-Write-Ref"
    TYPE_GRADIENT = "Type-Gradient"
    TYPE_INSTANTIATE = "Type-Instantiate"
    TYPE_RELATION = "Type-Relation"
    TYPE_DIM_EQUAL = "Type-Dim-Equal"

    # --- kinding (RULES.md §Kinding) ---
    KIND_BASETYPE = "Kind-BaseType"
    KIND_SHAPE = "Kind-Shape"
    KIND_TENSOR = "Kind-Tensor"
    KIND_TUPLE = "Kind-Tuple"
    KIND_FUNCTION = "Kind-Function"
    KIND_REF = "Kind-Ref"
    KIND_TYPEVAR = "Kind-TypeVar"
    KIND_TYPECALL = "Kind-TypeCall"
    KIND_ADT = "Kind-ADT"
    KIND_RELATION = "Kind-Relation"

    @property
    def is_evaluation(self) -> bool:
        return self.value.startswith("Semantics-")

    def __str__(self) -> str:
        return self.value


EVALUATION_RULES = tuple(r for r in Rule if r.is_evaluation)
