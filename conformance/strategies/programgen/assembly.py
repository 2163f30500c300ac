"""Module assembly: helper globals and ``main``; the complete generator ``_Gen``.

``global_function`` draws a plain, polymorphic, structurally recursive or counter-loop
global (a global calls only globals defined before it); ``main`` takes first-order
parameters, binds operator calls, *flow* steps (elementwise calls over the tensors it
bound before: values flow from one operator into the next, and ``op(%x, %x)`` appears),
edge probes (``_OpGen.probe_call``) and global calls, reads a reference back right after
some of its writes, returns every first-order binding with its result (so each is
observable), and ends by reading every reference it bound.
"""

from __future__ import annotations

from typing import Any

from conformance.strategies.programgen.adts import _AdtGen
from conformance.strategies.programgen.effects import _RefGen
from conformance.strategies.programgen.exprs import _ExprGen
from conformance.strategies.programgen.operators import _OpGen
from conformance.strategies.programgen.recursion import _RecGen
from conformance.strategies.programgen.scope import (
    _Ctx,
    _GlobalInfo,
    _has_ref,
    _ints,
    _is_recursive,
    _RecPermit,
)
from conformance.strategies.typeutil import adt_instance, is_first_order, substitute, type_key
from semantics.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    Let,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    Var,
)
from semantics.types import Kind, RefType, TensorType, TupleType, Type, TypeVar
from semantics.visitor import ExprMutator


