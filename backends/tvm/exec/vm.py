"""The VM executor: the whole language compiled once to register bytecode (issue 14 §2b).

What it runs: every Relay program — closures (first-class, recursive through ``let``),
globals and mutual recursion, ``if``, ``match`` over ADTs and tuples, references, and
calls of compiled kernels for the ``Primitive=1`` functions that ``passes.fuse_ops``
made. Its meaning is the big-step semantics of RULES.md (the oracle,
``interpreter.evaluate``); the differential tests hold it to that.

This module holds the instruction set (:class:`Code`), the values the machine makes
(:class:`VMClosure`) and the machine (:class:`VM`); the compiler that produces the code is
:mod:`backends.tvm.exec.vm_compile`. Each function body is one :class:`Code`: a list of
instructions over a register file, one register per parameter, captured variable, let
binding and intermediate value. Instructions are tuples whose first field is an opcode;
the opcodes are the rule cases of the semantics, specialized where the compiler knows more:

* ``KERNEL dst k args`` (and ``KERNEL1``/``KERNEL2`` for one or two arguments) — a call of
  a primitive function (Semantics-Call of a fused group), ``k`` its compiled kernel (or
  numpy fallback, or Python arithmetic for a scalar group); ``CALLG``/``TAILG`` — a call
  of a known global (no dispatch on the callee); ``CALL``/``TAIL`` — a call of a computed
  value (closure, operator, constructor); a non-tail call also clears the caller's
  registers that no later instruction reads (listed by the compiler);
* ``CLOSURE dst code captures`` (Semantics-Closure / -Let-Rec: the captured registers are
  copied into the closure, its self variable is bound to the closure at each call);
* ``IFNOT cond target`` / ``JUMP`` (Semantics-If-True/-False), ``MATCH v clauses``
  (Semantics-ADT-Match: clauses tried in order, the pattern's variables written to their
  registers; Semantics-Match-Fail raises; a pattern is flattened by :func:`pattern_plan`,
  shared with the AoT generator, and a clause of the common shape ``C(x, _, ...)`` is
  decided by one test), ``CTOR``, ``TUPLE``, ``PROJ``, ``REFNEW``,
  ``REFREAD``, ``REFWRITE``, ``CONST``, ``MOVE``, ``RET``;
* ``ISSET r target`` — graph sharing (Semantics-Shared): jump if the shared node's
  register is already set in this activation (registers start unset).

The machine (:class:`VM`) keeps an explicit frame stack: a non-tail call of a closure
pushes the caller's (code, registers, pc, destination) and continues in the callee; a
call in tail position replaces the current frame, so a tail-recursive loop runs in
constant space; deep non-tail recursion uses memory, not Python's stack, and beyond
``max_depth`` nested calls is a ``RelayRuntimeError`` "stack exhausted" (the oracle's
message). Runtime errors carry the span of the instruction's node. The calls, returns,
kernels and branches are decided inline in :meth:`VM._run`; the instructions that only
read and write registers (``PROJ`` and those after it, but ``CONST``) run through a table of
small functions, :data:`_STEPS`, indexed by opcode. A closure that captures nothing is
compiled to a ``CONST`` (one closure serves every evaluation: closures are opaque).

Cost (``bench/backend.py``, a scalar loop of 100,000 iterations): about 2.5 µs per
instruction including the kernel calls, of which the VM's own dispatch is about 0.3 µs;
the rest is the kernel call (:class:`backends.tvm.kernel.Kernel`'s fast lane).

Not here: argument and result conversion (:mod:`backends.tvm.exec.executable`), kernels
(:mod:`backends.tvm.build`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from backends.tvm.fallback import OpKernel, call_op_value
from backends.tvm.kernel.runtime import register_constant
from interpreter.values import (
    Closure,
    ConstructorFunction,
    ConstructorValue,
    OpValue,
    RefValue,
    construct,
    not_a_function,
    value_str,
)
from semantics import errors
from semantics.errors import (
    InternalError,
    RelayError,
    RelayRuntimeError,
    non_exhaustive_match,
)
from semantics.expr import (
    Function,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    Var,
)
from semantics.module import IRModule
from semantics.span import Span

__all__ = ["VM", "Code", "VMClosure", "constant_value", "is_primitive_function",
           "pattern_plan", "OPCODE_NAMES"]

# --- opcodes ----------------------------------------------------------------------------------
# Numbered so that the machine's dispatch (a tree of comparisons) reaches the frequent ones
# first: kernels (0-2), then returns and calls (3-7), then IFNOT (8); the instructions from
# MATCH on (9-21) go through the table _STEPS.
(KERNEL1, KERNEL2, KERNEL, RET, CALLG, CALL, TAILG, TAIL, IFNOT, MATCH, JUMP, ISSET, PROJ,
 CLOSURE, TUPLE, CTOR, MOVE, CONST, REFNEW, REFREAD, REFWRITE, RAISE) = range(22)
OPCODE_NAMES = ("KERNEL1", "KERNEL2", "KERNEL", "RET", "CALLG", "CALL", "TAILG", "TAIL",
                "IFNOT", "MATCH", "JUMP", "ISSET", "PROJ", "CLOSURE", "TUPLE", "CTOR", "MOVE",
                "CONST", "REFNEW", "REFREAD", "REFWRITE", "RAISE")

Instr = tuple[Any, ...]


def constant_value(data: np.ndarray) -> np.ndarray:
    """A program constant as the executors hold it: read-only (results that are constants
    are copied on export, :func:`interpreter.export.export_value`), but over memory of its
    own, so that a kernel call can pass it through DLPack as a writable view (numpy
    refuses to export read-only arrays, and a view can be made writable only when the
    memory's owner is). Kernels never write their inputs."""
    if type(data) is not np.ndarray or data.flags.writeable:
        return data
    probe = data.view()
    try:
        probe.flags.writeable = True
        out = data
    except ValueError:
        out = np.array(data, order="C").view()   # a read-only view of a writable copy
        out.flags.writeable = False
    register_constant(out)
    return out


def is_primitive_function(e: Any) -> bool:
    """Whether ``e`` is a function literal marked ``Primitive=1`` (a fused group)."""
    if type(e) is not Function or not e.attrs:
        return False
    return e.attrs.get("Primitive") in (1, True, "1")


class Code:
    """One compiled function body.

    Invariants: registers ``0..nparams-1`` hold the arguments, the next ``len(free)``
    the captured values (in ``free`` order), ``self_reg`` (or -1) the closure itself;
    ``spans[i]`` is the span of the node instruction ``i`` came from.
    """

    __slots__ = ("name", "function", "instrs", "spans", "nregs", "nparams", "free",
                 "self_reg")

    def __init__(self, name: str, function: Function):
        self.name = name
        self.function = function
        self.instrs: list[Instr] = []
        self.spans: list[Span | None] = []
        self.nregs = 0
        self.nparams = len(function.params)
        self.free: tuple[Var, ...] = ()
        self.self_reg = -1

    def __repr__(self) -> str:
        return f"<Code {self.name}: {len(self.instrs)} instructions, {self.nregs} registers>"

    def listing(self) -> str:
        """The instructions, one per line (for debugging and docs)."""
        lines = []
        for i, ins in enumerate(self.instrs):
            fields = [OPCODE_NAMES[ins[0]], *(_show(x) for x in ins[1:])]
            lines.append(f"{i:4d}  " + " ".join(fields))
        return "\n".join(lines)



def _show(x: Any) -> str:
    if isinstance(x, Code):
        return x.name
    if isinstance(x, np.ndarray):
        return f"<{x.dtype}{list(x.shape)}>"
    if isinstance(x, (int, tuple, str)):
        return str(x)
    return getattr(x, "name", type(x).__name__)


class VMClosure(Closure):
    """A closure of the VM: compiled code plus the captured register values.

    A :class:`~interpreter.values.Closure` (so results compare as the oracle's closures
    do: opaque), whose ``function`` is the source function literal and ``env`` is None.
    """

    __slots__ = ("code", "captured")

    def __init__(self, code: Code, captured: tuple[Any, ...], name: str | None = None):
        # Closure's four fields set here rather than through its __init__ (one call less:
        # a TreeLSTM makes two closures a node).
        self.function = code.function
        self.env = None  # type: ignore[assignment]
        self.self_var = None
        self.name = name
        self.code = code
        self.captured = captured


P_WILD, P_BIND, P_CTOR, P_TUPLE = range(4)


def pattern_plan(p: Pattern) -> list[tuple[int, tuple[int, ...], Any]]:
    """A pattern flattened in pre-order, shared by the VM and the AoT generator.

    Returns:
        One step per pattern node, ``(kind, path, what)``: ``path`` is the node's access
        path from the matched value (field indices), and ``kind``/``what`` are
        ``P_WILD``/None, ``P_BIND``/the variable, ``P_CTOR``/``(constructor name,
        arity)``, ``P_TUPLE``/``(arity,)``. Each node's children follow it, left to right,
        so a stack machine consuming the steps in order sees the values in the same order
        (Semantics-Pattern-*: a constructor or tuple pattern tests the value before its
        fields are matched).
    Raises:
        InternalError: an unknown kind of pattern.
    """
    out: list[tuple[int, tuple[int, ...], Any]] = []
    stack: list[tuple[Pattern, tuple[int, ...]]] = [(p, ())]
    while stack:
        q, path = stack.pop()
        t = type(q)
        if t is PatternWildcard:
            out.append((P_WILD, path, None))
        elif t is PatternVar:
            out.append((P_BIND, path, q.var))  # type: ignore[attr-defined]
        elif t is PatternConstructor:
            kids = q.patterns  # type: ignore[attr-defined]
            out.append((P_CTOR, path, (q.constructor.name, len(kids))))  # type: ignore
            stack.extend((k, (*path, i)) for i, k in reversed(list(enumerate(kids))))
        elif t is PatternTuple:
            kids = q.patterns  # type: ignore[attr-defined]
            out.append((P_TUPLE, path, (len(kids),)))
            stack.extend((k, (*path, i)) for i, k in reversed(list(enumerate(kids))))
        else:
            raise InternalError(f"unknown pattern {t.__name__}")
    return out



def _match(plan: tuple[Any, ...], v: Any, regs: list[Any]) -> bool:
    """Semantics-Pattern-*: does ``v`` match ``plan``? Binds the variables' registers."""
    values = [v]
    for step in plan:
        w = values.pop()
        kind = step[0]
        if kind == 1:
            regs[step[1]] = w
        elif kind == 2:
            if type(w) is not ConstructorValue or w.name != step[1] or len(w.fields) != step[2]:
                return False
            values.extend(reversed(w.fields))
        elif kind == 3:
            if type(w) is not tuple or len(w) != step[1]:
                return False
            values.extend(reversed(w))
    return True


# --- the machine ------------------------------------------------------------------------------
# The instructions from MATCH on, one function each: ``(ins, regs, pc) -> next pc`` (``pc`` is
# already the next instruction's).

def _select(ins: Instr, regs: list[Any], pc: int) -> int:
    """``MATCH v clauses``: the target of the first clause that matches (its variables
    written to their registers); Semantics-Match-Fail when none does."""
    v = regs[ins[1]]
    for name, fields, plan, target in ins[2]:
        if name is not None:
            # Constructor(var-or-_, ...): one test, fields to registers.
            if type(v) is ConstructorValue and v.name == name and len(v.fields) == len(fields):
                for r, x in zip(fields, v.fields):
                    if r >= 0:
                        regs[r] = x
                return target
        elif _match(plan, v, regs):
            return target
    raise RelayRuntimeError(non_exhaustive_match(value_str(v, limit=80)))


def _jump(ins: Instr, regs: list[Any], pc: int) -> int:
    return ins[1]


def _isset(ins: Instr, regs: list[Any], pc: int) -> int:
    return pc if regs[ins[1]] is None else ins[2]


def _proj(ins: Instr, regs: list[Any], pc: int) -> int:
    regs[ins[1]] = regs[ins[2]][ins[3]]
    return pc


def _closure(ins: Instr, regs: list[Any], pc: int) -> int:
    regs[ins[1]] = VMClosure(ins[2], tuple([regs[a] for a in ins[3]]), ins[4])
    return pc


def _tuple(ins: Instr, regs: list[Any], pc: int) -> int:
    regs[ins[1]] = tuple([regs[a] for a in ins[2]])
    return pc


def _ctor(ins: Instr, regs: list[Any], pc: int) -> int:
    regs[ins[1]] = ConstructorValue(ins[2], tuple([regs[a] for a in ins[4]]), ins[3])
    return pc


def _move(ins: Instr, regs: list[Any], pc: int) -> int:
    regs[ins[1]] = regs[ins[2]]
    return pc


def _const(ins: Instr, regs: list[Any], pc: int) -> int:
    regs[ins[1]] = ins[2]
    return pc


def _refnew(ins: Instr, regs: list[Any], pc: int) -> int:
    regs[ins[1]] = RefValue(regs[ins[2]])
    return pc


def _refread(ins: Instr, regs: list[Any], pc: int) -> int:
    regs[ins[1]] = regs[ins[2]].value
    return pc


def _refwrite(ins: Instr, regs: list[Any], pc: int) -> int:
    regs[ins[2]].value = regs[ins[3]]
    regs[ins[1]] = ()
    return pc


def _raise(ins: Instr, regs: list[Any], pc: int) -> int:
    raise RelayRuntimeError(ins[1])


def _decided_inline(ins: Instr, regs: list[Any], pc: int) -> int:
    raise InternalError(f"vm: opcode {OPCODE_NAMES[ins[0]]} is decided in VM._run")


_STEPS: tuple[Callable[[Instr, list[Any], int], int], ...] = (
    *([_decided_inline] * MATCH), _select, _jump, _isset, _proj, _closure, _tuple, _ctor,
    _move, _const, _refnew, _refread, _refwrite, _raise)
assert len(_STEPS) == len(OPCODE_NAMES)

# The code of the frame that replaces one whose tail call was not of a VM closure (an
# operator or a constructor): it returns that call's result, held in its one register.
_RETURN_R0: list[Instr] = [(RET, 0)]


def _exhausted(max_depth: int) -> RelayRuntimeError:
    return RelayRuntimeError(f"stack exhausted: more than {max_depth} nested calls")


class VM:
    """Runs compiled code (see the module docstring).

    Args:
        mod: the program the code was compiled from (for calls of closures made by the
            oracle that reach the VM as arguments).
        max_depth: the bound on nested non-tail calls.
    """

    def __init__(self, mod: IRModule, max_depth: int = 100_000):
        self.mod = mod
        self.max_depth = max_depth
        self._ops: dict[str, OpKernel] = {}

    def call(self, f: Any, args: Sequence[Any]) -> Any:
        """Apply a function value to argument values; the result value.

        Raises:
            RelayRuntimeError: as the oracle would (wrong arity, non-exhaustive match,
                operator failures, stack exhausted, ...).
        """
        if type(f) is not VMClosure:
            return self._call_value(f, list(args), None)
        return self._run(f, list(args))

    def _enter(self, c: VMClosure, args: Sequence[Any], span: Span | None) -> list[Any]:
        code = c.code
        if len(args) != code.nparams:
            raise RelayRuntimeError(
                errors.wrong_arity(c.name or "the function", code.nparams, len(args)), span)
        regs: list[Any] = [None] * code.nregs
        regs[:code.nparams] = args
        if c.captured:
            regs[code.nparams:code.nparams + len(c.captured)] = c.captured
        if code.self_reg >= 0:
            regs[code.self_reg] = c
        return regs

    def _call_value(self, f: Any, args: list[Any], node: Any) -> Any:
        """A call of a value that is not a VM closure (Semantics-Call-Op, -ADT-Constructor)."""
        span = getattr(node, "span", None)
        t = type(f)
        if t is OpValue:
            return call_op_value(self._ops, f.name, args, span)
        if t is ConstructorFunction or t is ConstructorValue:
            return construct(f, args, span)
        if isinstance(f, Closure) and t is not VMClosure:
            # A closure made by the oracle (an argument from Python): the oracle applies it.
            from interpreter.eval import Interpreter
            from interpreter.linking import with_prelude

            return Interpreter(with_prelude(self.mod), max_depth=self.max_depth).apply(
                f, args, node)
        if t is VMClosure:
            return self._run(f, args)
        raise not_a_function(f, span)

    def _start(self, entry: VMClosure, args: list[Any]) -> list[Any]:
        if self.max_depth < 1:
            raise _exhausted(self.max_depth)
        return self._enter(entry, args, None)

    def _run(self, entry: VMClosure, args: list[Any]) -> Any:
        code, regs = entry.code, self._start(entry, args)
        instrs = code.instrs
        frames: list[tuple[Code, list[Any], int, int]] = []
        max_depth = self.max_depth
        pc = 0
        try:
            while True:
                ins = instrs[pc]
                op = ins[0]
                pc += 1
                if op <= KERNEL:
                    if op == KERNEL2:
                        regs[ins[1]] = ins[2](regs[ins[3]], regs[ins[4]])
                    elif op == KERNEL1:
                        regs[ins[1]] = ins[2](regs[ins[3]])
                    else:
                        regs[ins[1]] = ins[2](*[regs[a] for a in ins[3]])
                elif op >= MATCH:
                    if op == CONST:
                        regs[ins[1]] = ins[2]
                    else:
                        pc = _STEPS[op](ins, regs, pc)
                elif op <= CALL:
                    if op == RET:
                        v = regs[ins[1]]
                        if not frames:
                            return v
                        code, regs, pc, dst = frames.pop()
                        instrs = code.instrs
                        regs[dst] = v
                    elif op == CALLG:
                        if len(frames) >= max_depth - 1:
                            raise _exhausted(max_depth)
                        frames.append((code, regs, pc, ins[1]))
                        code = ins[2]
                        new = [regs[a] for a in ins[3]] + [None] * (code.nregs - code.nparams)
                        for r in ins[4]:
                            regs[r] = None
                        regs = new
                        instrs = code.instrs
                        pc = 0
                    else:                                   # CALL
                        f = regs[ins[2]]
                        call_args = [regs[a] for a in ins[3]]
                        if type(f) is not VMClosure:
                            regs[ins[1]] = self._call_value(f, call_args, ins[4])
                            continue
                        if len(frames) >= max_depth - 1:
                            raise _exhausted(max_depth)
                        new = self._enter(f, call_args, ins[4].span)
                        for r in ins[5]:
                            regs[r] = None
                        frames.append((code, regs, pc, ins[1]))
                        code = f.code
                        regs = new
                        instrs = code.instrs
                        pc = 0
                elif op == IFNOT:
                    if not regs[ins[1]]:
                        pc = ins[2]
                elif op == TAILG:
                    code = ins[1]
                    regs = [regs[a] for a in ins[2]] + [None] * (code.nregs - code.nparams)
                    instrs = code.instrs
                    pc = 0
                else:                                       # TAIL
                    f = regs[ins[1]]
                    call_args = [regs[a] for a in ins[2]]
                    if type(f) is VMClosure:
                        regs = self._enter(f, call_args, ins[3].span)
                        code = f.code
                        instrs = code.instrs
                    else:
                        regs = [self._call_value(f, call_args, ins[3])]
                        instrs = _RETURN_R0
                    pc = 0
        except RelayError as err:
            _locate(err, code, pc)
            raise


def _locate(err: RelayError, code: Code, pc: int) -> None:
    """Give ``err`` the span of instruction ``pc - 1`` of ``code`` when it has none."""
    if err.span is None and 0 < pc <= len(code.spans):
        err.with_span(code.spans[pc - 1])
