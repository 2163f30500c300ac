"""The checker's own relations: tuple projection and the gradient type (run by the solver).

Type-Projection and Type-Gradient need the *outermost* form of a type that
may not be known when the rule's case runs (the tuple type of ``e`` in
``e.0``, the function type of ``f`` in ``grad(f)``). Rather than guess, the
case emits a constraint with one of these relations; the solver runs it as
soon as that outermost constructor is known (a "shallow" constraint), and
its errors are ordinary ``type mismatch`` errors of the rule.
"""

from __future__ import annotations

from typing import Any

from semantics.errors import RelayTypeError
from semantics.ops.registry import Relation
from semantics.rules import Rule
from semantics.types import FuncType, IncompleteType, TupleType, Type
from typechecker import messages


def _projection(args: tuple[Type, ...], index: Any, solver: Any) -> Type | None:
    # [Type-Projection]  Γ ⊢ e : (T0, ..., Tn-1)   0 <= i < n   ⟹   Γ ⊢ e.i : Ti
    t = args[0]
    if isinstance(t, IncompleteType):
        return None
    if not isinstance(t, TupleType):
        raise RelayTypeError(messages.mismatch(
            Rule.TYPE_PROJECTION, f"projection .{index}", "a tuple", messages.show(t)))
    if not 0 <= index < len(t.fields):
        raise RelayTypeError(messages.mismatch(
            Rule.TYPE_PROJECTION, f"projection .{index}", f"a tuple of at least {index + 1} fields",
            messages.show(t)))
    return t.fields[index]


def _gradient(args: tuple[Type, ...], attrs: Any, solver: Any) -> Type | None:
    # [Type-Gradient]  Γ ⊢ f : fn(T1, ..., Tn) -> O
    #                  ⟹   Γ ⊢ grad(f) : fn(T1, ..., Tn) -> (O, (T1, ..., Tn))
    f = args[0]
    if isinstance(f, IncompleteType):
        return None
    if not isinstance(f, FuncType) or f.type_params:
        raise RelayTypeError(messages.mismatch(
            Rule.TYPE_GRADIENT, "argument of grad", "a monomorphic function fn(T1, ..., Tn) -> O",
            messages.show(f)))
    return FuncType(f.arg_types, TupleType((f.ret_type, TupleType(f.arg_types))))


PROJECTION = Relation("Projection", _projection, "the checker's tuple projection relation")
GRADIENT = Relation("Gradient", _gradient, "the checker's Type-Gradient relation")


