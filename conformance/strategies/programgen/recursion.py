"""Terminating recursion: structural recursive calls and counter loops.

A structural call passes a variable bound by matching the recursive parameter (a strict
subterm); a counter loop ``fn (%n: int32, ..) { if (n <= 0 || n > B) {..} else {..
%loop(%n - 1, ..)} }`` ends within ``B = recursion_bound`` steps, as a global or a
``let``-bound local function ([Semantics-Let-Rec] in RULES.md §Bindings).
"""

from __future__ import annotations

import numpy as np

from conformance.strategies.programgen.base import _GenBase
from conformance.strategies.programgen.scope import _calls, _Ctx, _ints, _RecPermit
from conformance.strategies.typeutil import type_key
from semantics.expr import Call, Constant, Expr, Function, If, Let, Op, Var
from semantics.types import FuncType, TensorType, Type


class _RecGen(_GenBase):
    """Recursive calls under a permit, counter loops, ``let``-bound loops."""

    # --- terminating recursion ---------------------------------------------------------------
    def _rec_ready(self, rec: _RecPermit) -> bool:
        return rec.kind == "counter" or bool(rec.smaller)

    def _gen_rec(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        rec = ctx.rec
        assert rec is not None
        args: list[Expr] = []
        for i, at in enumerate(rec.arg_types):
            if i == 0 and rec.kind == "counter":
                assert rec.counter is not None
                one = Constant(np.array(1, np.int32))
                self.s.pin(one)
                args.append(Call(Op("subtract"), (rec.counter, one)))
            elif i == 0:
                args.append(self.pick(rec.smaller))
            else:
                args.append(self.gen(at, ctx, d))
        return Call(rec.callee, tuple(args))

    def guard(self, n: Var) -> Expr:
        """``n <= 0 || n > B``: true when the counter loop must stop."""
        zero = Constant(np.array(0, np.int32))
        bound = Constant(np.array(self.cfg.recursion_bound, np.int32))
        self.s.pin(zero, bound)
        return Call(Op("logical_or"), (Call(Op("less_equal"), (n, zero)),
                                       Call(Op("greater"), (n, bound))))

    def counter_body(self, callee: Expr, n: Var, params: list[tuple[Var, Type]], ret: Type,
                     ctx: _Ctx, d: int) -> Expr:
        arg_types = (TensorType((), "int32"), *(t for _, t in params[1:]))
        permit = _RecPermit(callee, "counter", arg_types, ret, counter=n)
        base_ctx = ctx.child(params, boundary=True, rec=None)
        step_ctx = ctx.child(params, boundary=True, rec=permit)
        step = self.gen(ret, step_ctx, d)
        if not _calls(step, callee):      # make sure the loop really recurses
            step = Let(self.var(ret), self._gen_rec(ret, step_ctx, d), step)
        return If(self.guard(n), self.gen(ret, base_ctx, d), step)

    def counter_loop(self, ctx: _Ctx, d: int, target: Type | None) -> tuple[Var, Expr, Type]:
        """``let %loop = fn (%n: int32, ..) -> R { if (stop) {..} else {..%loop(%n - 1, ..)} }``."""
        ret = target if (target is not None and self.coin(2)) else self.rand_type(ctx, 1)
        extra = [self.rand_type(ctx, 1) for _ in range(self.draw(_ints(0, 1)))]
        n = self.var(TensorType((), "int32"), prefix="n")
        params = [(n, TensorType((), "int32"))] + [(self.var(t), t) for t in extra]
        ft = FuncType(tuple(t for _, t in params), ret)
        loop = Var(self.fresh(ft, "loop"), ft if self.coin(2) else None)
        body = self.counter_body(loop, n, params, ret, ctx, d)
        return loop, Function(tuple(v for v, _ in params), body, ret), ft

    def _gen_let_rec(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        """``let %loop = fn(...) {...}; body`` where the body calls the loop (Semantics-Let-Rec)."""
        loop, fn, ft = self.counter_loop(ctx, d, t)
        assert isinstance(ft, FuncType)
        inner = ctx.child([(loop, ft)])
        if type_key(ft.ret_type) == type_key(t) and not self.coin(3):
            body: Expr = Call(loop, tuple(self.gen(a, inner, d) for a in ft.arg_types))
        else:
            body = self.gen(t, inner, d)
        return Let(loop, fn, body)
