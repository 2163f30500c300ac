"""A primitive function as one TVM tensor-expression computation (the lowering step).

:func:`build_te` walks the body of a ``Primitive=1`` function — a DAG of operator calls,
tuples, projections, constants and (let-bound) intermediate values, as
:func:`passes.fuse_ops` produces it — in post-order on an explicit stack
(:func:`semantics.visitor.post_order`) and maps every operator call to its lowering rule
(:data:`semantics.ops.tables.LOWERINGS`, target ``llvm``).

* **Types are recomputed**, not read from ``checked_type``: every call's result type comes
  from its operator's relation applied to the concrete argument types, so a function typed
  with ``Any`` or symbolic dims is specialized to the shapes of the call being compiled.
* **Parameters** become one ``te.placeholder`` per tensor; a tuple-typed parameter is
  flattened (fields in order, recursively).  The kernel's arguments are these tensors in
  order, then the hidden constant tensors, then the outputs.
* **Constants** are hidden inputs of the kernel (their arrays kept by the kernel and passed
  on every call), 0-d ones included: TVM's constant folder would otherwise meet, and refuse,
  expressions the references define (a float division by a constant zero, a negative
  constant cast to an unsigned type), and folding them saves one scalar load at most.
* **Empty results**: a call all of whose result tensors have a zero dim is not lowered by
  its rule (there is nothing to compute, and index arithmetic would divide by the zero
  extents): it becomes an empty fill.
* **Prepared constants**: a rule may read a constant argument's array and add a new hidden
  constant prepared from it (``OpCall.add_constant``: ``nn.dense`` packs its weight for the
  GEMV); constants that no output reads afterwards are dropped.
* **Outputs**: the result tensors, flattened; an output that is not computed by the
  function itself (a parameter, a constant, or a tensor already listed) is copied by an
  identity ``te.compute`` so that every output buffer is written by the kernel.

Failures: an operator without a rule, or a rule that declines the call
(:class:`~backends.tvm.lower.base.Unsupported`), raise :class:`LoweringFailed` with the
operator and the reason; a body that is not a primitive dataflow DAG (a call of a closure,
control flow) raises ``LoweringFailed`` too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import backends.tvm.lower  # noqa: F401  (registers every lowering rule)
from backends.tvm.lower.base import TARGET, OpCall, Unsupported, const
from backends.tvm.target import Target
from semantics.errors import RelayError
from semantics.expr import Call, Constant, Expr, Function, Let, Op, Tuple, TupleGetItem, Var
from semantics.ops.registry import get as get_op
from semantics.ops.tables import LOWERINGS
from semantics.types import TensorType, TupleType, Type
from semantics.visitor import post_order

# A result layout: the index of a flat output tensor, or a tuple of layouts.
Layout = int | tuple["Layout", ...]


class LoweringFailed(Exception):
    """``op`` (an operator name, or a description of the node) cannot be lowered: ``reason``."""

    def __init__(self, op: str, reason: str) -> None:
        super().__init__(f"{op}: {reason}")
        self.op = op
        self.reason = reason


@dataclass
class TeFunction:
    """The lowered function: placeholders, hidden constants, outputs and the result layout."""

    inputs: list[Any]
    input_types: list[TensorType]
    constants: list[Any] = field(default_factory=list)
    constant_arrays: list[np.ndarray] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    output_types: list[TensorType] = field(default_factory=list)
    layout: Layout = 0
    ops: list[str] = field(default_factory=list)


def flatten_types(types: Sequence[Type]) -> list[TensorType]:
    """The tensor types of ``types`` with tuple types flattened (fields in order)."""
    out: list[TensorType] = []
    stack: list[Type] = list(reversed(types))
    while stack:
        t = stack.pop()
        if isinstance(t, TupleType):
            stack.extend(reversed(t.fields))
        elif isinstance(t, TensorType):
            out.append(t)
        else:
            raise LoweringFailed("parameter", f"a kernel takes tensors, got type {t}")
    return out


def _param_arity(t: Type | None) -> Any:
    """The tuple structure of a parameter's declared type: None for a tensor, else a list."""
    if isinstance(t, TupleType):
        return [_param_arity(f) for f in t.fields]
    return None


def _regroup(flat: list[TensorType], shape: Any, pos: int) -> tuple[Type, int]:
    if shape is None:
        return flat[pos], pos + 1
    fields = []
    for s in shape:
        f, pos = _regroup(flat, s, pos)
        fields.append(f)
    return TupleType(tuple(fields)), pos


