"""The runtime of the AoT executor's generated code (:mod:`backends.tvm.exec.aot`).

The generated module is given a :class:`Runtime` (``R``) and builds its function values as
:class:`AotClosure` objects; the runtime applies computed function values (closures of the
program, operators, constructors, closures made by the oracle), reports match failures and
other runtime errors with their spans, and runs the trampolined code (:meth:`Runtime.drive`:
:class:`Done` and :class:`Tail` are the requests a generator activation yields besides a
callee's generator).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from backends.tvm.fallback import OpKernel, call_op_value
from interpreter.values import (
    Closure,
    ConstructorFunction,
    ConstructorValue,
    OpValue,
    construct,
    not_a_function,
    value_str,
)
from semantics import errors
from semantics.errors import RelayRuntimeError, non_exhaustive_match
from semantics.expr import Constructor, Function
from semantics.module import IRModule

__all__ = ["AotClosure", "Done", "Runtime", "Tail"]


class AotClosure(Closure):
    """A function value of generated code: the Python function ``fn`` of ``arity``;
    ``gen``: ``fn`` is a generator function of the trampolined code (see the module
    docstring), else a plain function."""

    __slots__ = ("fn", "arity", "gen", "owner")

    def __init__(self, fn: Callable[..., Any], function: Function, name: str | None = None,
                 gen: bool = False, owner: Any = None):
        super().__init__(function, None, None, name)  # type: ignore[arg-type]
        self.fn = fn
        self.arity = len(function.params)
        self.gen = gen
        self.owner = owner    # the Runtime of the program that made it


class Done:
    """A request of trampolined code whose value is already computed (a call of a plain
    function, an operator or a constructor): the driver sends ``value`` straight back."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class Tail:
    """A tail call of trampolined code: the driver replaces the caller's activation by the
    generator ``gen`` (the caller never resumes; the depth does not grow)."""

    __slots__ = ("gen",)

    def __init__(self, gen: Any) -> None:
        self.gen = gen


# --- the runtime the generated code calls ---------------------------------------------------

class Runtime:
    """Helpers of generated code: calls of computed values, matching, errors."""

    def __init__(self, mod: IRModule, max_depth: int):
        self.mod = mod
        self.max_depth = max_depth
        self.depth = [0]     # nested non-tail calls of the running program
        self.foreign = False  # a function value from outside this program was called
        self._ops: dict[str, OpKernel] = {}

    def closure(self, fn: Callable[..., Any], function: Function, name: str | None = None,
                gen: bool = False) -> AotClosure:
        """An :class:`AotClosure` of this program (generated code makes them with this)."""
        return AotClosure(fn, function, name, gen, self)

    def exhausted(self) -> Any:
        raise RelayRuntimeError(f"stack exhausted: more than {self.max_depth} nested calls")

    def call(self, f: Any, args: tuple[Any, ...], node: Any) -> Any:
        """Apply a computed function value (Semantics-Call, -Call-Op, -ADT-Constructor)."""
        span = getattr(node, "span", None)
        t = type(f)
        if t is AotClosure:
            if len(args) != f.arity:
                raise RelayRuntimeError(
                    errors.wrong_arity(f.name or "the function", f.arity, len(args)), span)
            if f.owner is not self:
                self.foreign = True
            return f.fn(*args)
        if t is OpValue:
            return call_op_value(self._ops, f.name, args, span)
        if t is ConstructorFunction or t is ConstructorValue:
            return construct(f, args, span)
        if isinstance(f, Closure):
            from interpreter.eval import Interpreter
            from interpreter.linking import with_prelude

            self.foreign = True
            return Interpreter(with_prelude(self.mod), max_depth=self.max_depth).apply(
                f, list(args), node)
        raise not_a_function(f, span)

    def gcall(self, f: Any, args: tuple[Any, ...], node: Any) -> Any:
        """Trampolined code's call of a computed value: the callee's generator (the driver
        runs it as a nested activation), or :class:`Done` with the value."""
        if type(f) is AotClosure:
            if len(args) != f.arity:
                self.call(f, args, node)     # raises the arity error
            if f.gen:
                return f.fn(*args)
            return Done(f.fn(*args))
        return Done(self.call(f, args, node))

    def gtail(self, f: Any, args: tuple[Any, ...], node: Any) -> Any:
        """:meth:`gcall` in tail position: a :class:`Tail` for a generator callee."""
        r = self.gcall(f, args, node)
        return r if type(r) is Done else Tail(r)

    def drive(self, entry: AotClosure, args: Sequence[Any]) -> Any:
        """Run trampolined code: ``entry`` applied to ``args`` on an explicit stack.

        Each activation of a generator function is a Python generator; a non-tail call
        yields the callee's generator (pushed; ``depth`` grows), a tail call yields a
        :class:`Tail` (the caller is replaced), a call whose value is known yields
        :class:`Done`. Nothing nests on Python's stack, so non-tail recursion is bounded
        by ``max_depth`` only.

        Raises:
            RelayRuntimeError: "stack exhausted" beyond ``max_depth`` nested calls, and
                whatever the program raises.
        """
        depth = self.depth
        max_depth = self.max_depth
        depth[0] = 0
        if not entry.gen:
            return entry.fn(*args)
        if max_depth < 1:
            self.exhausted()
        depth[0] = 1
        gen = entry.fn(*args)
        stack: list[Any] = []
        push = stack.append
        pop = stack.pop
        value = None
        while True:
            try:
                req = gen.send(value)
            except StopIteration as stop:
                value = stop.value
                if not stack:
                    return value
                gen = pop()
                depth[0] -= 1
                continue
            t = type(req)
            if t is Done:
                value = req.value
                continue
            value = None
            if t is Tail:
                gen = req.gen
                continue
            if depth[0] >= max_depth:
                req.close()
                self.exhausted()
            push(gen)
            depth[0] += 1
            gen = req

    def op_value(self, name: str) -> OpValue:
        """The value of operator ``name`` (an operator used as a value)."""
        return OpValue(name, OpKernel(name).opdef)

    @staticmethod
    def ctor_function(c: Constructor) -> ConstructorFunction:
        """The value of constructor ``c`` (a constructor used as a value)."""
        return ConstructorFunction(c)

    @staticmethod
    def match_fail(v: Any, node: Any) -> Any:
        raise RelayRuntimeError(non_exhaustive_match(value_str(v, limit=80)), node.span)

    @staticmethod
    def fail(message: str, node: Any) -> Any:
        raise RelayRuntimeError(message, getattr(node, "span", None))
