"""ADT definitions, constructor values and ``match`` with nested patterns.

Random ADTs (0-1 type parameters, 1-3 constructors, the first a base case; recursive and
polymorphic ones included), constructor applications (annotated when the fields do not
pin every type argument), exhaustive ``match`` or ``match?`` that may fail, tuple
matches, and patterns with the variables they bind (RULES.md §Pattern matching, §Typing
"Conditionals and matching"). A match on the parameter of a structurally recursive global
extends its recursion permit with the strict subterms it binds.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from conformance.strategies.programgen.base import _GenBase
from conformance.strategies.programgen.scope import (
    _Ctx,
    _ints,
    _is_param_of,
    _mentions_adt,
    _mentions_var,
)
from conformance.strategies.typeutil import adt_args, adt_instance, ctor_field_types, type_key
from semantics.expr import (
    Call,
    Clause,
    Constructor,
    Expr,
    Let,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    Var,
)
from semantics.types import GlobalTypeVar, Kind, TupleType, Type, TypeCall, TypeData, TypeVar

_CTOR_SUFFIX = ("Nil", "Cons", "Node", "More")


class _AdtGen(_GenBase):
    """ADT definitions, constructor values, matches and patterns."""

    # --- constructor values ----------------------------------------------------------------------
    def construct(self, t: Type, ctx: _Ctx, depth: int) -> Expr:
        name, args = adt_args(t)  # type: ignore[misc]
        td = self._adt(name)
        indices = list(range(len(td.constructors)))
        if depth <= 0:
            base = [i for i in indices if not _mentions_adt(td.constructors[i].inputs, name)]
            indices = base or indices
        i = self.pick(indices)
        ctor = td.constructors[i]
        fields = ctor_field_types(td, i, args)
        d = max(depth - 1, 0)
        # A nullary value is the call ``C()`` (the text format's and TVM's form).
        node: Expr = Call(ctor, tuple(self.gen(ft, ctx, d) for ft in fields))
        if td.type_vars and not all(_mentions_var(ctor.inputs, tv) for tv in td.type_vars):
            # The fields do not determine every type argument (``Nil`` of ``List[A]``):
            # pin them with an annotated binding, ``let %d: T = C(...); %d``.
            v = self.var(t, prefix="d")
            node = Let(v, node, v)
        return node

    # --- matches and patterns -------------------------------------------------------------------
    def _gen_match(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        if "tuple" in self.f and self.coin(3):
            return self.tuple_match(t, ctx, d)
        adt_vars = [(v, vt) for v, vt in ctx.vars if adt_args(vt) is not None]
        if adt_vars and self.coin(2):
            scrut_v, st_ = self.pick(adt_vars)
            data: Expr = scrut_v
        else:
            td = self.pick(self.s.adts)
            targs = tuple(self.rand_type(ctx, 0, first_order=True, allow_ref=False)
                          for _ in td.type_vars)
            st_ = adt_instance(td, targs)
            scrut_v = None
            data = self.gen(st_, ctx, d)
        return self.match(data, st_, t, ctx, d, scrut_v)

    def tuple_match(self, t: Type, ctx: _Ctx, d: int) -> Match:
        """``match (tuple) { (p1, ..., pn) => e, ..., _ => e }`` (nested tuple patterns)."""
        n = self.draw(_ints(1, 3))
        st_ = TupleType(tuple(self.rand_type(ctx, 1, first_order=True, allow_ref=False)
                              for _ in range(n)))
        data = self.gen(st_, ctx, d)
        clauses = []
        refutable = True
        for _ in range(self.draw(_ints(1, 2))):
            parts = [self.pattern(f, depth=2) for f in st_.fields]
            bound = [b for _, bs, _ in parts for b in bs]
            refutable = any(r for _, _, r in parts)
            clauses.append(Clause(PatternTuple(tuple(p for p, _, _ in parts)),
                                  self.gen(t, ctx.child(bound), d)))
            if not refutable:
                break
        if refutable:
            clauses.append(Clause(PatternWildcard(), self.gen(t, ctx, d)))
        return Match(data, tuple(clauses), complete=True)

    def match(self, data: Expr, st_: Type, t: Type, ctx: _Ctx, d: int,
              scrut_var: Var | None) -> Match:
        """An exhaustive match (or, sometimes, a ``match?`` that may fail) producing ``t``."""
        name, targs = adt_args(st_)  # type: ignore[misc]
        td = self._adt(name)
        order = self.draw(st.permutations(range(len(td.constructors))))
        partial = "partial_match" in self.f and self.coin(3)
        if partial and len(order) > 1:
            order = order[:self.draw(_ints(1, len(order) - 1))]
        rec = ctx.rec
        shrinking = rec is not None and rec.kind == "struct" and scrut_var is not None and (
            scrut_var in rec.smaller or _is_param_of(rec, scrut_var))
        clauses: list[Clause] = []
        refutable = False
        for i in order:
            fields = ctor_field_types(td, i, targs)
            pats: list[Pattern] = []
            bound: list[tuple[Var, Type]] = []
            for ft in fields:
                p, b, r = self.pattern(ft, depth=1)
                pats.append(p)
                bound.extend(b)
                refutable = refutable or r
            inner_rec = rec
            if shrinking and rec is not None:
                smaller = tuple(v for v, bt in bound if type_key(bt) == rec.adt_key)
                inner_rec = replace(rec, smaller=rec.smaller + smaller)
            body_ctx = ctx.child(bound, rec=inner_rec)
            clauses.append(Clause(PatternConstructor(td.constructors[i], tuple(pats)),
                                  self.gen(t, body_ctx, d)))
        if refutable and not partial:
            v = self.var(st_, annotate=False)
            lhs: Pattern = PatternVar(v) if self.coin(2) else PatternWildcard()
            extra = [(v, st_)] if isinstance(lhs, PatternVar) else []
            clauses.append(Clause(lhs, self.gen(t, ctx.child(extra), d)))
        return Match(data, tuple(clauses), complete=not partial)

    def pattern(self, t: Type, depth: int) -> tuple[Pattern, list[tuple[Var, Type]], bool]:
        """A pattern for values of ``t``: (pattern, variables it binds, refutable?)."""
        kinds = ["var", "wild"]
        if depth > 0 and isinstance(t, TupleType):
            kinds.append("tuple")
        if depth > 0 and adt_args(t) is not None:
            kinds.append("ctor")
        kind = self.pick(kinds)
        if kind == "wild":
            return PatternWildcard(), [], False
        if kind == "var":
            v = self.var(t, annotate=False)
            return PatternVar(v), [(v, t)], False
        if kind == "tuple":
            assert isinstance(t, TupleType)
            parts = [self.pattern(f, depth - 1) for f in t.fields]
            return (PatternTuple(tuple(p for p, _, _ in parts)),
                    [b for _, bs, _ in parts for b in bs], any(r for _, _, r in parts))
        name, targs = adt_args(t)  # type: ignore[misc]
        td = self._adt(name)
        i = self.draw(_ints(0, len(td.constructors) - 1))
        parts = [self.pattern(f, depth - 1) for f in ctor_field_types(td, i, targs)]
        refutable = len(td.constructors) > 1 or any(r for _, _, r in parts)
        return (PatternConstructor(td.constructors[i], tuple(p for p, _, _ in parts)),
                [b for _, bs, _ in parts for b in bs], refutable)

    # --- ADTs ---------------------------------------------------------------------------------
    def _adt(self, name: str) -> TypeData:
        for td in self.s.adts:
            if td.header.name == name:
                return td
        raise KeyError(name)

    def adt_definition(self, index: int) -> TypeData:
        """A random ADT: 0-1 type parameters, 1-3 constructors, the first one a base case."""
        names = ("Box", "Nat", "Lst", "Tree", "Shape", "Pair")
        name = f"{names[index % len(names)]}{index}" if index >= len(names) else names[index]
        header = GlobalTypeVar(name)
        tvars = tuple(TypeVar(f"{'AB'[i]}{index}", Kind.Type)
                      for i in range(self.draw(_ints(0, 1))))
        self_type = TypeCall(header, tvars) if tvars else header
        n_ctors = self.draw(_ints(1, 3))
        ctors = []
        field_ctx = _Ctx(tvars=tvars)
        fields: list[Type]
        for tag in range(n_ctors):
            arity = self.draw(_ints(0 if tag == 0 else 1, 2))
            fields = []
            for _ in range(arity):
                k = self.pick(["tensor", "self", "tvar", "other"] if tag else ["tensor", "tvar"])
                if k == "self":
                    fields.append(self_type)
                elif k == "tvar" and tvars:
                    fields.append(tvars[0])
                elif k == "other" and self.s.adts:
                    other = self.pick(self.s.adts)
                    fields.append(adt_instance(other, tuple(self.tensor_type()
                                                            for _ in other.type_vars)))
                else:
                    fields.append(self.rand_type(field_ctx, 0, first_order=True,
                                                 allow_ref=False, allow_tvars=False)
                                  if k == "tensor" else self.tensor_type())
            ctors.append(Constructor(f"{name}{_CTOR_SUFFIX[tag]}", tuple(fields), header, tag))
        return TypeData(header, tvars, tuple(ctors))
