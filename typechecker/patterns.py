"""Pattern typing (Type-Pattern-Var, Type-Pattern-Wildcard, Type-Pattern-Constructor,
Type-Pattern-Tuple) and exhaustiveness of ``match`` (Type-ADT-Match).

**Typing.** ``⊢ p : T ⇝ Γ'`` — pattern ``p`` matches values of type ``T`` and
binds the variables ``Γ'``. :func:`bind_pattern` walks the pattern on an
explicit stack: a wildcard binds nothing, a variable binds itself (its
annotation, if any, must agree with ``T``), a constructor pattern
instantiates its ADT's parameters freshly, unifies ``D[U...]`` with ``T``
and types its sub-patterns against the instantiated fields, and a tuple
pattern unifies ``T`` with a tuple of fresh variables.

**Exhaustiveness** is checked after solving, when the scrutinee's type is
known, with the usefulness algorithm of Maranget ("Warnings for pattern
matching", JFP 2007), in its witness-producing form: a clause matrix is
exhaustive iff the all-wildcards row is not useful against it. For the
first column we take the *signature* of its type (the ADT's constructors,
or the single tuple constructor); when the constructors appearing in the
column cover the signature we specialize by each of them, otherwise we
recurse on the default matrix and, if that is non-exhaustive, complete the
witness with a constructor the column misses. Types without a finite
signature (tensors, functions, references, type variables) are covered only
by wildcards and variables. The recursion runs on
:func:`semantics.visitor.run_recursive`, so deeply nested patterns do not
reach Python's stack. A non-exhaustive ``match`` is an error naming the
witness ("non-exhaustive match: no clause for Cons(_, Nil)"); ``match?``
is allowed to be partial.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from semantics.errors import RelayTypeError
from semantics.expr import (
    Clause,
    Constructor,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    Var,
)
from semantics.rules import Rule
from semantics.types import GlobalTypeVar, IncompleteType, TupleType, Type, TypeCall
from semantics.visitor import Recursive, run_recursive
from typechecker import messages
from typechecker.unify import substitute

if TYPE_CHECKING:
    from semantics.span import Span
    from typechecker.kinding import ConstructorInfo, Kinder
    from typechecker.unify import TypeStore


class PatternScope(Protocol):
    """What pattern typing needs of the inferencer (:class:`typechecker.infer.Inferencer`
    has it): the type store, Γ, written types and the constructor table. A protocol, so that
    this module does not import the inferencer that imports it."""

    store: TypeStore
    kinder: Kinder

    def annotation(self, t: Any, span: Span | None) -> Type: ...

    def unify(self, expected: Type, found: Type, rule: Rule, what: str,
              span: Span | None) -> None: ...

    def bind(self, var: Var, t: Type) -> tuple[Var, Type | None]: ...

    def constructor_info(self, ctor: Any, rule: Rule, span: Span | None) -> ConstructorInfo: ...


def bind_pattern(inf: PatternScope, pattern: Pattern, t: Type,
                 clause_span: Any) -> list[tuple[Var, Type | None]]:
    """Type ``pattern`` against ``t``, binding its variables in ``inf``.

    Returns the bindings to restore (``inf.restore``) when the clause's scope ends.
    """
    store = inf.store
    bound: list[tuple[Var, Type | None]] = []
    stack: list[tuple[Any, Type]] = [(pattern, t)]
    while stack:
        p, ty = stack.pop()
        tp = type(p)
        span = getattr(p, "span", None) or clause_span
        if tp is PatternWildcard:
            # [Type-Pattern-Wildcard]  ⊢ _ : T ⇝ ·
            continue
        if tp is PatternVar:
            # [Type-Pattern-Var]  ⊢ %x : T ⇝ %x : T
            var = p.var
            if not isinstance(var, Var):
                raise RelayTypeError("malformed pattern: a pattern variable must be a Var",
                                     span, code=Rule.TYPE_PATTERN_VAR)
            if var.type_annotation is not None:
                ann = inf.annotation(var.type_annotation, var.span or span)
                inf.unify(ann, ty, Rule.TYPE_PATTERN_VAR, f"pattern %{var.name_hint}", span)
                ty = ann
            bound.append(inf.bind(var, ty))
        elif tp is PatternConstructor:
            # [Type-Pattern-Constructor]  C : fn[V..](T1..Tn) -> D[V..]   ⊢ pi : Ti[U/V] ⇝ Γi
            #                             ⟹   ⊢ C(p1, ..., pn) : D[U..] ⇝ Γ1, ..., Γn
            ctor = p.constructor
            info = inf.constructor_info(ctor, Rule.TYPE_PATTERN_CONSTRUCTOR, span)
            fresh = tuple(store.fresh() for _ in info.type_vars)
            inf.unify(ty, TypeCall(info.result.func, fresh), Rule.TYPE_PATTERN_CONSTRUCTOR,
                      f"pattern {info.name}", span)
            subs = p.patterns
            if not isinstance(subs, tuple) or len(subs) != len(info.fields):
                n = len(subs) if isinstance(subs, tuple) else 0
                raise RelayTypeError(messages.arity(
                    Rule.TYPE_PATTERN_CONSTRUCTOR, f"pattern {info.name}", len(info.fields), n,
                    "field"), span, code=Rule.TYPE_PATTERN_CONSTRUCTOR)
            mapping = dict(zip(info.type_vars, fresh, strict=False))
            for sub, field in reversed(list(zip(subs, info.fields, strict=False))):
                stack.append((sub, substitute(field, mapping, {})))  # type: ignore[arg-type]
        elif tp is PatternTuple:
            # [Type-Pattern-Tuple]  ∀i. ⊢ pi : Ti ⇝ Γi
            #                       ⟹   ⊢ (p1, ..., pn) : (T1, ..., Tn) ⇝ Γ1, ..., Γn
            subs = p.patterns
            if not isinstance(subs, tuple):
                raise RelayTypeError("malformed pattern: tuple pattern fields",
                                     span, code=Rule.TYPE_PATTERN_TUPLE)
            known = store.find(ty)
            if type(known) is TupleType and len(known.fields) == len(subs):
                fields = known.fields
            else:
                fields = tuple(store.fresh() for _ in subs)
                inf.unify(ty, TupleType(fields), Rule.TYPE_PATTERN_TUPLE,
                          f"tuple pattern of {len(subs)} fields", span)
            for sub, field in reversed(list(zip(subs, fields, strict=False))):
                stack.append((sub, field))
        else:
            raise RelayTypeError(f"malformed pattern: {type(p).__name__} is not a pattern",
                                 span, code=Rule.TYPE_ADT_MATCH)
    return bound


# --- exhaustiveness -------------------------------------------------------------------------

_WILD = ("_",)
_TUPLE_KEY = "()"


def _is_wild(p: Any) -> bool:
    return type(p) is PatternWildcard or type(p) is PatternVar or p is _WILD


class _Sig:
    """One constructor of a column's signature: key, arity, field types, display name."""

    __slots__ = ("key", "arity", "fields", "name")

    def __init__(self, key: str, arity: int, fields: list[Type | None], name: str):
        self.key = key
        self.arity = arity
        self.fields = fields
        self.name = name