class _Gen(_ExprGen, _OpGen, _RefGen, _AdtGen, _RecGen):
    """One program's generation: draws, configuration, module state (all the mixins)."""

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
            others = [self.rand_type(ctx, 1) for _ in range(self.draw(_ints(0, 1)))]
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
            others = [self.rand_type(root, 1) for _ in range(self.draw(_ints(0, 1)))]
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
            extra = [self.rand_type(root, 1) for _ in range(self.draw(_ints(0, 1)))]
            n = self.var(TensorType((), "int32"), prefix="n")
            typed: list[tuple[Var, Type]] = [(n, TensorType((), "int32"))]
            typed += [(self.var(t), t) for t in extra]
            body = self.counter_body(GlobalVar(name), n, typed, ret, root, d)
            fn = Function(tuple(v for v, _ in typed), body, ret)
            self.s.globals.append(_GlobalInfo(name, (), tuple(t for _, t in typed), ret))
            return name, fn
        arg_types = tuple(self.rand_type(root, 1)
                          for _ in range(self.draw(_ints(0, self.cfg.max_params))))
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
        n_params = self.draw(_ints(0, self.cfg.max_params))
        arg_types = tuple(self.rand_type(root, 1, first_order=True, allow_ref=False)
                          for _ in range(n_params))
        params = [self.var(t, prefix="p") for t in arg_types]
        ctx = root.child(list(zip(params, arg_types, strict=False)), boundary=True)
        d = self.cfg.max_depth
        bindings: list[tuple[Var, Expr]] = []
        observed: list[Var] = []
        for step, arg in self._main_steps():
            if step == "refpair":
                ctx = self._ref_pair(ctx, bindings)
                continue
            made = self._main_binding(step, arg, ctx, d)
            if made is None:
                continue
            var, value, vt = made
            bindings.append((var, value))
            ctx = self._read_back(value, ctx, bindings, observed)
            if var.name_hint == "_":
                continue
            ctx = ctx.child([(var, vt)])
            if is_first_order(vt) and not _has_ref(vt):
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

    def _main_steps(self) -> list[tuple[str, Any]]:
        """The plan of ``main``'s let chain: ``(kind, argument)`` steps (the focus operators,
        operator calls, control flow, probes, a call of each global, arbitrary bindings,
        maybe a reference pair, the effects), drawn in a fixed order."""
        steps: list[tuple[str, Any]] = []
        if self.cfg.focus_op is not None and self.cfg.focus_op in self.ops:
            steps.append(("op", self.cfg.focus_op))
        steps += [("op", op) for op in self.focus_ops[:1]]
        if self.ops:
            n_ops = self.cfg.min_op_bindings + self.draw(_ints(
                0, self.cfg.extra_op_bindings if self.cfg.min_op_bindings else 0))
            steps += [("op", None)] * n_ops
            steps += [("flow", None)] * self.draw(_ints(0, self.cfg.max_flow))
            steps += [("probe", None)] * self.draw(_ints(0, self.cfg.max_probes))
        steps += [("global", g) for g in self.s.globals]
        steps += [("any", None)] * self.draw(_ints(0, self.cfg.max_let_chain))
        if "ref" in self.f and self.coin(4):
            steps.insert(self.draw(_ints(0, len(steps))), ("refpair", None))
        if self.cfg.effects and "ref" in self.f:
            steps += [("ref", None)] + [("effect", None)] * self.cfg.effects
        return steps

    def _main_binding(self, step: str, arg: Any, ctx: _Ctx,
                      d: int) -> tuple[Var, Expr, Type] | None:
        """The ``(var, value, type)`` binding of one step of ``main``'s plan (not
        ``refpair``), or ``None`` when an operator, flow or probe step finds nothing to
        generate in ``ctx``."""
        if step == "op":
            call = self.random_op_call(ctx, d - 1, arg)
            if call is None:
                return None
            value, vt = call
            # Half of the operator bindings leave their type to inference: a pass that
            # changes a call's result type (``keepdims`` flipped, a slice window clamped at
            # the end) still yields a well-typed program when the binding is only observed,
            # and the changed result is seen instead of the program being rejected.
            return self.var(vt, annotate=not self.coin(2)), value, vt
        if step == "flow":
            flow = self.flow_call(ctx, d - 1)
            if flow is None:
                return None
            value, vt = flow
            return self.var(vt), value, vt
        if step == "probe":
            probe = self.probe_call(ctx, d - 1)
            if probe is None:
                return None
            value, vt = probe
            return self.var(vt, annotate=not self.coin(2)), value, vt
        if step == "global":
            value, vt = self._poly_call(arg, ctx, d - 1)
            return self.var(vt, prefix="o"), value, vt
        if step == "ref":
            rt = RefType(self.tensor_type())
            var = self.var(rt)
            return var, RefCreate(self.gen(rt.value, ctx, d - 1)), rt
        if step == "effect":
            return Var("_"), self._gen_ref_write(TupleType(()), ctx, d - 1), TupleType(())
        return self.binding(ctx, d - 1, None)

    def _read_back(self, value: Expr, ctx: _Ctx, bindings: list[tuple[Var, Expr]],
                   observed: list[Var]) -> _Ctx:
        """After a write to a reference bound in ``ctx``, maybe a binding reading it back at
        once (observed): a write dropped, or moved past the next binding, changes what this
        read sees. The context extended with the read's variable."""
        if isinstance(value, RefWrite) and isinstance(value.ref, Var) and self.coin(2):
            rt = next((t for v, t in ctx.vars if v is value.ref), None)
            if isinstance(rt, RefType):
                seen = self.var(rt.value)
                bindings.append((seen, RefRead(value.ref)))
                ctx = ctx.child([(seen, rt.value)])
                observed.append(seen)
        return ctx

    def _ref_pair(self, ctx: _Ctx, bindings: list[tuple[Var, Expr]]) -> _Ctx:
        """``let %r1 = ref(c); let %r2 = ref(c); %r2 := v``: two allocations with equal
        initial values (a CSE must not merge them: ``main`` reads ``%r1`` at its end)."""
        t = self.tensor_type()
        c = self.literal(t, ctx, 0)
        if not isinstance(c, Constant):
            return ctx
        again = Constant(c.data.copy())
        self.s.pin(c, again)
        rt = RefType(t)
        r1, r2 = self.var(rt), self.var(rt)
        bindings.append((r1, RefCreate(c)))
        bindings.append((r2, RefCreate(again)))
        bindings.append((Var("_"), RefWrite(r2, self.literal(t, ctx, 0))))
        return ctx.child([(r1, rt), (r2, rt)])

    def lift_constants(self, main: Function, arg_types: tuple[Type, ...]
                       ) -> tuple[Function, tuple[Type, ...], list[Any]]:
        """Turn some tensor constants of ``main`` into new parameters of ``main``.

        A constant becomes a variable (its value the parameter's first input), so that
        the alternate inputs put other values — edge cases included — in that argument
        position. Constants whose value matters for trap-freedom or termination
        (``self.s.pinned``: loop guards and steps, valid-call argument values) stay.

        Returns:
            ``(main, parameter types, values of the lifted parameters)``.
        """
        lifted: list[tuple[Var, Any]] = []
        gen = self

        class _Lift(ExprMutator):
            def visit_constant(self, new: Expr, old: Expr) -> Expr:
                assert isinstance(old, Constant)
                if id(old) not in gen.s.lift and (
                        id(old) in gen.s.pinned or len(lifted) >= gen.cfg.max_lifted or
                        not gen.coin(2)):
                    return new
                t = TensorType(tuple(old.data.shape), old.data.dtype.name)
                v = gen.var(t, prefix="p")
                lifted.append((v, old.data))
                return v

        body = _Lift().mutate(main.body)
        if not lifted:
            return main, arg_types, []
        fn = Function((*main.params, *(v for v, _ in lifted)), body, main.ret_type,
                      main.type_params, main.attrs)
        types = (*arg_types, *(v.type_annotation for v, _ in lifted))
        return fn, types, [value for _, value in lifted]  # type: ignore[return-value]

    def _poly_call(self, g: _GlobalInfo, ctx: _Ctx, d: int) -> tuple[Expr, Type]:
        mapping = {id(p): self.rand_type(ctx, 0, first_order=True, allow_ref=False)
                   for p in g.type_params}
        args = tuple(self.gen(substitute(a, mapping), ctx, d) for a in g.arg_types)
        return Call(GlobalVar(g.name), args), substitute(g.ret, mapping)
