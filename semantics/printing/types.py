"""Printing types, ADT definitions and patterns (the syntax around expressions).

Part of the printer (:mod:`semantics.printer`, "Layout": types such as
``Tensor[(1, 10), float32]``, ``fn [A](T) -> U``, ``type List[A] { ... }``).
Types and patterns are shallow and printed recursively; type parameters and
pattern variables are bound through :class:`~semantics.printing.names._Scopes`.
"""

from __future__ import annotations

from typing import Any

from semantics.expr import (
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    Var,
)
from semantics.printing.literals import _dim_text
from semantics.printing.names import _Scopes, _type_base
from semantics.printing.rope import _join
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeRelation,
    TypeVar,
)


class _TypeSyntax(_Scopes):
    """Prints types, ADT definitions and patterns, binding their parameters and variables."""

    def type_text(self, t: Type) -> str:
        cls = type(t)
        if cls is TensorType:
            if not t.shape:  # type: ignore[attr-defined]
                return t.dtype  # type: ignore[attr-defined]
            dims = ", ".join(_dim_text(d) for d in t.shape)  # type: ignore[attr-defined]
            return f"Tensor[({dims}), {t.dtype}]"  # type: ignore[attr-defined]
        if cls is TupleType:
            fields = [self.type_text(f) for f in t.fields]  # type: ignore[attr-defined]
            if len(fields) == 1:
                return f"({fields[0]},)"
            return "(" + ", ".join(fields) + ")"
        if cls is TypeVar:
            names = self.tv_names.get(id(t))
            return names[-1] if names else _type_base(t.name)  # type: ignore[attr-defined]
        if cls is GlobalTypeVar:
            return t.name  # type: ignore[attr-defined]
        if cls is TypeCall:
            if not t.args:  # type: ignore[attr-defined]
                return t.func.name  # type: ignore[attr-defined]
            return t.func.name + "[" + ", ".join(  # type: ignore[attr-defined]
                self.type_text(a) for a in t.args) + "]"  # type: ignore[attr-defined]
        if cls is RefType:
            return f"Ref[{self.type_text(t.value)}]"  # type: ignore[attr-defined]
        if cls is FuncType:
            ft: FuncType = t  # type: ignore[assignment]
            params = self.type_params_text(ft.type_params)
            try:
                args = ", ".join(self.type_text(a) for a in ft.arg_types)
                text = f"fn {params}({args}) -> {self.type_text(ft.ret_type)}"
                if ft.type_constraints:
                    text += " /* where " + ", ".join(
                        self.type_text(c) for c in ft.type_constraints) + " */"
                return text
            finally:
                for tv in ft.type_params:
                    self.unbind_type_var(tv)
        if cls is IncompleteType:
            return "_"
        if cls is TypeRelation:
            name = getattr(t.relation, "name", str(t.relation))  # type: ignore[attr-defined]
            return f"{name}(" + ", ".join(self.type_text(a) for a in t.args) + ")"  # type: ignore
        if cls is TypeData:
            rope: list[Any] = []
            self.type_definition(t, rope)  # type: ignore[arg-type]
            return _join(rope)
        raise TypeError(f"pretty: not a type: {cls.__name__}")

    def type_definition(self, td: TypeData, out: list[Any]) -> None:
        params = self.type_params_text(td.type_vars)
        out.append(f"type {td.header.name}{params} {{")
        for ctor in td.constructors:
            out.append("\n  " + ctor.name)
            if ctor.inputs:
                out.append("(" + ", ".join(self.type_text(i) for i in ctor.inputs) + ")")
            out.append(",")
        out.append("\n}")
        for tv in td.type_vars:
            self.unbind_type_var(tv)

    # --- patterns ---------------------------------------------------------------------------
    def pattern(self, p: Pattern, out: list[Any]) -> list[Var]:
        """Print ``p`` (binding its variables, returned in order for unbinding)."""
        bound: list[Var] = []
        stack: list[Any] = [p]
        while stack:
            q = stack.pop()
            if type(q) is str:
                out.append(q)
                continue
            cls = type(q)
            if cls is PatternWildcard:
                out.append("_")
            elif cls is PatternVar:
                v = q.var
                out.append("%" + self.bind_var(v))
                bound.append(v)
                if v.type_annotation is not None:
                    out.append(": " + self.type_text(v.type_annotation))
            elif cls is PatternConstructor:
                out.append(q.constructor.name)
                if q.patterns:
                    stack.append(")")
                    for k, sub in enumerate(reversed(q.patterns)):
                        stack.append(sub)
                        if k < len(q.patterns) - 1:
                            stack.append(", ")
                    stack.append("(")
            elif cls is PatternTuple:
                stack.append(",)" if len(q.patterns) == 1 else ")")
                for k, sub in enumerate(reversed(q.patterns)):
                    stack.append(sub)
                    if k < len(q.patterns) - 1:
                        stack.append(", ")
                stack.append("(")
            else:
                raise TypeError(f"pretty: not a pattern: {cls.__name__}")
        return bound
