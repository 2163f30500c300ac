"""Type-directed generation of well-typed Relay programs with inputs (PLT Redex style).

``well_typed_exprs(type, ctx)`` draws an expression *of a given type* in a
typing context; ``well_typed_modules()`` draws ``Program(module, inputs)``
pairs: an :class:`IRModule` whose ``main`` takes first-order arguments, and
argument values for it. Every construct of the language appears:

* ``let`` chains and sequencing, graph sharing (a pure, non-trapping node
  reused inside one function body), tuples and projections, ``if``;
* functions and closures (capturing the context), higher-order calls (a
  function-typed parameter, a closure returned and called), global
  functions, polymorphic globals (``def @g[A](%x: A, ...)``) instantiated at
  their call sites;
* ADT definitions (random: recursive, polymorphic) and ``match`` with nested
  constructor and tuple patterns (exhaustive, or ``match?`` that may fail);
* references with observable effects: ``ref``, writes then reads, aliases
  (``let %r2 = %r1``), references captured by closures, sequencing; ``main``
  ends by reading every reference it bound, so a lost or reordered write
  changes its result (``ProgramConfig(effects=k)`` adds ``k`` top-level
  writes for targeted runs);
* operator calls for every registered operator
  (:mod:`conformance.strategies.opcalls`): type-directed elementwise calls
  anywhere a tensor is wanted, and ``let`` bindings of each operator's valid
  calls whose results ``main`` returns (so every call is observable);
* terminating recursion only: structural recursion on an ADT (a global whose
  recursive calls take a variable bound by matching its parameter — a strict
  subterm) and counter loops (global or ``let``-bound local functions whose
  recursive calls pass ``n - 1`` and whose guard ``n <= 0 || n > B`` ends them
  within ``B`` steps). A recursive function's name is not usable inside the
  closures it creates, references hold first-order values only (no Landin's
  knot), and a global calls only globals defined before it; so every
  generated program terminates.

Numerics: by default integer dtypes and ``float32`` with small integer
contents (``exact=True``), so most arithmetic is exact and comparisons need no
tolerance; ``ProgramConfig(float_mode=True)`` draws float-heavy programs with
moderate real values (compare with tolerances).

Not generated: ``grad`` (needs the AD package), effectful graph sharing
(whose evaluation point is ambiguous), references to functions, symbolic or
``?`` shapes in programs (they appear in :mod:`conformance.strategies.ast`).

Shrinking: every choice is ordered simplest-first (use a variable, then a
literal, then compound forms) and sizes are drawn as integers, so Hypothesis
shrinks towards small programs. Generation recursion is bounded by
``max_depth`` (a small caller-chosen bound independent of user input).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np
from hypothesis import strategies as st

from conformance.strategies import opcalls
from conformance.strategies.typeutil import (
    adt_args,
    adt_instance,
    ctor_field_types,
    has_type_var,
    is_first_order,
    match_type,
    substitute,
    type_key,
)
from conformance.strategies.values import values_of
from semantics.expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from semantics.module import IRModule
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    Kind,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeVar,
)

__all__ = ["ProgramConfig", "Program", "TypingContext", "well_typed_exprs", "well_typed_modules",
           "well_typed_programs", "FEATURES"]

FEATURES = frozenset({
    "let", "if", "tuple", "closure", "higher_order", "global", "poly", "adt", "match",
    "partial_match", "ref", "op", "sharing", "recursion", "let_rec",
})

DEFAULT_DTYPES = ("int32", "bool", "int64", "int8", "uint8", "float32")
FLOAT_DTYPES = ("float32", "float64", "float16", "bool", "int32")


@dataclass(frozen=True)
class ProgramConfig:
    """Size, numeric and feature controls of the well-typed generator."""

    max_depth: int = 2            # nesting of compound expressions
    max_let_chain: int = 2        # bindings in one let chain
    max_globals: int = 2          # helper globals besides main
    max_adts: int = 2
    max_params: int = 2
    max_rank: int = 2
    max_dim: int = 3
    type_depth: int = 2
    dtypes: tuple[str, ...] = DEFAULT_DTYPES
    float_mode: bool = False      # moderate real float values (compare with tolerances)
    value_bound: int = 8          # |x| <= value_bound for exact-mode contents
    recursion_bound: int = 3      # counter loops run at most this many times
    adt_depth: int = 3            # nesting of generated ADT input values
    features: frozenset[str] = FEATURES
    ops: tuple[str, ...] | None = None   # None: every registered operator
    focus_op: str | None = None   # main binds at least one call of this operator
    min_op_bindings: int = 1      # op-call bindings main makes (when operators exist)
    effects: int = 0              # extra top-level ``ref_write`` steps in main (targeted runs)

    def with_features(self, *names: str) -> ProgramConfig:
        return replace(self, features=frozenset(names))

    def without(self, *names: str) -> ProgramConfig:
        return replace(self, features=self.features - set(names))


class Program(NamedTuple):
    """A generated program: a module and the arguments for its ``main``."""

    module: IRModule
    inputs: tuple[Any, ...]

    def text(self) -> str:
        from semantics import pretty

        return pretty(self.module)

    def __repr__(self) -> str:
        try:
            body = self.text()
        except Exception as err:  # noqa: BLE001 - repr must not fail (e.g. printer missing)
            body = f"<unprintable module: {type(err).__name__}: {err}>"
        args = ", ".join(format_value(v) for v in self.inputs)
        return f"Program(\n{body}\n# inputs: ({args})\n)"


def format_value(v: Any) -> str:
    """A short, exact rendering of a runtime value (for counterexamples)."""
    from conformance.harness import show_value

    return show_value(v)


@dataclass
class TypingContext:
    """Variables in scope with their types, for :func:`well_typed_exprs`."""

    variables: Sequence[tuple[Var, Type]] = ()
    module: IRModule | None = None


# --- scopes ----------------------------------------------------------------------------------

@dataclass
class _RecPermit:
    """Where a recursive call is allowed: callee, kind, decreasing argument, signature."""

    callee: Expr
    kind: str                         # "struct" or "counter"
    arg_types: tuple[Type, ...]
    ret: Type
    counter: Var | None = None        # the counter parameter (counter loops)
    param: Var | None = None          # the parameter recursion descends on (structural)
    smaller: tuple[Var, ...] = ()     # variables bound to strict subterms of ``param``
    adt_key: str = ""


class _Ctx:
    """A scope: variables by type key, shareable pure nodes, the recursion permit."""

    __slots__ = ("vars", "by_key", "pool", "parent", "boundary", "rec", "tvars")

    def __init__(self, parent: _Ctx | None = None, new: Sequence[tuple[Var, Type]] = (), *,
                 boundary: bool = False, rec: _RecPermit | None = None,
                 tvars: Sequence[TypeVar] = ()):
        self.parent = parent
        self.boundary = boundary or parent is None
        self.vars: list[tuple[Var, Type]] = (list(parent.vars) if parent else []) + list(new)
        self.by_key: dict[str, list[Var]] = {}
        for v, t in self.vars:
            self.by_key.setdefault(type_key(t), []).append(v)
        self.pool: list[tuple[Expr, str]] = []
        self.rec = rec
        self.tvars: tuple[TypeVar, ...] = (parent.tvars if parent else ()) + tuple(tvars)

    def child(self, new: Sequence[tuple[Var, Type]] = (), **kw: Any) -> _Ctx:
        if "rec" not in kw:
            kw["rec"] = self.rec
        return _Ctx(self, new, **kw)

    def shareable(self, key: str) -> list[Expr]:
        out = []
        c: _Ctx | None = self
        while c is not None:
            out.extend(n for n, k in c.pool if k == key)
            if c.boundary:
                break
            c = c.parent
        return out

    def types_in_scope(self) -> list[Type]:
        return [t for _, t in self.vars]


@dataclass
class _GlobalInfo:
    name: str
    type_params: tuple[TypeVar, ...]
    arg_types: tuple[Type, ...]
    ret: Type


@dataclass
class _State:
    adts: list[TypeData] = field(default_factory=list)
    globals: list[_GlobalInfo] = field(default_factory=list)
    counter: Any = field(default_factory=itertools.count)
    pure: set[int] = field(default_factory=set)
    observed: list[tuple[Var, Type]] = field(default_factory=list)


_PREFIX = {"tensor": "x", "tuple": "t", "fn": "f", "ref": "r", "adt": "d", "var": "a"}


class _Gen:
    """One program's generation: draws, configuration, module state."""

    def __init__(self, draw: st.DrawFn, cfg: ProgramConfig, state: _State | None = None):
        self.draw = draw
        self.cfg = cfg
        self.s = state or _State()
        self.f = cfg.features
        all_ops = opcalls.registry_ops() if cfg.ops is None else list(cfg.ops)
        self.ops = [o for o in all_ops if _exists(o)] if "op" in self.f else []
        self.bool_ops = all(_exists(o) for o in ("less_equal", "greater", "logical_or",
                                                  "subtract"))

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
        dt = dtype or self.pick(self.cfg.dtypes)
        rank = self.draw(st.integers(0, self.cfg.max_rank))
        shape = tuple(self.draw(st.integers(1, self.cfg.max_dim)) for _ in range(rank))
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
            n = self.draw(st.integers(0, 3))
            return TupleType(tuple(self.rand_type(ctx, depth - 1, first_order=first_order,
                                                  allow_ref=allow_ref, allow_tvars=allow_tvars)
                                   for _ in range(n)))
        if kind == "fn":
            n = self.draw(st.integers(0, 2))
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
        """Contents for a constant: small integers (exact), multiples of 1/8 in float mode."""
        n = _size(t.shape)
        b = self.cfg.value_bound
        if t.dtype == "bool":
            vals = self.draw(st.lists(st.booleans(), min_size=n, max_size=n))
            return np.array(vals, dtype=np.bool_).reshape(t.shape)
        if self.cfg.float_mode and t.dtype.startswith("float"):
            vals = self.draw(st.lists(st.integers(-8 * b, 8 * b), min_size=n, max_size=n))
            return (np.array(vals, dtype=np.float64) / 8.0).astype(t.dtype).reshape(t.shape)
        lo = 0 if t.dtype.startswith("uint") else -b
        vals = self.draw(st.lists(st.integers(lo, b), min_size=n, max_size=n))
        return np.array(vals, dtype=np.int64).astype(t.dtype).reshape(t.shape)

    def function(self, t: FuncType, ctx: _Ctx, depth: int) -> Function:
        params = [self.var(a) for a in t.arg_types]
        body_ctx = ctx.child(list(zip(params, t.arg_types, strict=False)), boundary=True, rec=None)
        body = self.gen(t.ret_type, body_ctx, depth)
        ret = t.ret_type if self.coin(2) else None
        return Function(tuple(params), body, ret)

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

    # compound forms ---------------------------------------------------------------------------
    def _gen_let(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        n = self.draw(st.integers(1, self.cfg.max_let_chain))
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
            content = self.rand_type(ctx, 1, first_order=True, allow_ref=False)
            rt = RefType(content)
            return self.var(rt), RefCreate(self.gen(content, ctx, d)), rt
        if kind == "loop":
            loop_var, fn, ft = self.counter_loop(ctx, d, target)
            return loop_var, fn, ft
        bt = target if (target is not None and self.coin(3)) else self.rand_type(ctx, 1)
        value = self.gen(bt, ctx, d)
        return self.var(bt, annotate=self.coin(2)), value, bt

    def _gen_if(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        cond = self.gen(TensorType((), "bool"), ctx, d)
        return If(cond, self.gen(t, ctx, d), self.gen(t, ctx, d))

    def _gen_op(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        assert isinstance(t, TensorType)
        call = self.pick(opcalls.producers(t, self.ops, self.cfg.dtypes))
        same = len(call.arg_types) > 1 and len({type_key(a) for a in call.arg_types}) == 1
        if same and "sharing" in self.f and self.coin(3):
            # ``op(%e, %e)``: one pure node used twice (a graph binding when printed).
            at = call.arg_types[0]
            arg = self._gen_op(at, ctx, max(d - 1, 0)) if isinstance(at, TensorType) and \
                opcalls.producers(at, self.ops, self.cfg.dtypes) else self.gen(at, ctx, d)
            if _is_pure(arg, self.s.pure):
                args = (arg,) * len(call.arg_types)
            else:
                args = (arg, *(self.gen(a, ctx, d) for a in call.arg_types[1:]))
        else:
            args = tuple(self.gen(a, ctx, d) for a in call.arg_types)
        node = Call(Op(call.op), args, call.attrs)
        self._note(node, t, ctx)
        return node

    def _gen_proj(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        n = self.draw(st.integers(0, 2))
        others = [self.rand_type(ctx, 0) for _ in range(n)]
        i = self.draw(st.integers(0, n))
        fields = tuple(others[:i] + [t] + others[i:])
        node = TupleGetItem(self.gen(TupleType(fields), ctx, d), i)
        self._note(node, t, ctx)
        return node

    def _gen_call_closure(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        n = self.draw(st.integers(0, 2))
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

    def _gen_shared(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        return self.pick(ctx.shareable(type_key(t)))

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
        n = self.draw(st.integers(1, 3))
        st_ = TupleType(tuple(self.rand_type(ctx, 1, first_order=True, allow_ref=False)
                              for _ in range(n)))
        data = self.gen(st_, ctx, d)
        clauses = []
        refutable = True
        for _ in range(self.draw(st.integers(1, 2))):
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
        partial = "partial_match" in self.f and self.coin(4)
        if partial and len(order) > 1:
            order = order[:self.draw(st.integers(1, len(order) - 1))]
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
            if shrinking:
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
        i = self.draw(st.integers(0, len(td.constructors) - 1))
        parts = [self.pattern(f, depth - 1) for f in ctor_field_types(td, i, targs)]
        refutable = len(td.constructors) > 1 or any(r for _, _, r in parts)
        return (PatternConstructor(td.constructors[i], tuple(p for p, _, _ in parts)),
                [b for _, bs, _ in parts for b in bs], refutable)

    # --- terminating recursion ---------------------------------------------------------------
    def _rec_ready(self, rec: _RecPermit) -> bool:
        return rec.kind == "counter" or bool(rec.smaller)

    def _gen_rec(self, t: Type, ctx: _Ctx, d: int) -> Expr:
        rec = ctx.rec
        assert rec is not None
        args: list[Expr] = []
        for i, at in enumerate(rec.arg_types):
            if i == 0 and rec.kind == "counter":
                args.append(Call(Op("subtract"), (rec.counter, Constant(np.array(1, np.int32)))))
            elif i == 0:
                args.append(self.pick(rec.smaller))
            else:
                args.append(self.gen(at, ctx, d))
        return Call(rec.callee, tuple(args))

    def guard(self, n: Var) -> Expr:
        """``n <= 0 || n > B``: true when the counter loop must stop."""
        zero = Constant(np.array(0, np.int32))
        bound = Constant(np.array(self.cfg.recursion_bound, np.int32))
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
        extra = [self.rand_type(ctx, 1) for _ in range(self.draw(st.integers(0, 1)))]
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

    # --- sharing ------------------------------------------------------------------------------
    def _note(self, node: Expr, t: Type, ctx: _Ctx) -> None:
        """Record a pure, non-trapping node so that later code may share it."""
        if "sharing" not in self.f or not _is_pure(node, self.s.pure):
            return
        self.s.pure.add(id(node))
        ctx.pool.append((node, type_key(t)))

    # --- operator bindings ----------------------------------------------------------------------
    def random_op_call(self, ctx: _Ctx, d: int, name: str | None = None
                       ) -> tuple[Expr, Type] | None:
        """A valid call of ``name`` (or a random operator) with generated arguments."""
        op = name or self.pick(self.ops)
        call = self.valid_call(op)
        if call is None:
            return None
        args = [self._op_arg(call, i, t, ctx, d) for i, t in enumerate(call.arg_types)]
        return Call(Op(op), tuple(args), call.attrs), call.result

    def _op_arg(self, call: opcalls.OpCall, i: int, t: Type, ctx: _Ctx, d: int) -> Expr:
        if call.arg_values is not None and call.arg_values[i] is not None:
            value = call.arg_values[i]
            if isinstance(value, tuple):
                return Tuple(tuple(Constant(np.asarray(v)) for v in value))
            return Constant(np.asarray(value))
        return self.gen(t, ctx, d)

    def valid_call(self, op: str) -> opcalls.OpCall | None:
        return opcalls.draw_valid_call(self.draw, op, self.cfg.dtypes, self.cfg.max_rank,
                                       self.cfg.max_dim)

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
                      for i in range(self.draw(st.integers(0, 1))))
        self_type = TypeCall(header, tvars) if tvars else header
        n_ctors = self.draw(st.integers(1, 3))
        ctors = []
        field_ctx = _Ctx(tvars=tvars)
        for tag in range(n_ctors):
            arity = self.draw(st.integers(0 if tag == 0 else 1, 2))
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

    # --- globals -------------------------------------------------------------------------------
    def global_function(self, index: int) -> tuple[str, Function]:
        kinds = ["plain"]
        if "poly" in self.f:
            kinds.append("poly")
        rec_adts = [td for td in self.s.adts if _is_recursive(td)]
        if "recursion" in self.f and "match" in self.f and rec_adts:
            kinds.append("struct")
        if "recursion" in self.f and self.bool_ops:
            kinds.append("counter")
        kind = self.pick(kinds)
        name = f"g{index}"
        d = self.cfg.max_depth
        root = _Ctx()
        if kind == "poly":
            a = TypeVar(f"T{index}", Kind.Type)
            ctx = _Ctx(tvars=(a,))
            others = [self.rand_type(ctx, 1) for _ in range(self.draw(st.integers(0, 1)))]
            arg_types = (a, *others)
            ret = self.rand_type(ctx, 1)
            params = [self.var(t) for t in arg_types]
            bound = list(zip(params, arg_types, strict=True))
            body = self.gen(ret, ctx.child(bound, boundary=True), d)
            fn = Function(tuple(params), body, ret, (a,))
            self.s.globals.append(_GlobalInfo(name, (a,), arg_types, ret))
            return name, fn
        if kind == "struct":
            td = self.pick(rec_adts)
            targs = tuple(self.tensor_type() for _ in td.type_vars)
            at = adt_instance(td, targs)
            others = [self.rand_type(root, 1) for _ in range(self.draw(st.integers(0, 1)))]
            ret = self.rand_type(root, 1)
            arg_types = (at, *others)
            params = [self.var(t) for t in arg_types]
            permit = _RecPermit(GlobalVar(name), "struct", arg_types, ret, adt_key=type_key(at),
                                param=params[0])
            ctx = root.child(list(zip(params, arg_types, strict=False)), boundary=True, rec=permit)
            body = self.match(params[0], at, ret, ctx, d, params[0])
            fn = Function(tuple(params), body, ret)
            self.s.globals.append(_GlobalInfo(name, (), arg_types, ret))
            return name, fn
        if kind == "counter":
            ret = self.rand_type(root, 1)
            extra = [self.rand_type(root, 1) for _ in range(self.draw(st.integers(0, 1)))]
            n = self.var(TensorType((), "int32"), prefix="n")
            params = [(n, TensorType((), "int32"))] + [(self.var(t), t) for t in extra]
            body = self.counter_body(GlobalVar(name), n, params, ret, root, d)
            fn = Function(tuple(v for v, _ in params), body, ret)
            self.s.globals.append(_GlobalInfo(name, (), tuple(t for _, t in params), ret))
            return name, fn
        arg_types = tuple(self.rand_type(root, 1)
                          for _ in range(self.draw(st.integers(0, self.cfg.max_params))))
        ret = self.rand_type(root, 1)
        params = [self.var(t) for t in arg_types]
        bound = list(zip(params, arg_types, strict=True))
        body = self.gen(ret, root.child(bound, boundary=True), d)
        fn = Function(tuple(params), body, ret if self.coin(2) else None)
        self.s.globals.append(_GlobalInfo(name, (), arg_types, ret))
        return name, fn

    def main(self) -> tuple[Function, tuple[Type, ...]]:
        """``main``: first-order parameters, a let chain with observable bindings, a result."""
        root = _Ctx()
        n_params = self.draw(st.integers(0, self.cfg.max_params))
        arg_types = tuple(self.rand_type(root, 1, first_order=True, allow_ref=False)
                          for _ in range(n_params))
        params = [self.var(t, prefix="p") for t in arg_types]
        ctx = root.child(list(zip(params, arg_types, strict=False)), boundary=True)
        d = self.cfg.max_depth
        bindings: list[tuple[Var, Expr]] = []
        observed: list[Var] = []
        steps: list[tuple[str, Any]] = []
        if self.cfg.focus_op is not None and self.cfg.focus_op in self.ops:
            steps.append(("op", self.cfg.focus_op))
        steps += [("op", None)] * (self.cfg.min_op_bindings if self.ops else 0)
        steps += [("global", g) for g in self.s.globals]
        steps += [("any", None)] * self.draw(st.integers(0, self.cfg.max_let_chain))
        if self.cfg.effects and "ref" in self.f:
            steps += [("ref", None)] + [("effect", None)] * self.cfg.effects
        for step, arg in steps:
            if step == "op":
                call = self.random_op_call(ctx, d - 1, arg)
                if call is None:
                    continue
                value, vt = call
                var = self.var(vt)
            elif step == "global":
                value, vt = self._poly_call(arg, ctx, d - 1)
                var = self.var(vt, prefix="o")
            elif step == "ref":
                vt = RefType(self.tensor_type())
                var, value = self.var(vt), RefCreate(self.gen(vt.value, ctx, d - 1))
            elif step == "effect":
                var, value, vt = Var("_"), self._gen_ref_write(TupleType(()), ctx, d - 1), \
                    TupleType(())
            else:
                var, value, vt = self.binding(ctx, d - 1, None)
            bindings.append((var, value))
            if var.name_hint == "_":
                continue
            ctx = ctx.child([(var, vt)])
            if step != "any" and is_first_order(vt) and not _has_ref(vt):
                observed.append(var)
        ret = self.rand_type(root, 1, first_order=True)
        result = self.gen(ret, ctx, d)
        # Reading every reference main bound makes the effects on it observable.
        reads = [RefRead(v) for v, t in ctx.vars if isinstance(t, RefType) and v not in params]
        if observed or reads:
            result = Tuple((result, *observed, *reads))
        body = result
        for var, value in reversed(bindings):
            body = Let(var, value, body)
        return Function(tuple(params), body, None), arg_types

    def _poly_call(self, g: _GlobalInfo, ctx: _Ctx, d: int) -> tuple[Expr, Type]:
        mapping = {id(p): self.rand_type(ctx, 0, first_order=True, allow_ref=False)
                   for p in g.type_params}
        args = tuple(self.gen(substitute(a, mapping), ctx, d) for a in g.arg_types)
        return Call(GlobalVar(g.name), args), substitute(g.ret, mapping)


_CTOR_SUFFIX = ("Nil", "Cons", "Node", "More")
_INDEX: dict[int, st.SearchStrategy[int]] = {}


def _index(n: int) -> st.SearchStrategy[int]:
    s = _INDEX.get(n)
    if s is None:
        s = _INDEX[n] = st.integers(0, n - 1)
    return s


def _exists(op: str) -> bool:
    from semantics.ops import exists

    return exists(op)


def _size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape)) if shape else 1


def _has_ref(t: Type) -> bool:
    from conformance.strategies.typeutil import has_ref

    return has_ref(t)


def _mentions_adt(tys: Sequence[Type], name: str) -> bool:
    from conformance.strategies.values import _mentions

    return _mentions(tys, name)


def _is_recursive(td: TypeData) -> bool:
    return any(_mentions_adt(c.inputs, td.header.name) for c in td.constructors)


def _is_param_of(rec: _RecPermit, v: Var) -> bool:
    return rec.param is v


def _is_pure(node: Expr, pure: set[int]) -> bool:
    if isinstance(node, (Constant, Var)):
        return True
    if id(node) in pure:
        return True
    if isinstance(node, Tuple):
        return all(_is_pure(f, pure) for f in node.fields)
    if isinstance(node, TupleGetItem):
        return _is_pure(node.tuple_value, pure)
    if isinstance(node, Call) and isinstance(node.op, Op):
        return opcalls.safe_to_share(node.op.name) and all(_is_pure(a, pure) for a in node.args)
    return False


def _calls(body: Expr, callee: Expr) -> bool:
    from semantics.visitor import post_order

    for node in post_order(body):
        if isinstance(node, Call) and (node.op is callee or (
                isinstance(callee, GlobalVar) and isinstance(node.op, GlobalVar)
                and node.op.name_hint == callee.name_hint)):
            return True
    return False


# --- public strategies ------------------------------------------------------------------------

def well_typed_exprs(ty: Type, ctx: TypingContext | Sequence[tuple[Var, Type]] = (), *,
                     config: ProgramConfig | None = None) -> st.SearchStrategy[Expr]:
    """Expressions of type ``ty`` whose free variables are among ``ctx``'s.

    Args:
        ty: the wanted type (concrete: int dims; ADTs must be defined in ``ctx.module``).
        ctx: a :class:`TypingContext` or a sequence of ``(Var, Type)`` pairs.
        config: generator controls (``max_depth`` etc.).
    Returns:
        A strategy of expressions that type-check to ``ty`` in the context.
    """
    cfg = config or ProgramConfig()
    tc = ctx if isinstance(ctx, TypingContext) else TypingContext(tuple(ctx))

    @st.composite
    def build(draw: st.DrawFn) -> Expr:
        state = _State()
        if tc.module is not None:
            state.adts = list(tc.module.types.values())
        gen = _Gen(draw, replace(cfg, features=cfg.features - {"global"}), state)
        return gen.gen(ty, _Ctx(None, list(tc.variables)), cfg.max_depth)

    return build()


def well_typed_modules(config: ProgramConfig | None = None, **overrides: Any
                       ) -> st.SearchStrategy[Program]:
    """``Program(module, inputs)`` pairs: well-typed modules whose ``main`` terminates on inputs.

    Args:
        config: a :class:`ProgramConfig`; keyword ``overrides`` replace its fields
            (e.g. ``well_typed_modules(max_depth=2, float_mode=True)``).
    Returns:
        A strategy of :class:`Program`. ``main``'s result is a tuple of its
        observations (the results of its operator and global calls) after the
        generated result, so every operator call it makes is observable.
    """
    cfg = replace(config or ProgramConfig(), **overrides)

    @st.composite
    def build(draw: st.DrawFn) -> Program:
        gen = _Gen(draw, cfg)
        if "adt" in cfg.features:
            for i in range(draw(st.integers(0, cfg.max_adts))):
                gen.s.adts.append(gen.adt_definition(i))
        functions: dict[str, Function] = {}
        if "global" in cfg.features:
            for i in range(draw(st.integers(0, cfg.max_globals))):
                name, fn = gen.global_function(i)
                functions[name] = fn
        main, arg_types = gen.main()
        functions["main"] = main
        mod = IRModule(functions, {td.header.name: td for td in gen.s.adts})
        bindings: dict[str, int] = {}
        inputs = tuple(draw(values_of(t, mod, exact=True, fractional=cfg.float_mode,
                                      bound=cfg.value_bound,
                                      max_size=cfg.max_dim, adt_depth=cfg.adt_depth,
                                      bindings=bindings)) for t in arg_types)
        return Program(mod, inputs)

    return build()


well_typed_programs = well_typed_modules


def _mentions_var(tys: Sequence[Type], tv: TypeVar) -> bool:
    from semantics.types import type_children

    stack = list(tys)
    while stack:
        t = stack.pop()
        if t is tv:
            return True
        stack.extend(type_children(t))
    return False
