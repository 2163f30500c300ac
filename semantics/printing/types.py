"""Printing types, ADT definitions and patterns (the syntax around expressions).

Part of the printer (:mod:`semantics.printer`, "Layout": types such as
``Tensor[(1, 10), float32]``, ``fn [A](T) -> U``, ``type List[A] { ... }``).
Type parameters and pattern variables are bound through
:class:`~semantics.printing.names.Scopes`.

Types are printed by one loop over an explicit stack of pending items (a type
to print, a literal fragment, or the end of a function type's scope that
unbinds its type parameters), so a 20,000-deep tuple, ``Ref`` or function
type needs no Python stack (HOUSE_STYLE habit 4). The same loop prints a
*summary* of at most ``limit`` characters (:func:`type_summary`): it stops as
soon as the limit is passed and ends the text with ``…``, so an error message
about a huge type costs O(limit) and can never fail. Symbolic dims print
through SymPy (:func:`~semantics.printing.literals.dim_text`); they are
shallow arithmetic, not nested types.
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
from semantics.printing.literals import dim_text
from semantics.printing.names import PrintContext, Scopes, type_base
from semantics.printing.rope import join_rope
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

__all__ = ["type_summary", "type_text"]

DEFAULT_SUMMARY_CHARS = 2000


class _EndScope:
    """Stack item: the end of a function type; unbinds its type parameters."""

    __slots__ = ("type_params",)

    def __init__(self, type_params: tuple[TypeVar, ...]):
        self.type_params = type_params


def _push_list(stack: list[Any], items: tuple[Any, ...], close: str) -> None:
    """Push ``items`` separated by ``, `` and followed by ``close`` (to pop in text order)."""
    stack.append(close)
    last = len(items) - 1
    for k in range(last, -1, -1):
        stack.append(items[k])
        if k:
            stack.append(", ")


class TypeSyntax(Scopes):
    """Prints types, ADT definitions and patterns, binding their parameters and variables."""

    def type_text(self, t: Type) -> str:
        """The text of ``t`` (iterative; binds and unbinds the type parameters it meets)."""
        out: list[str] = []
        self.type_pieces(t, out, None)
        return "".join(out)

    def type_pieces(self, root: Type, out: list[str], limit: int | None) -> bool:
        """Append the text of ``root`` to ``out``; stop once ``limit`` characters are passed.

        Returns:
            True when the whole text was written, False when it stopped at the limit
            (the type parameters bound so far then stay bound: use a throw-away scope).
        """
        stack: list[Any] = [root]
        size = 0
        while stack:
            item = stack.pop()
            cls = type(item)
            if cls is str:
                out.append(item)
                if limit is not None:
                    size += len(item)
                    if size > limit:
                        return False
                continue
            if cls is _EndScope:
                for tv in item.type_params:
                    self.unbind_type_var(tv)
                continue
            if cls is TensorType:
                if not item.shape:
                    stack.append(item.dtype)
                else:
                    dims = ", ".join(dim_text(d) for d in item.shape)
                    stack.append(f"Tensor[({dims}), {item.dtype}]")
            elif cls is TupleType:
                fields = item.fields
                if not fields:
                    stack.append("()")
                else:
                    _push_list(stack, fields, ",)" if len(fields) == 1 else ")")
                    stack.append("(")
            elif cls is TypeVar:
                names = self.tv_names.get(id(item))
                stack.append(names[-1] if names else type_base(item.name))
            elif cls is GlobalTypeVar:
                stack.append(item.name)
            elif cls is TypeCall:
                if not item.args:
                    stack.append(item.func.name)
                else:
                    _push_list(stack, item.args, "]")
                    stack.append(item.func.name + "[")
            elif cls is RefType:
                stack.append("]")
                stack.append(item.value)
                stack.append("Ref[")
            elif cls is FuncType:
                self._push_func_type(item, stack)
            elif cls is IncompleteType:
                stack.append("_")
            elif cls is TypeRelation:
                name = getattr(item.relation, "name", str(item.relation))
                _push_list(stack, item.args, ")")
                stack.append(f"{name}(")
            elif cls is TypeData:
                rope: list[Any] = []
                self.type_definition(item, rope)
                stack.append(join_rope(rope))
            else:
                raise TypeError(f"pretty: not a type: {cls.__name__}")
        return True

    def _push_func_type(self, ft: FuncType, stack: list[Any]) -> None:
        """``fn [params](args) -> ret /* where constraints */``; the parameters are bound now
        (the text after them is printed next) and unbound by the pushed :class:`_EndScope`."""
        params = self.type_params_text(ft.type_params)
        stack.append(_EndScope(ft.type_params))
        if ft.type_constraints:
            _push_list(stack, ft.type_constraints, " */")
            stack.append(" /* where ")
        stack.append(ft.ret_type)
        stack.append(" -> ")
        if ft.arg_types:
            _push_list(stack, ft.arg_types, ")")
            stack.append(f"fn {params}(")
        else:
            stack.append(f"fn {params}()")

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


def type_text(t: Type) -> str:
    """The whole text of ``t``, as :func:`semantics.printer.pretty` prints a type (for the
    layers below the printer: a relation's error message shows its argument types so)."""
    return TypeSyntax(PrintContext()).type_text(t)


def type_summary(t: Type, limit: int = DEFAULT_SUMMARY_CHARS) -> str:
    """The text of ``t`` cut to about ``limit`` characters (``…`` marks a cut), for messages.

    Costs O(``limit``) however large ``t`` is, and never raises for a type (it is
    what error messages and ``repr`` use to show types).

    Args:
        t: a type.
        limit: the number of characters after which the text is cut.
    Returns:
        The text, complete when it fits, else a prefix ending in ``…``.
    Raises:
        TypeError: ``t`` is not a type.
    """
    out: list[str] = []
    complete = TypeSyntax(PrintContext()).type_pieces(t, out, limit)
    text = "".join(out)
    return text if complete else text[:limit] + "…"