def param_types(func: Function, arg_types: Sequence[Type]) -> list[Type]:
    """The concrete type of each parameter, from per-parameter or flattened ``arg_types``."""
    flat = flatten_types(arg_types)
    out: list[Type] = []
    pos = 0
    for p in func.params:
        declared = p.type_annotation if p.type_annotation is not None else p.checked_type
        t, pos = _regroup(flat, _param_arity(declared), pos) if pos < len(flat) else (None, pos)
        if t is None:
            raise LoweringFailed("parameter", f"{len(flat)} argument tensors for "
                                 f"{len(func.params)} parameters")
        out.append(t)
    if pos != len(flat):
        raise LoweringFailed("parameter", f"{len(flat)} argument tensors, the parameters "
                             f"take {pos}")
    return out


def build_te(func: Function, arg_types: Sequence[Type],
             target: Target | None = None) -> TeFunction:
    """Lower ``func`` specialized to ``arg_types`` (see the module docstring) for ``target``
    (a :class:`~backends.tvm.target.Target`; None: the host), which rules read from
    ``OpCall.target`` (vector lanes).

    Raises:
        LoweringFailed: an operator without a lowering, a declined call, or a body that is
            not a primitive dataflow DAG.
    """
    from tvm import te

    target = target if target is not None else Target.host()
    ptypes = param_types(func, arg_types)
    result = TeFunction(inputs=[], input_types=[])
    values: dict[int, Any] = {}
    types: dict[int, Type] = {}

    def placeholders(t: Type) -> Any:
        if isinstance(t, TupleType):
            return tuple(placeholders(f) for f in t.fields)
        assert isinstance(t, TensorType)
        ph = te.placeholder(_shape(t), t.dtype, name=f"p{len(result.inputs)}")
        result.inputs.append(ph)
        result.input_types.append(t)
        return ph

    for p, t in zip(func.params, ptypes):
        values[id(p)] = placeholders(t)
        types[id(p)] = t

    nodes = post_order(func.body, descend=lambda n: not isinstance(n, Function))
    let_value: dict[int, Expr] = {id(n.var): n.value for n in nodes if isinstance(n, Let)}

    def value_of(e: Expr) -> tuple[Any, Type]:
        key = id(e)
        if isinstance(e, Var) and key not in values:
            if key not in let_value:
                raise LoweringFailed("variable", f"free variable %{e.name_hint} in a "
                                     "primitive function")
            key = id(let_value[key])
        return values[key], types[key]

    data: dict[int, np.ndarray] = {}     # constant placeholder (its handle) -> its array

    def hide(array: np.ndarray, name: str) -> Any:
        ph = te.placeholder(array.shape, str(array.dtype), name=f"c{len(result.constants)}_{name}")
        result.constants.append(ph)
        result.constant_arrays.append(np.ascontiguousarray(array))
        return ph

    for node in nodes:
        if isinstance(node, (Var, Op)):
            continue
        if isinstance(node, Constant):
            values[id(node)], types[id(node)] = _constant(node, result)
            data[_handle(values[id(node)])] = result.constant_arrays[-1]
        elif isinstance(node, Call):
            values[id(node)], types[id(node)] = _call(node, value_of, result, data, target,
                                                      hide)
        elif isinstance(node, Tuple):
            pairs = [value_of(f) for f in node.fields]
            values[id(node)] = tuple(v for v, _ in pairs)
            types[id(node)] = TupleType(tuple(t for _, t in pairs))
        elif isinstance(node, TupleGetItem):
            v, t = value_of(node.tuple_value)
            if not isinstance(t, TupleType) or not 0 <= node.index < len(t.fields):
                raise LoweringFailed("projection", f"index {node.index} of type {t}")
            values[id(node)], types[id(node)] = v[node.index], t.fields[node.index]
        elif isinstance(node, Let):
            values[id(node)], types[id(node)] = value_of(node.body)
        else:
            raise LoweringFailed(type(node).__name__,
                                 "not part of a primitive function's dataflow")
    value, vtype = value_of(func.body)
    result.layout = _outputs(value, vtype, result)
    _drop_unread_constants(result)
    return result


