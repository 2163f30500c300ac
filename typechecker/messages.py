"""The type checker's error messages, in one place (HOUSE_STYLE habit 8, mypy's registry).

Every message starts with a stable prefix that tests match on, then names
the typing or kinding rule whose premise failed; the same rule name is the
error's ``code``:

==========================  =====================================================
prefix                      used for
==========================  =====================================================
``type mismatch in R ...``  a failed unification (shows both types)
``type mismatch: X expects``  an operand of the wrong form, in the program's words
                            (``!`` / ``:=`` on a non-reference, calling a non-function)
``unbound variable %x``     Type-Var without a binding in scope
``undefined global @g``     Type-Global for a name the module does not define
``undefined constructor``   Type-ADT-Constructor / patterns for an unknown name
``non-exhaustive match``    Type-ADT-Match with a missing case (names a witness)
``relation R failed ...``   a type relation rejected its arguments (Type-Call-Op)
``bad attribute``           an operator attribute the schema rejects
``unknown operator``        Type-Op / Type-Call-Op for an unregistered name
``underconstrained``        inference could not determine a type
``ill-kinded type``         a Kind-* rule failed for a written type
==========================  =====================================================

Types are shown with :func:`semantics.printer.pretty`; until that module
exists (it is written concurrently) a small local rendering is used.
"""

from __future__ import annotations

from semantics import errors
from semantics.rules import Rule
from semantics.shapes import dim_str
from semantics.span import Span
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

SHOW_LIMIT = 400
"""Types longer than this many characters are shown elided in the middle."""


def show(t: Type) -> str:
    """Text of a type for an error message (the printer's, or a local fallback).

    A very large type (a reference nested thousands deep, or a tuple type whose
    sharing makes its text exponential) is elided, so the message stays readable
    and is produced in time bounded by :data:`SHOW_LIMIT`.
    """
    if _tree_larger_than(t, SHOW_LIMIT):
        head = _fallback(t, SHOW_LIMIT // 2)
        if _tree_larger_than(t, SHOW_LIMIT * 8):
            return f"{head} ..."
        text = _fallback(t)
    else:
        try:
            from semantics.printer import pretty

            text = pretty(t)
        except Exception:  # noqa: BLE001 - the printer must never hide the real error
            text = _fallback(t)
    if len(text) > SHOW_LIMIT:
        half = SHOW_LIMIT // 2
        text = f"{text[:half]} ... {text[-half:]}"
    return text


def _tree_larger_than(t: Type, limit: int) -> bool:
    """Whether ``t`` written out as a tree has more than ``limit`` nodes (stops early)."""
    from semantics.type_visitor import type_kids

    n = 0
    stack = [t]
    while stack:
        n += 1
        if n > limit:
            return True
        stack.extend(type_kids(stack.pop()))
    return False


def _fallback(t: Type, budget: int | None = None) -> str:
    """An iterative rendering of ``t`` (work items: text to emit, or a type to expand).

    With a ``budget``, rendering stops once that many characters are written.
    """
    out: list[str] = []
    size = 0
    work: list[object] = [t]
    while work:
        if budget is not None and size >= budget:
            break
        item = work.pop()
        if isinstance(item, str):
            out.append(item)
            size += len(item)
            continue
        assert isinstance(item, Type)
        parts = _fallback_parts(item)
        work.extend(reversed(parts))
    return "".join(out)


def _join(items: tuple[Type, ...], sep: str = ", ") -> list[object]:
    parts: list[object] = []
    for i, x in enumerate(items):
        if i:
            parts.append(sep)
        parts.append(x)
    return parts


def _fallback_parts(t: Type) -> list[object]:
    if isinstance(t, TensorType):
        if not t.shape:
            return [t.dtype]
        dims = ", ".join(dim_str(d) for d in t.shape)
        if len(t.shape) == 1:
            dims += ","
        return [f"Tensor[({dims}), {t.dtype}]"]
    if isinstance(t, TupleType):
        return ["(", *_join(t.fields), ",)" if len(t.fields) == 1 else ")"]
    if isinstance(t, FuncType):
        params = f"[{', '.join(p.name for p in t.type_params)}]" if t.type_params else ""
        return [f"fn {params}(", *_join(t.arg_types), ") -> ", t.ret_type]
    if isinstance(t, RefType):
        return ["Ref[", t.value, "]"]
    if isinstance(t, TypeCall):
        if not t.args:
            return [t.func.name]
        return [f"{t.func.name}[", *_join(t.args), "]"]
    if isinstance(t, (TypeVar, GlobalTypeVar)):
        return [t.name]
    if isinstance(t, IncompleteType):
        return ["?"]
    if isinstance(t, TypeRelation):
        name = getattr(t.relation, "name", "relation")
        return [f"{name}(", *_join(t.args), ")"]
    if isinstance(t, TypeData):
        return [f"type {t.header.name}"]
    return [type(t).__name__]


def with_rule(message: str, rule: str) -> str:
    return f"{message} ({rule})"


def mismatch(rule: Rule, what: str, expected: str, found: str, detail: str = "") -> str:
    context = f"{rule} ({what})" if what else rule
    text = errors.type_mismatch(expected, found, context)
    return f"{text}: {detail}" if detail else text


def arity(rule: Rule, what: str, expected: int, found: int, noun: str) -> str:
    context = f"{rule} ({what})" if what else rule
    return errors.type_mismatch(_count(expected, noun), _count(found, noun), context)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def unbound_variable(name: str) -> str:
    return with_rule(errors.unbound_variable(name), Rule.TYPE_VAR)


def undefined_global(name: str) -> str:
    return with_rule(errors.undefined_global(name), Rule.TYPE_GLOBAL)


def undefined_constructor(name: str, rule: Rule) -> str:
    return with_rule(f"undefined constructor {name}", rule)


def non_exhaustive(missing: str) -> str:
    return with_rule(errors.non_exhaustive_match(missing), Rule.TYPE_ADT_MATCH)


def relation_failed(relation: str, types: str, why: str, rule: Rule, op: str) -> str:
    return with_rule(errors.relation_failed(relation, types, why), f"{rule}: {op}")


def underconstrained(rule: Rule, what: str) -> str:
    return f"underconstrained: {what} ({rule})"


def ill_kinded(rule: Rule, what: str) -> str:
    return f"ill-kinded type: {what} ({rule})"


def written_as(span: Span | None, keyword: str, symbol: str) -> str:
    """How the program spelled a construct with two spellings (``ref_read`` or ``!``)."""
    text = span.text if span is not None else None
    if span is not None and text is not None:
        line = text.line_text(span.line)
        if line[span.column - 1:].startswith(keyword):
            return f"`{keyword}`"
    return f"`{symbol}`"


def not_a_reference(construct: str, subject: str, found: str, rule: Rule,
                    where: str = "") -> str:
    """``!``/``:=`` applied to something that is not a reference."""
    return with_rule(f"type mismatch: {construct} expects a reference{where}, but {subject} "
                     f"has type {found}", rule)


def not_a_function(subject: str, found: str) -> str:
    """A call whose callee is not a function."""
    return with_rule(f"type mismatch: only functions can be called, but {subject} has type "
                     f"{found}", Rule.TYPE_CALL)
