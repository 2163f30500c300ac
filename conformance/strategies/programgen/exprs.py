"""Type-directed expression generation: ``gen(t, ctx, depth)`` and its compound forms.

``gen`` picks, simplest first, a variable of type ``t``, a literal (introduction form:
constant, tuple, closure, ``ref``, constructor), or a compound form whose result has
type ``t``: ``let`` chains, ``if``, projections, calls of closures, variables and
(polymorphic) globals, and shared pure nodes. The typing rules it follows are those of
RULES.md §Typing (Leaves, Tuples, Bindings, Calls, Conditionals); the other forms come
from the sibling mixins (operators, references, matches, recursion).
"""

from __future__ import annotations

import numpy as np

from conformance.strategies import opcalls
from conformance.strategies.programgen.base import _GenBase
from conformance.strategies.programgen.scope import _Ctx, _GlobalInfo, _ints
from conformance.strategies.typeutil import (
    adt_args,
    has_type_var,
    is_first_order,
    match_type,
    substitute,
    type_key,
)
from semantics.dtypes import is_float
from semantics.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    RefCreate,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from semantics.types import FuncType, RefType, TensorType, TupleType, Type, TypeVar


class _ExprGen(_GenBase):
    """The type-directed core and the compound forms."""

    # --- the type-directed core ------------------------------------------------------------
    def gen(self, t: Type, ctx: _Ctx, depth: int) -> Expr:
        """An expression of type ``t`` in ``ctx`` (nesting at most ``depth``)."""
        key = type_key(t)
        opts: list[str] = []
        if ctx.by_key.get(key):
            opts.append("var")
        if not isinstance(t, TypeVar):
            opts.append("lit")
        if depth > 0:
            opts += self._compound_options(t, key, ctx)
        if not opts:
            raise ValueError(f"generator: no expression of type {key} in this context")
        choice = self.pick(opts)
        d = depth - 1
        if choice == "var":
            return self.pick(ctx.by_key[key])
        if choice == "lit":
            return self.literal(t, ctx, depth)
        return getattr(self, "_gen_" + choice)(t, ctx, d)

    def _compound_options(self, t: Type, key: str, ctx: _Ctx) -> list[str]:
        f = self.f
        opts = []
        if "let" in f:
            opts.append("let")
        if "if" in f:
            opts.append("if")
        if isinstance(t, TensorType) and self.ops and opcalls.producers(t, self.ops,
                                                                        self.cfg.dtypes):
            opts += ["op", "op"]
        if "tuple" in f:
            opts.append("proj")
        if "match" in f and "adt" in f and self.s.adts:
            opts.append("match")
        if "closure" in f and "higher_order" in f:
            opts.append("call_closure")
        if any(isinstance(ft, FuncType) and type_key(ft.ret_type) == key
               for _, ft in ctx.vars):
            opts.append("call_var")
        if "global" in f and self._global_candidates(t):
            opts += ["call_global", "call_global"]
        if "ref" in f and is_first_order(t) and not has_type_var(t):
            opts += ["ref_read", "seq"]
        if "ref" in f and isinstance(t, TupleType) and not t.fields:
            opts.append("ref_write")
        if "sharing" in f and ctx.shareable(key):
            opts += ["shared", "shared"]
        if ctx.rec is not None and type_key(ctx.rec.ret) == key and self._rec_ready(ctx.rec):
            opts += ["rec", "rec"]
        if "let_rec" in f and self.bool_ops and "closure" in f:
            opts.append("let_rec")
        return opts

    # literals (introduction forms) ------------------------------------------------------------
    def literal(self, t: Type, ctx: _Ctx, depth: int) -> Expr:
        d = max(depth - 1, 0)
        if isinstance(t, TensorType):
            return Constant(self.tensor_value(t))
        if isinstance(t, TupleType):
            node: Expr = Tuple(tuple(self.gen(f, ctx, d) for f in t.fields))
            self._note(node, t, ctx)
            return node
        if isinstance(t, FuncType):
            return self.function(t, ctx, d)
        if isinstance(t, RefType):
            return RefCreate(self.gen(t.value, ctx, d))
        info = adt_args(t)
        if info is not None:
            return self.construct(t, ctx, depth)
        raise ValueError(f"generator: no literal of type {type_key(t)}")

    def tensor_value(self, t: TensorType) -> np.ndarray:
        """Contents for a constant, drawn like ``main``'s inputs: small integers (also for
        floats; multiples of 1/8 in float mode) with, when ``special_values``, quarters and
        the dtype's edge cases (NaN, ±inf, -0.0, subnormals, integer extremes) mixed in."""
        from conformance.strategies.values import EDGE_ODDS, _seeded_array, arrays

        shape = tuple(int(d) for d in t.shape)  # type: ignore[arg-type]
        if self.cfg.special_values:
            # Directly (no per-constant composite strategy to build and validate). The
            # inputs get distinct and IEEE-heavy contents in alternates; constants that
            # stay constants get them here: one in eight of two or more elements has
            # pairwise distinct ones (no symmetric or tied contents to hide a wrong
            # permutation or window behind), one float one in eight is IEEE-heavy (half
            # of its elements NaN, ±inf or -0.0: ``minimum`` as a select, ``x * 0``).
            count = int(np.prod(shape)) if shape else 1
            distinct = count > 1 and self.coin(8)
            heavy = not distinct and is_float(t.dtype) and self.coin(8)
            return _seeded_array(self.draw, t.dtype, shape, count, self.cfg.value_bound,
                                 self.cfg.float_mode, 2 if heavy else EDGE_ODDS,
                                 ieee=heavy or not self.cfg.finite_extremes,
                                 distinct=distinct)
        return self.draw(arrays(t.dtype, shape, exact=True, bound=self.cfg.value_bound,
                                fractional=self.cfg.float_mode))

    def function(self, t: FuncType, ctx: _Ctx, depth: int) -> Function:
        params = [self.var(a) for a in t.arg_types]
        body_ctx = ctx.child(list(zip(params, t.arg_types, strict=False)), boundary=True, rec=None)
        body = self.gen(t.ret_type, body_ctx, depth)
        ret = t.ret_type if self.coin(2) else None
        return Function(tuple(params), body, ret)

    # compound forms ---------------------------------------------------------------------------
    def _gen_let(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        n = self.draw(_ints(1, self.cfg.max_let_chain))
        bindings: list[tuple[Var, Expr]] = []
        cur = ctx
        for _ in range(n):
            var, value, vt = self.binding(cur, d, t)
            bindings.append((var, value))
            cur = cur.child([(var, vt)]) if var.name_hint != "_" else cur.child()
        body = self.gen(t, cur, d)
        for var, value in reversed(bindings):
            body = Let(var, value, body)
        return body

    def binding(self, ctx: _Ctx, d: int, target: Type | None) -> tuple[Var, Expr, Type]:
        """One let binding: an op call, an effect, an alias, a local loop or any typed value."""
        kinds = ["value"]
        if self.ops:
            kinds.append("op")
        if "ref" in self.f:
            kinds += ["effect", "ref"]
        if "let_rec" in self.f and self.bool_ops and "closure" in self.f:
            kinds.append("loop")
        kind = self.pick(kinds)
        if kind == "op":
            call = self.random_op_call(ctx, d)
            if call is not None:
                expr, rt = call
                return self.var(rt, annotate=self.coin(2)), expr, rt
        if kind == "effect":
            return Var("_"), self._gen_ref_write(TupleType(()), ctx, d), TupleType(())
        if kind == "ref":
            refs = [(v, t) for v, t in ctx.vars if isinstance(t, RefType)]
            if refs and self.coin(2):
                v, rt = self.pick(refs)       # an alias of an existing reference
                return self.var(rt), v, rt
            inits = self.s.ref_inits
            if inits and self.coin(3):
                # A second allocation with the same initial value as an earlier one: two
                # references that a CSE must not merge (their writes are independent).
                first, content = self.pick(inits[self.pick(sorted(inits))])
                again = Constant(first.data.copy())
                self.s.pin(again)
                rt = RefType(content)
                # Written at once (``let %t = ref(c); %t := v; %t``): were the two merged,
                # the earlier reference, which ``main`` reads at its end, would see ``v``.
                fresh = self.var(rt)
                write = RefWrite(fresh, self.literal(content, ctx, 0))
                return self.var(rt), Let(fresh, RefCreate(again),
                                         Let(Var("_"), write, fresh)), rt
            content = self.rand_type(ctx, 1, first_order=True, allow_ref=False)
            rt = RefType(content)
            init = self.gen(content, ctx, d)
            if isinstance(init, Constant):
                self.s.pin(init)
                inits.setdefault(type_key(content), []).append((init, content))
            return self.var(rt), RefCreate(init), rt
        if kind == "loop":
            loop_var, fn, ft = self.counter_loop(ctx, d, target)
            return loop_var, fn, ft
        bt = target if (target is not None and self.coin(3)) else self.rand_type(ctx, 1)
        value = self.gen(bt, ctx, d)
        return self.var(bt, annotate=self.coin(2)), value, bt

    def _gen_if(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        cond = self.gen(TensorType((), "bool"), ctx, d)
        return If(cond, self.gen(t, ctx, d), self.gen(t, ctx, d))

    def _gen_proj(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        n = self.draw(_ints(0, 2))
        # Neighbours of the projected field often share its type, so that the index matters.
        others = [t if self.coin(2) else self.rand_type(ctx, 0) for _ in range(n)]
        i = self.draw(_ints(0, n))
        fields = tuple(others[:i] + [t] + others[i:])
        node = TupleGetItem(self.gen(TupleType(fields), ctx, d), i)
        self._note(node, t, ctx)
        return node

    def _gen_call_closure(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        n = self.draw(_ints(0, 2))
        args = tuple(self.rand_type(ctx, 1) for _ in range(n))
        ft = FuncType(args, t)
        callee = self.gen(ft, ctx, d)
        return Call(callee, tuple(self.gen(a, ctx, d) for a in args))

    def _gen_call_var(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        key = type_key(t)
        cands = [(v, ft) for v, ft in ctx.vars
                 if isinstance(ft, FuncType) and type_key(ft.ret_type) == key]
        v, ft = self.pick(cands)
        return Call(v, tuple(self.gen(a, ctx, d) for a in ft.arg_types))

    def _global_candidates(self, t: Type) -> list[tuple[_GlobalInfo, dict[int, Type]]]:
        out = []
        for g in self.s.globals:
            mapping: dict[int, Type] = {}
            if match_type(g.ret, t, {id(p) for p in g.type_params}, mapping):
                out.append((g, mapping))
        return out

    def _gen_call_global(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        g, mapping = self.pick(self._global_candidates(t))
        return self.call_global(g, mapping, ctx, d)

    def call_global(self, g: _GlobalInfo, mapping: dict[int, Type], ctx: _Ctx, d: int) -> Expr:
        mapping = dict(mapping)
        for p in g.type_params:
            if id(p) not in mapping:
                mapping[id(p)] = self.rand_type(ctx, 0, first_order=True, allow_ref=False)
        args = tuple(self.gen(substitute(a, mapping), ctx, d) for a in g.arg_types)
        return Call(GlobalVar(g.name), args)

    def _gen_shared(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        return self.pick(ctx.shareable(type_key(t)))
