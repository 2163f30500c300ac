"""The VM compiler: a module's functions compiled once to register bytecode (issue 14 §2b).

The machine that runs the bytecode, the instruction set and the meaning of each opcode are in
:mod:`backends.tvm.exec.vm`; this module turns the program into it.

Compilation (:class:`Compiler`): each function body (a global or a function literal)
becomes one :class:`~backends.tvm.exec.vm.Code` — a list of instructions over a register
file, one register per parameter, captured variable, let binding and intermediate value.
The compiler specializes the semantics' rule cases where it knows more:

* a call of a primitive function (a fused group) becomes ``KERNEL``/``KERNEL1``/``KERNEL2``
  with its compiled kernel (or numpy fallback; a group of scalar integer/bool operators runs
  as Python arithmetic, :mod:`backends.tvm.lower.scalar`); a group without parameters
  (``zeros(...)``) is evaluated once, here, and becomes a ``CONST``;
* a call of a known global becomes ``CALLG``/``TAILG`` (no dispatch on the callee), any other
  call ``CALL``/``TAIL``; a non-tail call also lists the caller's registers that no later
  instruction reads (:func:`release_dead_registers`), which the machine clears;
* a ``match`` clause of the common shape ``C(x, _, ...)`` is decided by one test; other
  patterns are flattened by :func:`~backends.tvm.exec.vm.pattern_plan` (shared with the AoT
  generator);
* graph sharing (Semantics-Shared): a node reachable along several edges is evaluated once
  per activation. The compiler reuses the node's register where its first evaluation
  dominates the use (same block or an enclosing one); after leaving the branch that
  evaluated it, a later use is guarded by ``ISSET`` (registers start unset in each
  activation), so the node is evaluated at most once per activation and exactly where the
  oracle evaluates it.

Compiling walks the program with generator premises driven by
:func:`semantics.visitor.run_recursive` (a 20,000-deep let chain compiles), once per
build; running never walks the tree.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any

import numpy as np

from backends.tvm.exec.vm import (
    CALL,
    CALLG,
    CLOSURE,
    CONST,
    CTOR,
    IFNOT,
    ISSET,
    JUMP,
    KERNEL,
    KERNEL1,
    KERNEL2,
    MATCH,
    MOVE,
    P_BIND,
    P_CTOR,
    P_WILD,
    PROJ,
    RAISE,
    REFNEW,
    REFREAD,
    REFWRITE,
    RET,
    TAIL,
    TAILG,
    TUPLE,
    Code,
    Instr,
    VMClosure,
    constant_value,
    is_primitive_function,
    pattern_plan,
)
from backends.tvm.fallback import FallbackKernel, OpKernel
from backends.tvm.kernel_table import FlatArgs
from backends.tvm.lower.scalar import scalar_program
from interpreter.values import ConstructorFunction, ConstructorValue, OpValue
from semantics.analysis import free_vars
from semantics.errors import InternalError, undefined_global
from semantics.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Grad,
    If,
    Let,
    Match,
    Op,
    Pattern,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from semantics.module import IRModule
from semantics.span import Span
from semantics.visitor import run_recursive, shared

__all__ = ["Compiler", "KernelFor", "live_after", "release_dead_registers"]

KernelFor = Callable[[Function], Callable[..., Any]]


def _closed_value(kernel: Callable[..., Any]) -> Any:
    """The value of a primitive function without parameters (``zeros(shape=...)``), computed
    once when the program is compiled: a fused group is pure dataflow, so a closed one
    always has this value (as a constant, read-only). None when the kernel fails — the call
    then stays in the program and fails where the oracle fails — or its result is not a
    tensor or a tuple of tensors."""
    try:
        value = kernel()
    except Exception:  # noqa: BLE001 - evaluated where it stands instead
        return None
    if type(value) is np.ndarray:
        return constant_value(_readonly_copy(value))
    if type(value) is tuple and all(type(v) is np.ndarray for v in value):
        return tuple(constant_value(_readonly_copy(v)) for v in value)
    return None


def _readonly_copy(a: np.ndarray) -> np.ndarray:
    out = np.array(a, order="C")
    out.flags.writeable = False
    return out



# --- the compiler -----------------------------------------------------------------------------

class _FnState:
    """Per-function compile state: registers, variables, the sharing memo."""

    def __init__(self, code: Code, body: Expr):
        self.code = code
        self.vars: dict[Var, int] = {}
        self.shared = {id(n) for n in shared(body, descend=lambda n: type(n) is not Function)
                       if not isinstance(n, (Var, GlobalVar, Op, Constructor, Constant))}
        self.blocks: list[dict[int, int]] = [{}]
        self.maybe: dict[int, int] = {}

    def reg(self) -> int:
        r = self.code.nregs
        self.code.nregs += 1
        return r

    def emit(self, ins: Instr, span: Span | None) -> int:
        self.code.instrs.append(ins)
        self.code.spans.append(span)
        return len(self.code.instrs) - 1

    def patch(self, at: int, target: int) -> None:
        ins = self.code.instrs[at]
        self.code.instrs[at] = (*ins[:-1], target)

    def here(self) -> int:
        return len(self.code.instrs)

    def enter(self) -> None:
        self.blocks.append({})

    def leave(self) -> None:
        self.maybe.update(self.blocks.pop())

    def known(self, node: Expr) -> int | None:
        key = id(node)
        for block in reversed(self.blocks):
            r = block.get(key)
            if r is not None:
                return r
        return None


class Compiler:
    """Compiles a module's functions to :class:`Code` (see the module docstring).

    Args:
        mod: the program, fused and type-checked (globals and ADTs).
        kernel_for: the kernel of a ``Primitive=1`` function (called once per group).
    """

    def __init__(self, mod: IRModule, kernel_for: KernelFor):
        self.mod = mod
        self.kernel_for = kernel_for
        self.globals: dict[str, VMClosure] = {}
        self._pending: list[tuple[Code, Function, _FnState]] = []
        self._ops: dict[tuple[str, Any], OpKernel] = {}
        self._nullary: dict[str, ConstructorValue] = {}

    def compile_all(self) -> dict[str, VMClosure]:
        """Every global as a closure over compiled code (bodies compiled here)."""
        for name, fn in self.mod.functions.items():
            self.global_closure(name, fn)
        self._drain()
        return self.globals

    def global_closure(self, name: str, fn: Function) -> VMClosure:
        c = self.globals.get(name)
        if c is None:
            code = Code("@" + name, fn)
            c = self.globals[name] = VMClosure(code, (), "@" + name)
            self._schedule(code, fn, ())
        return c

    def _schedule(self, code: Code, fn: Function, free: Sequence[Var],
                  self_var: Var | None = None) -> None:
        st = _FnState(code, fn.body)
        for p in fn.params:
            st.vars[p] = st.reg()
        code.free = tuple(free)
        for v in free:
            st.vars[v] = st.reg()
        if self_var is not None:
            code.self_reg = st.reg()
            st.vars[self_var] = code.self_reg
        self._pending.append((code, fn, st))

    def _drain(self) -> None:
        while self._pending:
            code, fn, st = self._pending.pop()
            run_recursive(self._tail(st, fn.body))
            release_dead_registers(code)

    # -- expressions in tail position: the value is returned -----------------------------
    def _tail(self, st: _FnState, e: Expr) -> Generator[Any, Any, None]:
        while True:
            t = type(e)
            if t is Let:
                yield from self._bind(st, e)  # type: ignore[arg-type]
                e = e.body  # type: ignore[attr-defined]
                continue
            if t is If and id(e) not in st.shared:
                c = yield self._expr(st, e.cond)  # type: ignore[attr-defined]
                jump = st.emit((IFNOT, c, -1), e.span)
                st.enter()
                yield self._tail(st, e.true_branch)  # type: ignore[attr-defined]
                st.leave()
                st.patch(jump, st.here())
                st.enter()
                yield self._tail(st, e.false_branch)  # type: ignore[attr-defined]
                st.leave()
                return
            if t is Match and id(e) not in st.shared:
                v = yield self._expr(st, e.data)  # type: ignore[attr-defined]
                table = st.emit((MATCH, v, (), e), e.span)
                targets = []
                for clause in e.clauses:  # type: ignore[attr-defined]
                    st.enter()
                    plan = self._pattern(st, clause.lhs)
                    targets.append((*_clause(plan), st.here()))
                    yield self._tail(st, clause.rhs)
                    st.leave()
                st.code.instrs[table] = (MATCH, v, tuple(targets), e)
                return
            if isinstance(e, Call) and id(e) not in st.shared \
                    and not is_primitive_function(e.op) and type(e.op) not in (Op, Constructor):
                op = e.op
                args = []
                if type(op) is GlobalVar and op.name_hint in self.mod.functions:
                    for a in e.args:
                        args.append((yield self._expr(st, a)))
                    callee = self.global_closure(op.name_hint, self.mod.functions[op.name_hint])
                    st.emit((TAILG, callee.code, tuple(args)), e.span)
                    return
                f = yield self._expr(st, op)
                for a in e.args:
                    args.append((yield self._expr(st, a)))
                st.emit((TAIL, f, tuple(args), e), e.span)
                return
            r = yield self._expr(st, e)
            st.emit((RET, r), e.span)
            return

    def _bind(self, st: _FnState, e: Let) -> Generator[Any, Any, None]:
        """``let var = value`` (Semantics-Let; Semantics-Let-Rec for a function value)."""
        if type(e.value) is Function and not is_primitive_function(e.value):
            r = st.reg()
            st.vars[e.var] = r
            self._closure(st, e.value, r, self_var=e.var)
            return
        st.vars[e.var] = yield self._expr(st, e.value)

    # -- expressions whose value goes to a register --------------------------------------
    def _expr(self, st: _FnState, e: Expr) -> Generator[Any, Any, int]:
        if isinstance(e, Var):
            r = st.vars.get(e)
            if r is None:
                raise InternalError(f"vm: unbound variable %{e.name_hint} in a checked program")
            return r
        memo = id(e) in st.shared
        if memo:
            known = st.known(e)
            if known is not None:
                return known
            guard = -1
            target = st.maybe.get(id(e))
            if target is not None:
                guard = st.emit((ISSET, target, -1), e.span)
            first = st.code.nregs
            r = yield self._compute(st, e)
            if target is None:
                # A register of its own: the value may sit in a parameter's or a binding's
                # register, which ISSET cannot tell from "already evaluated".
                target = r if r >= first else st.reg()
            if r != target:
                st.emit((MOVE, target, r), e.span)
            if guard >= 0:
                st.patch(guard, st.here())
            st.blocks[-1][id(e)] = target
            return target
        return (yield self._compute(st, e))

    def _compute(self, st: _FnState, e: Expr) -> Generator[Any, Any, int]:
        t = type(e)
        if t is Let:
            while isinstance(e, Let):
                yield from self._bind(st, e)
                e = e.body
            return (yield self._expr(st, e))
        if t is Constant:
            r = st.reg()
            st.emit((CONST, r, constant_value(e.data)), e.span)  # type: ignore[attr-defined]
            return r
        if t is GlobalVar:
            fn = self.mod.functions.get(e.name_hint)  # type: ignore[attr-defined]
            r = st.reg()
            if fn is None:
                st.emit((RAISE, undefined_global("@" + e.name_hint)), e.span)  # type: ignore
            else:
                st.emit((CONST, r, self.global_closure(e.name_hint, fn)), e.span)  # type: ignore
            return r
        if t is Op:
            r = st.reg()
            st.emit((CONST, r, OpValue(e.name, self._op(e.name, None).opdef)), e.span)  # type: ignore
            return r
        if t is Constructor:
            r = st.reg()
            st.emit((CONST, r, self._constructor_value(e)), e.span)  # type: ignore[arg-type]
            return r
        if t is Function:
            r = st.reg()
            self._closure(st, e, r)  # type: ignore[arg-type]
            return r
        if t is Call:
            return (yield from self._call(st, e))  # type: ignore[arg-type]
        if t is Tuple:
            fields = []
            for f in e.fields:  # type: ignore[attr-defined]
                fields.append((yield self._expr(st, f)))
            r = st.reg()
            st.emit((TUPLE, r, tuple(fields)), e.span)
            return r
        if t is TupleGetItem:
            src = yield self._expr(st, e.tuple_value)  # type: ignore[attr-defined]
            r = st.reg()
            st.emit((PROJ, r, src, e.index), e.span)  # type: ignore[attr-defined]
            return r
        if t is If:
            return (yield from self._if_value(st, e))  # type: ignore[arg-type]
        if t is Match:
            return (yield from self._match_value(st, e))  # type: ignore[arg-type]
        if t is RefCreate or t is RefRead or t is RefWrite:
            return (yield from self._ref(st, e))
        if t is Grad:
            expansion = self._expand_grad(e)  # type: ignore[arg-type]
            if expansion is None:
                r = st.reg()
                st.emit((RAISE, "grad(...) needs an automatic-differentiation expander "
                         "(the `ad` package)"), e.span)
                return r
            return (yield self._expr(st, expansion))
        raise InternalError(f"vm: cannot compile a {t.__name__}")

    def _if_value(self, st: _FnState, e: If) -> Generator[Any, Any, int]:
        """``if`` whose value goes to a register (not in tail position, or shared)."""
        c = yield self._expr(st, e.cond)
        r = st.reg()
        jump = st.emit((IFNOT, c, -1), e.span)
        st.enter()
        a = yield self._expr(st, e.true_branch)
        st.emit((MOVE, r, a), e.span)
        st.leave()
        done = st.emit((JUMP, -1), e.span)
        st.patch(jump, st.here())
        st.enter()
        b = yield self._expr(st, e.false_branch)
        st.emit((MOVE, r, b), e.span)
        st.leave()
        st.patch(done, st.here())
        return r

    def _match_value(self, st: _FnState, e: Match) -> Generator[Any, Any, int]:
        """``match`` whose value goes to a register (not in tail position, or shared)."""
        v = yield self._expr(st, e.data)
        r = st.reg()
        table = st.emit((MATCH, v, (), e), e.span)
        targets = []
        exits = []
        for clause in e.clauses:
            st.enter()
            plan = self._pattern(st, clause.lhs)
            targets.append((*_clause(plan), st.here()))
            x = yield self._expr(st, clause.rhs)
            st.emit((MOVE, r, x), e.span)
            exits.append(st.emit((JUMP, -1), e.span))
            st.leave()
        st.code.instrs[table] = (MATCH, v, tuple(targets), e)
        for j in exits:
            st.patch(j, st.here())
        return r

    def _ref(self, st: _FnState, e: Expr) -> Generator[Any, Any, int]:
        """``ref(v)``, ``!r``, ``r := v`` (Semantics-Ref-*)."""
        if isinstance(e, RefCreate):
            v = yield self._expr(st, e.value)
            ins: Instr = (REFNEW, st.reg(), v)
        elif isinstance(e, RefRead):
            v = yield self._expr(st, e.ref)
            ins = (REFREAD, st.reg(), v)
        elif isinstance(e, RefWrite):
            ref = yield self._expr(st, e.ref)
            v = yield self._expr(st, e.value)
            ins = (REFWRITE, st.reg(), ref, v)
        else:
            raise InternalError(f"vm: {type(e).__name__} is not a reference expression")
        st.emit(ins, e.span)
        return int(ins[1])

    def _call(self, st: _FnState, e: Call) -> Generator[Any, Any, int]:
        op = e.op
        args: list[int] = []
        if is_primitive_function(op):
            for a in e.args:
                args.append((yield self._expr(st, a)))
            k = self.kernel_for(op)  # type: ignore[arg-type]
            if type(k) is not FallbackKernel:
                # (a build without compiled kernels keeps every group on the references)
                host = scalar_program(op)  # type: ignore[arg-type]
                if host is not None:
                    return self._emit_kernel(st, host, args, e)
            if not args:
                value = _closed_value(k)
                if value is not None:
                    r = st.reg()
                    st.emit((CONST, r, value), e.span)
                    return r
            return self._emit_kernel(st, k, args, e)
        if type(op) is Op:
            for a in e.args:
                args.append((yield self._expr(st, a)))
            return self._emit_kernel(st, self._op(op.name, e.attrs), args, e)
        if type(op) is Constructor and len(e.args) == len(op.inputs):
            for a in e.args:
                args.append((yield self._expr(st, a)))
            r = st.reg()
            if not op.inputs:
                st.emit((CONST, r, self._constructor_value(op)), e.span)
            else:
                st.emit((CTOR, r, op.name, op, tuple(args)), e.span)
            return r
        if type(op) is GlobalVar and op.name_hint in self.mod.functions:
            for a in e.args:
                args.append((yield self._expr(st, a)))
            callee = self.global_closure(op.name_hint, self.mod.functions[op.name_hint])
            r = st.reg()
            st.emit((CALLG, r, callee.code, tuple(args)), e.span)
            return r
        f = yield self._expr(st, op)
        for a in e.args:
            args.append((yield self._expr(st, a)))
        r = st.reg()
        st.emit((CALL, r, f, tuple(args), e), e.span)
        return r

    def _emit_kernel(self, st: _FnState, k: Callable[..., Any], args: list[int],
                     e: Call) -> int:
        r = st.reg()
        if type(k) is FlatArgs:
            k = k.flat_call
        if len(args) == 1:
            st.emit((KERNEL1, r, k, args[0]), e.span)
        elif len(args) == 2:
            st.emit((KERNEL2, r, k, args[0], args[1]), e.span)
        else:
            st.emit((KERNEL, r, k, tuple(args)), e.span)
        return r

    def _closure(self, st: _FnState, fn: Function, dst: int,
                 self_var: Var | None = None) -> None:
        free = [v for v in free_vars(fn) if v is not self_var]
        code = Code(self_var.name_hint if self_var is not None else "fn", fn)
        captures = []
        for v in free:
            r = st.vars.get(v)
            if r is None:
                raise InternalError(f"vm: unbound variable %{v.name_hint} in a checked program")
            captures.append(r)
        self._schedule(code, fn, free, self_var)
        name = "%" + self_var.name_hint if self_var is not None else None
        if not captures:
            # Nothing captured: the same closure serves every evaluation (closures are
            # opaque values: no program can tell two of the same code apart).
            st.emit((CONST, dst, VMClosure(code, (), name)), fn.span)
            return
        st.emit((CLOSURE, dst, code, tuple(captures), name), fn.span)

    def _pattern(self, st: _FnState, p: Pattern) -> tuple[Any, ...]:
        """A pattern as a flat plan for :func:`_match` (variables get registers)."""
        plan: list[Any] = []
        for kind, _, what in pattern_plan(p):
            if kind == P_BIND:
                r = st.reg()
                st.vars[what] = r
                plan.append((P_BIND, r))
            elif kind == P_WILD:
                plan.append((P_WILD,))
            else:
                plan.append((kind, *what))
        return tuple(plan)

    def _op(self, name: str, attrs: Any) -> OpKernel:
        key = (name, attrs)
        k = self._ops.get(key)
        if k is None:
            k = self._ops[key] = OpKernel(name, attrs)
        return k

    def _constructor_value(self, c: Constructor) -> Any:
        if c.inputs:
            return ConstructorFunction(c)
        v = self._nullary.get(c.name)
        if v is None:
            v = self._nullary[c.name] = ConstructorValue(c.name, (), c)
        return v

    def _expand_grad(self, e: Grad) -> Expr | None:
        from interpreter import grad_expander

        expander = grad_expander()
        return None if expander is None else expander(e, self.mod, ())


# --- liveness: registers released at non-tail calls -------------------------------------------

def _operands(ins: Instr) -> tuple[tuple[int, ...], int]:
    """The registers instruction ``ins`` reads, and the one it writes (-1: none; the
    registers a ``MATCH`` clause binds are written on the way to the clause)."""
    op = ins[0]
    if op == KERNEL1:
        return (ins[3],), ins[1]
    if op == KERNEL2:
        return (ins[3], ins[4]), ins[1]
    if op == KERNEL or op == TUPLE or op == CALLG:
        return tuple(ins[3] if op == CALLG else ins[3 if op == KERNEL else 2]), ins[1]
    if op == MOVE or op == PROJ or op == REFNEW or op == REFREAD:
        return (ins[2],), ins[1]
    if op == CONST:
        return (), ins[1]
    if op == IFNOT or op == ISSET or op == RET or op == MATCH:
        return (ins[1],), -1
    if op == TAILG:
        return tuple(ins[2]), -1
    if op == CALL:
        return (ins[2], *ins[3]), ins[1]
    if op == TAIL:
        return (ins[1], *ins[2]), -1
    if op == CLOSURE:
        return tuple(ins[3]), ins[1]
    if op == CTOR:
        return tuple(ins[4]), ins[1]
    if op == REFWRITE:
        return (ins[2], ins[3]), ins[1]
    return (), -1                                  # JUMP, RAISE


def _successors(ins: Instr, pc: int) -> list[tuple[int, tuple[int, ...]]]:
    """``(next pc, registers bound on the way)`` for each way control leaves ``ins``."""
    op = ins[0]
    if op == JUMP:
        return [(ins[1], ())]
    if op == IFNOT or op == ISSET:
        return [(pc + 1, ()), (ins[2], ())]
    if op == MATCH:
        out = []
        for name, fields, plan, target in ins[2]:
            bound = tuple(r for r in fields if r >= 0) if name is not None else tuple(
                step[1] for step in plan if step[0] == P_BIND)
            out.append((target, bound))
        return out
    if op in (RET, TAIL, TAILG, RAISE):
        return []
    return [(pc + 1, ())]


def live_after(code: Code) -> list[frozenset[int]]:
    """For each instruction of ``code``, the registers some later instruction may still read
    (backward dataflow over the jumps, to a fixed point)."""
    instrs = code.instrs
    n = len(instrs)
    uses = []
    defs = []
    for ins in instrs:
        u, d = _operands(ins)
        uses.append(frozenset(u))
        defs.append(d)
    succs = [_successors(ins, pc) for pc, ins in enumerate(instrs)]
    live_in: list[frozenset[int]] = [frozenset()] * (n + 1)
    live_out: list[frozenset[int]] = [frozenset()] * n
    changed = True
    while changed:
        changed = False
        for pc in range(n - 1, -1, -1):
            out: set[int] = set()
            for target, bound in succs[pc]:
                if 0 <= target <= n:
                    out |= live_in[target] - set(bound) if bound else live_in[target]
            d = defs[pc]
            new_in = uses[pc] | (out - {d} if d >= 0 else out)
            if new_in != live_in[pc] or len(out) != len(live_out[pc]):
                live_in[pc] = frozenset(new_in)
                live_out[pc] = frozenset(out)
                changed = True
    return live_out


def release_dead_registers(code: Code) -> None:
    """Give every non-tail call (``CALL``, ``CALLG``) the registers that are dead once it
    has read its arguments: the machine clears them before it enters the callee.

    A suspended frame would otherwise keep every value it ever computed alive until the
    call returns (a non-tail recursion holds all of them); clearing the dead ones lets the
    kernels' output pools (:class:`backends.tvm.kernel.Kernel`) reuse their buffers.
    Unobservable: a cleared register is read by no later instruction on any path (an
    ``ISSET`` test is a read, so a shared node's register is never cleared before it).
    """
    calls = [pc for pc, ins in enumerate(code.instrs) if ins[0] == CALL or ins[0] == CALLG]
    if not calls:
        return
    live = live_after(code)
    first_def: dict[int, int] = {}
    for pc, ins in enumerate(code.instrs):
        d = _operands(ins)[1]
        if d >= 0:
            first_def.setdefault(d, pc)
        if ins[0] == MATCH:
            for _, bound in _successors(ins, pc):
                for r in bound:
                    first_def.setdefault(r, pc)
    entry = set(range(code.nparams + len(code.free)))
    if code.self_reg >= 0:
        entry.add(code.self_reg)
    for pc in calls:
        ins = code.instrs[pc]
        held = entry | {r for r, at in first_def.items() if at < pc}
        dead = tuple(sorted(held - live[pc] - {ins[1]}))
        code.instrs[pc] = (*ins, dead)



def _clause(plan: tuple[Any, ...]) -> tuple[str | None, tuple[int, ...], tuple[Any, ...]]:
    """A ``MATCH`` clause's dispatch form: ``(constructor name, field registers, plan)``.

    The name is set for the common shape ``C(p1, ..., pn)`` with variables or wildcards as
    fields (the machine tests the constructor and writes the fields to their registers,
    -1 for a wildcard, in one step); None means "run the plan with :func:`_match`".
    """
    if plan and plan[0][0] == P_CTOR and len(plan) == plan[0][2] + 1 and all(
            step[0] in (P_BIND, P_WILD) for step in plan[1:]):
        return plan[0][1], tuple(step[1] if step[0] == P_BIND else -1 for step in plan[1:]), plan
    return None, (), plan


