"""References and effects: ``ref`` reads, writes and sequencing (RULES.md §References).

Writes go to a reference in scope (or a fresh one); ``_gen_seq`` puts a write before a
value (``let _ = r := v; e``). References hold first-order values only, so no
Landin's knot can make a program diverge.
"""

from __future__ import annotations

from conformance.strategies.programgen.base import _GenBase
from conformance.strategies.programgen.scope import _Ctx
from semantics.expr import Expr, Let, RefRead, RefWrite, Var
from semantics.types import RefType, TupleType, Type


class _RefGen(_GenBase):
    """Reference reads, writes and sequencing."""

    # --- references -------------------------------------------------------------------------
    def _gen_ref_read(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        return RefRead(self.gen(RefType(t), ctx, d))

    def _gen_seq(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        return Let(Var("_"), self._gen_ref_write(TupleType(()), ctx, d), self.gen(t, ctx, d))

    def _gen_ref_write(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        refs = [(v, rt) for v, rt in ctx.vars if isinstance(rt, RefType)]
        if refs and not self.coin(4):
            v, rt = self.pick(refs)
            return RefWrite(v, self.gen(rt.value, ctx, d))
        content = self.rand_type(ctx, 1, first_order=True, allow_ref=False)
        return RefWrite(self.gen(RefType(content), ctx, d), self.gen(content, ctx, d))