def missing_case(inf: PatternScope, clauses: tuple[Clause, ...], scrutinee: Type) -> str | None:
    """A value shape no clause matches, as text (``"Nil"``), or None if the match is exhaustive."""
    rows = [[c.lhs] for c in clauses]
    witness = run_recursive(_witness(inf, rows, [scrutinee]))
    if witness is None:
        return None
    return _render(witness[0])


def _witness(inf: PatternScope, rows: list[list[Any]], tys: list[Type | None]) -> Recursive:
    if not tys:
        return None if rows else []
    heads = [r[0] for r in rows if not _is_wild(r[0])]
    sig = _signature(inf, tys[0], heads)
    keys = {_key(h) for h in heads}
    if sig is not None and all(s.key in keys for s in sig):
        for s in sig:
            sub = _specialize(rows, s)
            w = yield _witness(inf, sub, s.fields + tys[1:])
            if w is not None:
                return [_make(s, w[:s.arity])] + w[s.arity:]
        return None
    default = [r[1:] for r in rows if _is_wild(r[0])]
    w = yield _witness(inf, default, tys[1:])
    if w is None:
        return None
    if sig is None or not heads:
        return [_WILD] + w
    for s in sig:
        if s.key not in keys:
            return [_make(s, [_WILD] * s.arity)] + w
    return [_WILD] + w


