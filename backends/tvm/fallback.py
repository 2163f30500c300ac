"""The numpy fallback kernel: a primitive function run with the operators' references.

When :func:`backends.tvm.kernel.compile_function` cannot lower a ``Primitive=1``
function (it raises ``NoLowering``: an operator without a TVM lowering, a parameter
that is a tuple, a dtype TVM does not handle), the executors run the function with
:class:`FallbackKernel` instead. It is *Kernel-compatible*: it has a ``name`` and is
called as ``kernel(*arrays, out=None)``, returning an ndarray (a tuple of them for a
tuple result); with ``out`` (a list of preallocated arrays, one per result tensor) it
writes the results there and returns them, as a compiled kernel does.

Design: the function body — a DAG of operator calls, tuples, projections, constants and
the parameters (what ``passes.fuse_ops`` puts in a group) — is compiled **once** into a
flat list of steps in evaluation order (left to right, arguments before the call, as
RULES.md's Semantics-Call-Op), each step a Python closure over the operator's reference
``impl`` and its normalized attributes. Running the kernel walks that list; no tree walk
and no oracle machinery per call. Each operator step keeps the relation's verdict for
the last argument signature it saw (``impl.decide`` / ``impl.decided``, the same
split the interpreter's call sites use), so a repeated call on tensors of the same
shapes goes straight to the numpy compute. Shapes are not fixed at construction: the
same kernel serves every signature (``Any`` and symbolic dimensions need no
specialization here).

Errors are the oracle's: an operator failure (integer division by zero, a shape the
relation rejects at run time) is a ``RelayRuntimeError`` with the operator's message.
A body that is not a dataflow DAG (a ``let``, a closure, control flow) cannot be a
fused group and is an :class:`~semantics.errors.InternalError` at construction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from semantics import errors, ops
from semantics.errors import InternalError, RelayError, RelayRuntimeError
from semantics.expr import Call, Constant, Function, Op, Tuple, TupleGetItem, Var
from semantics.ops.bound import OP_FAILURES, BoundOp
from semantics.visitor import post_order

__all__ = ["FallbackKernel", "OpKernel", "call_op_value", "write_out"]

_DATAFLOW = (Call, Constant, Tuple, TupleGetItem, Var, Op)


class OpKernel(BoundOp):
    """One operator with fixed attributes as a callable: ``k(*args) -> result``.

    The shared operator call object (:class:`semantics.ops.bound.BoundOp`: it keeps the
    relation's verdict for the last argument signature) with the executors' conventions:
    the arity checked, results as ndarrays, numpy failures as ``RelayRuntimeError``.
    """

    __slots__ = ()

    def __init__(self, name: str, attrs: Any = None):
        """Args: name: the operator; attrs: the call's attributes (validated here).
        Raises: RelayTypeError: an unknown operator or bad attributes."""
        opdef = ops.get(name)
        super().__init__(opdef, dict(opdef.normalize_attrs(attrs or {})))
        self.name = name

    def __call__(self, *args: Any) -> Any:
        wrong = self.arity_error(len(args))
        if wrong is not None:
            raise RelayRuntimeError(wrong)
        try:
            return _tensors(self.name, self.run(args))
        except RelayError:
            raise
        except OP_FAILURES as exc:
            raise RelayRuntimeError(f"operator {self.name} failed: {exc}") from None


def call_op_value(kernels: dict[str, OpKernel], name: str, args: Sequence[Any],
                  span: Any) -> Any:
    """Apply operator ``name`` called as a value (Semantics-Call-Op) by the executors: its
    :class:`OpKernel` (made once per executor, in ``kernels``), an error carrying the call's
    ``span``."""
    k = kernels.get(name)
    if k is None:
        k = kernels[name] = OpKernel(name)
    try:
        return k(*args)
    except RelayError as err:
        raise err.with_span(span) from None


def _tensors(name: str, result: Any) -> Any:
    """An operator's result as ndarrays (numpy scalars become 0-d arrays)."""
    if type(result) is np.ndarray:
        return result
    if isinstance(result, np.generic):
        return np.asarray(result)
    if type(result) is tuple:
        return tuple(_tensors(name, r) for r in result)
    raise InternalError(f"operator {name} returned {type(result).__name__}, not a tensor")


def write_out(result: Any, out: Sequence[np.ndarray]) -> Any:
    """Copy ``result`` (a tensor or a flat tuple of tensors) into ``out``; return ``out``'s view.

    Raises:
        InternalError: the number, shapes or dtypes of ``out`` do not fit ``result``
            (a memory plan that disagrees with the program's types).
    """
    leaves = list(result) if type(result) is tuple else [result]
    if len(leaves) != len(out):
        raise InternalError(f"out= has {len(out)} buffers for {len(leaves)} results")
    for r, o in zip(leaves, out):
        if o.shape != r.shape or o.dtype != r.dtype:
            raise InternalError(
                f"out= buffer {o.dtype}{list(o.shape)} does not fit {r.dtype}{list(r.shape)}")
        np.copyto(o, r)
    return tuple(out) if type(result) is tuple else out[0]


class FallbackKernel:
    """A ``Primitive=1`` function run with numpy references (Kernel-compatible).

    Args:
        func: the primitive function (its body a dataflow DAG over its parameters).
        name: the kernel's name (default: ``fallback_<first operator>``).
        reason: why it is not compiled (``NoLowering``'s reason), for reports.
    Raises:
        InternalError: the body is not a dataflow DAG.
        RelayTypeError: an operator with bad attributes.
    """

    def __init__(self, func: Function, name: str | None = None, reason: str = ""):
        self.func = func
        self.reason = reason
        self.ops: list[str] = []
        self._nparams = len(func.params)
        self._program, self._result, self._nslots = _compile(func, self.ops)
        self.name = name or ("fallback_" + "_".join(o.replace(".", "_") for o in self.ops[:3]))

    def __call__(self, *args: Any, out: list[np.ndarray] | None = None) -> Any:
        if len(args) != self._nparams:
            raise RelayRuntimeError(
                errors.wrong_arity(f"kernel {self.name}", self._nparams, len(args)))
        slots: list[Any] = [None] * self._nslots
        slots[:self._nparams] = args
        for step in self._program:
            step(slots)
        result = slots[self._result]
        if out is not None:
            return write_out(result, out)
        return result

    def __repr__(self) -> str:
        return f"<FallbackKernel {self.name}>"


Step = Callable[[list[Any]], None]


def _compile(func: Function, op_names: list[str]) -> tuple[list[Step], int, int]:
    """The body of ``func`` as steps over a slot list: ``(steps, result slot, slot count)``.

    Slots ``0..n-1`` hold the parameters; every other node of the DAG gets one slot,
    filled in post order (evaluation order: children left to right before the parent).
    """
    index: dict[int, int] = {}
    for i, p in enumerate(func.params):
        index[id(p)] = i
    steps: list[Step] = []
    nslots = len(func.params)
    for node in post_order(func.body, descend=lambda n: type(n) is not Function):
        if type(node) is Var:
            if id(node) not in index:
                raise InternalError(
                    f"fallback kernel: %{node.name_hint} is not a parameter of the group")
            continue
        if type(node) is Op:
            continue  # only as a callee, handled by its call
        if not isinstance(node, _DATAFLOW):
            raise InternalError(
                f"fallback kernel: a {type(node).__name__} cannot be part of a fused group")
        dst = nslots
        nslots += 1
        index[id(node)] = dst
        steps.append(_step(node, index, dst, op_names))
    return steps, index[id(func.body)], nslots


def _step(node: Any, index: dict[int, int], dst: int, op_names: list[str]) -> Step:
    if type(node) is Constant:
        data = node.data

        def constant(slots: list[Any]) -> None:
            slots[dst] = data
        return constant
    if type(node) is Tuple:
        fields = tuple(index[id(f)] for f in node.fields)

        def product(slots: list[Any]) -> None:
            slots[dst] = tuple(slots[i] for i in fields)
        return product
    if type(node) is TupleGetItem:
        src = index[id(node.tuple_value)]
        k = node.index

        def projection(slots: list[Any]) -> None:
            slots[dst] = slots[src][k]
        return projection
    if type(node) is Call and type(node.op) is Op:
        kernel = OpKernel(node.op.name, node.attrs)
        op_names.append(node.op.name)
        srcs = tuple(index[id(a)] for a in node.args)
        if len(srcs) == 1:
            (a0,) = srcs

            def call1(slots: list[Any]) -> None:
                slots[dst] = kernel(slots[a0])
            return call1
        if len(srcs) == 2:
            a0, a1 = srcs

            def call2(slots: list[Any]) -> None:
                slots[dst] = kernel(slots[a0], slots[a1])
            return call2

        def call(slots: list[Any]) -> None:
            slots[dst] = kernel(*[slots[i] for i in srcs])
        return call
    raise InternalError(
        f"fallback kernel: a call of a {type(node.op).__name__} cannot be part of a fused group")
