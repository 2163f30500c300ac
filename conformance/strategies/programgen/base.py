"""The generator's base: draws, fresh names, random types, the sharing pool.

:class:`_GenBase` holds one program's generation state (the Hypothesis ``draw``, the
:class:`ProgramConfig`, the module ``_State``, the enabled features and operators) and
the helpers every concept needs. The generator itself, ``assembly._Gen``, combines one
mixin per concept (``exprs``, ``operators``, ``effects``, ``adts``, ``recursion``), each a
subclass of this base; they call each other through ``self`` and ``gen`` dispatches the
``_gen_<form>`` methods by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from conformance.strategies import opcalls
from conformance.strategies.programgen.config import ProgramConfig
from conformance.strategies.programgen.scope import (
    _Ctx,
    _exists,
    _has_ref,
    _index,
    _ints,
    _is_pure,
    _RecPermit,
    _State,
)
from conformance.strategies.typeutil import adt_instance, has_type_var, is_first_order, type_key
from semantics.dtypes import is_float
from semantics.expr import Expr, Var
from semantics.types import FuncType, RefType, TensorType, TupleType, Type, TypeVar


class _GenBase:
    """What every generator mixin shares: draws, configuration, module state."""

    def __init__(self, draw: st.DrawFn, cfg: ProgramConfig, state: _State | None = None):
        self.draw = draw
        self.cfg = cfg
        self.s = state or _State()
        self.f = cfg.features
        all_ops = opcalls.registry_ops() if cfg.ops is None else list(cfg.ops)
        self.ops = [o for o in all_ops if _exists(o)] if "op" in self.f else []
        self.bool_ops = all(_exists(o) for o in ("less_equal", "greater", "logical_or",
                                                  "subtract"))
        # Swarm testing (``swarm``): a program may favour one dtype and a few operators.
        self.focus_dtype: str | None = None
        self.focus_ops: tuple[str, ...] = ()

    def swarm(self) -> None:
        """Draw this program's emphasis (swarm testing): half of the programs favour one
        dtype (half of their tensor types), half favour one or two operators (half of the
        elementwise calls that may use them, and one more binding in ``main``). Programs
        then repeat a construct on values of one type, where operators meet each other's
        results (nested float16 arithmetic, ``op(%x, %x)``, rare attribute variants)."""
        if self.cfg.dtypes and self.coin(2):
            self.focus_dtype = self.pick(self.cfg.dtypes)
        if self.ops and self.coin(2):
            self.focus_ops = tuple(self.pick(self.ops)
                                   for _ in range(self.draw(_ints(1, 2))))

    if TYPE_CHECKING:
        # The mixins call each other through ``self``; for the type checker, these are the
        # signatures of those cross-mixin methods (each defined in the mixin named).
        def gen(self, t: Type, ctx: _Ctx, depth: int) -> Expr: ...              # exprs
        def literal(self, t: Type, ctx: _Ctx, depth: int) -> Expr: ...          # exprs
        def construct(self, t: Type, ctx: _Ctx, depth: int) -> Expr: ...        # adts
        def random_op_call(self, ctx: _Ctx, d: int, name: str | None = None    # operators
                           ) -> tuple[Expr, Type] | None: ...
        def _gen_ref_write(self, t: Type, ctx: _Ctx, d: int) -> Expr: ...       # effects
        def _rec_ready(self, rec: _RecPermit) -> bool: ...                       # recursion
        def counter_loop(self, ctx: _Ctx, d: int, target: Type | None          # recursion
                         ) -> tuple[Var, Expr, Type]: ...

    # --- names and small helpers -----------------------------------------------------------
    def fresh(self, t: Type | None, prefix: str | None = None) -> str:
        if prefix is None:
            prefix = ("x" if isinstance(t, TensorType) else "t" if isinstance(t, TupleType)
                      else "f" if isinstance(t, FuncType) else "r" if isinstance(t, RefType)
                      else "a" if isinstance(t, TypeVar) else "d")
        return f"{prefix}{next(self.s.counter)}"

    def var(self, t: Type, prefix: str | None = None, annotate: bool = True) -> Var:
        return Var(self.fresh(t, prefix), t if annotate else None)

    def pick(self, options: Sequence[Any]) -> Any:
        """One of ``options`` (shrinks towards the first)."""
        if len(options) == 1:
            return options[0]
        return options[self.draw(_index(len(options)))]

    def coin(self, n: int = 2) -> bool:
        """True with probability 1/n (shrinks to False)."""
        return self.draw(_index(n)) == n - 1

    # --- types -----------------------------------------------------------------------------
    def tensor_type(self, dtype: str | None = None) -> TensorType:
        """A tensor type of ``dtype`` (else a configured dtype: a float one half the time,
        as the special-value mistakes — NaN, ±inf, -0.0, rounding — live in floats)."""
        dt = dtype
        if dt is None and self.focus_dtype is not None and self.coin(2):
            dt = self.focus_dtype
        if dt is None:
            floats = [d for d in self.cfg.dtypes if is_float(d)]
            if floats and len(floats) < len(self.cfg.dtypes) and self.coin(2):
                dt = self.pick(floats)
            else:
                dt = self.pick(self.cfg.dtypes)
        rank = self.draw(_ints(0, self.cfg.max_rank))
        shape = tuple(self.draw(_ints(1, self.cfg.max_dim)) for _ in range(rank))
        return TensorType(shape, dt)

    def rand_type(self, ctx: _Ctx, depth: int, *, first_order: bool = False,
                  allow_ref: bool = True, allow_tvars: bool = True) -> Type:
        kinds = ["tensor", "tensor", "existing"]
        if depth > 0:
            if "tuple" in self.f:
                kinds.append("tuple")
            if "closure" in self.f and not first_order:
                kinds.append("fn")
            if "ref" in self.f and allow_ref:
                kinds.append("ref")
        if "adt" in self.f and any(depth > 0 or not td.type_vars for td in self.s.adts):
            kinds.append("adt")
        if allow_tvars and ctx.tvars:
            kinds.append("tvar")
        kind = self.pick(kinds)
        if kind == "existing":
            pool = [t for t in ctx.types_in_scope()
                    if (not first_order or is_first_order(t)) and (allow_ref or not _has_ref(t))
                    and (allow_tvars or not has_type_var(t)) and "?" not in type_key(t)]
            if not pool:
                return self.tensor_type()
            return self.pick(pool)
        if kind == "tensor":
            return self.tensor_type()
        if kind == "tuple":
            n = self.draw(_ints(0, 3))
            return TupleType(tuple(self.rand_type(ctx, depth - 1, first_order=first_order,
                                                  allow_ref=allow_ref, allow_tvars=allow_tvars)
                                   for _ in range(n)))
        if kind == "fn":
            n = self.draw(_ints(0, 2))
            args = tuple(self.rand_type(ctx, depth - 1, allow_tvars=allow_tvars)
                         for _ in range(n))
            return FuncType(args, self.rand_type(ctx, depth - 1, allow_tvars=allow_tvars))
        if kind == "ref":
            return RefType(self.rand_type(ctx, depth - 1, first_order=True, allow_ref=False,
                                          allow_tvars=allow_tvars))
        if kind == "tvar":
            return self.pick(ctx.tvars)
        td = self.pick([td for td in self.s.adts if depth > 0 or not td.type_vars])
        args = tuple(self.rand_type(ctx, depth - 1, first_order=True, allow_ref=False,
                                    allow_tvars=allow_tvars) for _ in td.type_vars)
        return adt_instance(td, args)

    # --- sharing ------------------------------------------------------------------------------
    def _note(self, node: Expr, t: Type, ctx: _Ctx) -> None:
        """Record a pure, non-trapping node so that later code may share it."""
        if "sharing" not in self.f or not _is_pure(node, self.s.pure):
            return
        self.s.pure.add(id(node))
        self.s.pure_nodes.append(node)
        ctx.pool.append((node, type_key(t)))