def _key(p: Any) -> str:
    if type(p) is PatternConstructor:
        return p.constructor.name
    return _TUPLE_KEY


def _make(s: _Sig, fields: list[Any]) -> Any:
    if s.key == _TUPLE_KEY:
        return ("T", fields)
    return ("C", s.name, fields)


def _specialize(rows: list[list[Any]], s: _Sig) -> list[list[Any]]:
    out = []
    for r in rows:
        head = r[0]
        if _is_wild(head):
            out.append([_WILD] * s.arity + r[1:])
        elif _key(head) == s.key and len(head.patterns) == s.arity:
            out.append(list(head.patterns) + r[1:])
    return out


def _signature(inf: PatternScope, t: Type | None, heads: list[Any]) -> list[_Sig] | None:
    """The constructors of type ``t`` (from the heads when ``t`` is not known), or None."""
    store = inf.store
    if t is not None:
        t = store.resolve(t)
        if type(t) is TypeCall or type(t) is GlobalTypeVar:
            if isinstance(t, TypeCall):
                return _adt_signature(inf, t.func.name, t.args)
            assert isinstance(t, GlobalTypeVar)
            return _adt_signature(inf, t.name, ())
        if type(t) is TupleType:
            return [_Sig(_TUPLE_KEY, len(t.fields), list(t.fields), "")]
        if type(t) is not IncompleteType:
            return None
    for h in heads:
        if type(h) is PatternConstructor and isinstance(h.constructor, Constructor):
            info = inf.kinder.constructor(h.constructor.name)
            if info is not None:
                return _adt_signature(inf, info.adt, None)
        if type(h) is PatternTuple:
            return [_Sig(_TUPLE_KEY, len(h.patterns), [None] * len(h.patterns), "")]
    return None


def _adt_signature(inf: PatternScope, adt: str, args: tuple[Type, ...] | None) -> list[_Sig]:
    out = []
    for info in inf.kinder.constructors_of(adt):
        if args is not None and len(args) == len(info.type_vars):
            mapping = dict(zip(info.type_vars, args, strict=False))
            fields: list[Type | None] = [substitute(f, mapping, {})
                                         for f in info.fields]
        else:
            fields = [None] * len(info.fields)
        out.append(_Sig(info.name, len(info.fields), fields, info.name))
    return out


def _render(w: Any) -> str:
    """Text of a witness pattern (iterative: witnesses may be as deep as the patterns)."""
    out: list[str] = []
    stack: list[Any] = [w]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif item is _WILD:
            out.append("_")
        elif item[0] == "T":
            fields = item[1]
            parts: list[Any] = ["("]
            for i, f in enumerate(fields):
                if i:
                    parts.append(", ")
                parts.append(f)
            parts.append(",)" if len(fields) == 1 else ")")
            stack.extend(reversed(parts))
        else:
            _, name, fields = item
            if not fields:
                out.append(name)
                continue
            parts = [name + "("]
            for i, f in enumerate(fields):
                if i:
                    parts.append(", ")
                parts.append(f)
            parts.append(")")
            stack.extend(reversed(parts))
    return "".join(out)