def _drop_unread_constants(result: TeFunction) -> None:
    """Forget the hidden constants no output reads (a weight a rule replaced by a prepared
    copy): the kernel neither keeps nor receives them."""
    seen: set[int] = set()
    stack = list(result.outputs)
    while stack:
        t = stack.pop()
        if _handle(t) in seen:
            continue
        seen.add(_handle(t))
        stack.extend(t.op.input_tensors)
    keep = [i for i, c in enumerate(result.constants) if _handle(c) in seen]
    if len(keep) != len(result.constants):
        result.constants = [result.constants[i] for i in keep]
        result.constant_arrays = [result.constant_arrays[i] for i in keep]


def _shape(t: TensorType) -> tuple[int, ...]:
    shape = []
    for d in t.shape:
        if type(d) is not int:
            raise LoweringFailed("shape", f"the kernel needs concrete shapes, got {t}")
        shape.append(d)
    return tuple(shape)


def _constant(node: Constant, result: TeFunction) -> tuple[Any, Type]:
    from tvm import te

    # The constant's own (read-only) array: the kernel copies what it keeps (Kernel takes
    # writable C-contiguous arrays over); a weight that a rule prepares anew and no output
    # reads (the dense's packed GEMV weight) is never copied.
    data = np.asarray(node.data)
    t = TensorType(tuple(int(d) for d in data.shape), node.dtype)
    ph = te.placeholder(data.shape, node.dtype, name=f"c{len(result.constants)}")
    result.constants.append(ph)
    result.constant_arrays.append(data)
    return ph, t


def _handle(t: Any) -> int:
    """The identity of a TE tensor (its wrappers differ; ``==`` on 0-d tensors raises)."""
    return int(t.__chandle__())


def _call(node: Call, value_of: Any, result: TeFunction, data: dict[int, np.ndarray],
          target: Target, hide: Any) -> tuple[Any, Type]:
    if not isinstance(node.op, Op):
        raise LoweringFailed("call", "a primitive function calls operators only")
    name = node.op.name
    opdef = get_op(name)
    try:
        rule = LOWERINGS.lookup(name, TARGET)
    except RelayError:
        reason = LOWERINGS.reason(name, TARGET) or f"no lowering for target {TARGET}"
        raise LoweringFailed(name, reason) from None
    pairs = [value_of(a) for a in node.args]
    arg_types = tuple(t for _, t in pairs)
    attrs = opdef.normalize_attrs(node.attrs)
    try:
        out_type = opdef.relation(arg_types, attrs)
    except RelayError as err:
        raise LoweringFailed(name, f"ill-typed call: {err}") from None
    if out_type is None:
        raise LoweringFailed(name, "the result type is not determined by the argument types")
    for t in flatten_types([out_type]):
        _shape(t)
    inputs = tuple(v for v, _ in pairs)
    call = OpCall(name, inputs, attrs, arg_types, out_type,
                  tuple(data.get(_handle(v)) if not isinstance(v, tuple) else None
                        for v in inputs),
                  target, hide, tuple(node.args))
    if _all_empty(out_type):
        # No element to compute (and rules may divide by the zero extents): zero fills.
        return _fill_empty(out_type), out_type
    try:
        value = rule(call)
    except Unsupported as err:
        raise LoweringFailed(name, err.reason) from None
    result.ops.append(name)
    return value, out_type


def _all_empty(t: Type) -> bool:
    return all(any(d == 0 for d in f.shape) for f in flatten_types([t]))


def _fill_empty(t: Type) -> Any:
    from tvm import te

    if isinstance(t, TupleType):
        return tuple(_fill_empty(f) for f in t.fields)
    assert isinstance(t, TensorType)
    zero = const(0, t.dtype)
    return te.compute(_shape(t), lambda *i: zero, name="empty")


def _outputs(value: Any, vtype: Type, result: TeFunction) -> Layout:
    """Record the output tensors of ``value`` (copying the ones the kernel does not compute)."""
    from tvm import te

    if isinstance(vtype, TupleType):
        return tuple(_outputs(v, t, result) for v, t in zip(value, vtype.fields))
    assert isinstance(vtype, TensorType)
    computed = isinstance(value.op, te.ComputeOp)
    if not computed or any(value.same_as(o) for o in result.outputs):
        src = value
        value = te.compute(src.shape, lambda *i: src[i], name="out_copy")
    result.outputs.append(value)
    result.output_types.append(vtype)
    return len(result.outputs) - 1
