"""Which parts of a quantized Relay program run on VTA: the offloadable groups of ``main``.

A *group* is an int8 ``nn.conv2d`` (NCHW/OIHW, ``groups=1``, no dilation, ``out_dtype``
int32) or ``nn.dense`` (2-D data, ``out_dtype`` int32) followed by a chain of integer
epilogue operators, each the only consumer of the previous one, ending with ``cast`` to
int8 (the STORE's truncation):

* ``add`` of an int32 scalar constant that fits 16 bits -> ALU ADD imm; of an operand that
  varies only along the output channels (a bias) -> a per-channel ALU ADD; of any other
  operand broadcastable to the output (a residual) -> loaded through ACC, ALU ADD;
* ``subtract``/``multiply``/``maximum``/``minimum`` of a 16-bit scalar constant -> ALU
  ADD (negated)/MUL/MAX/MIN imm;
* ``right_shift``/``left_shift`` by a constant scalar in [0, 31] -> ALU SHR imm (negative for
  the left shift);
* ``clip`` with bounds in 16 bits -> MIN imm then MAX imm (``a_max`` floored, ``a_min``
  ceiled); ``nn.relu`` -> MAX imm 0;
* ``add(add(x, C), right_shift(x, K))`` (realize's round-to-nearest: ``x`` used by exactly
  those two) -> a scratch ACC copy of ``x`` (GEMM reset, ALU ADD), SHR imm K on it, ADD imm C,
  ALU ADD of the scratch.

A conv/dense whose chain does not reach a ``cast`` to int8 stays on the CPU (VTA can only
store 8 bits), as does one no tile fits (:func:`backends.vta.lower.plan`).  The partitioner
works on ``main`` as a dataflow graph (after ``to_gnf`` and type inference): variables,
constants, operator calls, tuples and projections; ``let`` bindings are followed.  A ``main``
with anything else (control flow, closures, references, calls of globals) is not partitioned
(``Partition.reason`` says why) and runs wholly on the CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from backends.vta import isa
from backends.vta.config import Config
from backends.vta.lower import ConvLayer, Plan, Step, plan
from semantics.expr import Call, Constant, Expr, Let, Op, Tuple, TupleGetItem, Var
from semantics.types import TensorType

__all__ = ["Group", "Partition", "operands", "partition"]

_I16 = (-(1 << 15), (1 << 15) - 1)


@dataclass
class Group:
    """An offloaded conv2d/dense with its epilogue.

    ``inputs`` are the nodes it reads: data, weight, then one per non-immediate step.
    ``output`` is the final ``cast`` node; ``internal`` the chain's other nodes.
    """

    kind: str                      # "conv2d" | "dense"
    root: Call
    output: Expr
    internal: list[Expr]
    inputs: list[Expr]
    layer: ConvLayer
    plan: Plan
    out_shape: tuple[int, ...]


@dataclass
class Partition:
    """The dataflow graph of ``main`` in evaluation order and its groups."""

    order: list[Expr] = field(default_factory=list)
    groups: dict[int, Group] = field(default_factory=dict)    # id(output) -> group
    internal: set[int] = field(default_factory=set)
    body: Expr | None = None
    reason: str = ""
    cpu_ops: dict[str, int] = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)
    alias: dict[int, Expr] = field(default_factory=dict)     # let-bound variable -> value

    def resolve(self, e: Expr) -> Expr:
        """The graph node an argument stands for (through let-bound variables and lets)."""
        return _resolve(e, self.alias)


def _shape(e: Expr) -> tuple[int, ...] | None:
    t = getattr(e, "checked_type", None)
    if not isinstance(t, TensorType):
        return None
    if not all(isinstance(d, int) for d in t.shape):
        return None
    return tuple(int(d) for d in t.shape)  # type: ignore[arg-type]


def _dtype(e: Expr) -> str | None:
    t = getattr(e, "checked_type", None)
    return t.dtype if isinstance(t, TensorType) else None


def _scalar(e: Expr) -> int | None:
    """The value of an integer constant with one element, else None."""
    if not isinstance(e, Constant):
        return None
    v = np.asarray(e.data)
    if v.size != 1 or v.dtype.kind not in "iu":
        return None
    return int(v.reshape(-1)[0])


def _name(e: Expr) -> str | None:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else None


def _resolve(e: Expr, alias: dict[int, Expr], found: list[Expr] | None = None) -> Expr:
    """The node a let-bound variable or a ``let`` expression stands for (lets recorded in
    ``alias``; their bound values appended to ``found``: they are evaluated eagerly)."""
    while True:
        if isinstance(e, Var) and id(e) in alias:
            e = alias[id(e)]
        elif isinstance(e, Let):
            alias[id(e.var)] = e.value
            if found is not None:
                found.append(e.value)
            e = e.body
        else:
            return e


def operands(e: Expr) -> tuple[Expr, ...] | None:
    """The operands of a dataflow node (an operator call, a tuple, a projection), left to
    right; None for any other kind of expression."""
    if isinstance(e, Call):
        return e.args if isinstance(e.op, Op) else None
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return (e.tuple_value,)
    return None


def _flatten(body: Expr) -> tuple[list[Expr], dict[int, int], Expr, str, dict[int, Expr]]:
    """Post-order of the dataflow graph (lets resolved), consumer counts, the root, the
    reason it is not a dataflow graph (or ""), and the let aliases."""
    alias: dict[int, Expr] = {}
    found: list[Expr] = []
    top = _resolve(body, alias, found)
    order: list[Expr] = []
    done: set[int] = set()
    users: dict[int, int] = {}
    stack: list[tuple[Expr, bool]] = [(top, False)]

    def push_found() -> None:
        while found:
            value = _resolve(found.pop(), alias, found)
            if id(value) not in done:
                stack.append((value, False))

    push_found()
    while stack:
        e, expanded = stack.pop()
        if id(e) in done:
            continue
        if expanded:
            done.add(id(e))
            order.append(e)
            continue
        if isinstance(e, (Var, Constant)):
            done.add(id(e))
            order.append(e)
            continue
        kids = operands(e)
        if kids is None:
            return [], {}, top, f"main contains a {type(e).__name__} (not a dataflow graph)", \
                alias
        stack.append((e, True))
        for k in reversed(kids):
            r = _resolve(k, alias, found)
            users[id(r)] = users.get(id(r), 0) + 1
            if id(r) not in done:
                stack.append((r, False))
        push_found()
    users[id(top)] = users.get(id(top), 0) + 1
    return order, users, top, "", alias


def partition(fn_body: Expr, config: Config) -> Partition:
    """The groups of a type-checked ``main`` body (see the module docstring)."""
    order, users, top, reason, alias = _flatten(fn_body)
    part = Partition(body=top, reason=reason, alias=alias)
    if reason:
        return part
    part.order = order
    # consumers of each node, to walk chains forward
    consumers: dict[int, list[Expr]] = {}
    resolve = part.resolve

    for e in order:
        if isinstance(e, Call):
            for a in e.args:
                consumers.setdefault(id(resolve(a)), []).append(e)
        elif isinstance(e, Tuple):
            for a in e.fields:
                consumers.setdefault(id(resolve(a)), []).append(e)
        elif isinstance(e, TupleGetItem):
            consumers.setdefault(id(resolve(e.tuple_value)), []).append(e)
    for e in order:
        name = _name(e)
        if name not in ("nn.conv2d", "nn.dense"):
            continue
        assert isinstance(e, Call)
        group, why = _match(e, name, users, consumers, resolve, config)
        if group is None:
            part.rejected.append(f"{name}: {why}")
            continue
        part.groups[id(group.output)] = group
        part.internal.update(id(x) for x in group.internal)
    for e in order:
        name = _name(e)
        if name and id(e) not in part.internal and id(e) not in part.groups:
            part.cpu_ops[name] = part.cpu_ops.get(name, 0) + 1
    return part


def _conv_padding(pad: Any) -> tuple[int, int, int, int] | None:
    pad = tuple(int(p) for p in (pad if isinstance(pad, tuple) else (pad,)))
    if len(pad) == 1:
        return (pad[0],) * 4
    if len(pad) == 2:
        return (pad[0], pad[1], pad[0], pad[1])
    if len(pad) == 4:
        return (pad[0], pad[1], pad[2], pad[3])
    return None


def _root_layer(e: Call, name: str, resolve: Any) -> tuple[dict[str, Any] | None, str]:
    data, weight = resolve(e.args[0]), resolve(e.args[1])
    if _dtype(data) != "int8" or _dtype(weight) != "int8":
        return None, "data and weight are not int8"
    if e.attrs.get("out_dtype", "") != "int32":
        return None, "out_dtype is not int32"
    ds, ws = _shape(data), _shape(weight)
    if ds is None or ws is None:
        return None, "shapes are not static"
    if name == "nn.dense":
        if len(ds) != 2 or len(ws) != 2:
            return None, "dense data is not 2-D"
        return {"n": 1, "c": ds[1], "h": ds[0], "w": 1, "o": ws[0], "kh": 1, "kw": 1,
                "stride": (1, 1), "padding": (0, 0, 0, 0)}, ""
    a = e.attrs
    if a.get("data_layout", "NCHW") != "NCHW" or a.get("kernel_layout", "OIHW") != "OIHW" \
            or a.get("out_layout", "") not in ("", "NCHW"):
        return None, "layouts are not NCHW/OIHW"
    if int(a.get("groups", 1)) != 1:
        return None, "grouped convolution"
    if tuple(int(d) for d in a.get("dilation", (1, 1))) != (1, 1):
        return None, "dilated convolution"
    pad = _conv_padding(a.get("padding", (0, 0)))
    if pad is None:
        return None, "unsupported padding"
    strides = tuple(int(s) for s in a.get("strides", (1, 1)))
    return {"n": ds[0], "c": ds[1], "h": ds[2], "w": ds[3], "o": ws[0], "kh": ws[2],
            "kw": ws[3], "stride": strides, "padding": pad}, ""


_COMMUTATIVE = {"add", "multiply", "maximum", "minimum"}
_IMM_OPS = {"add": isa.ALU_ADD, "multiply": isa.ALU_MUL, "maximum": isa.ALU_MAX,
            "minimum": isa.ALU_MIN}


def _match(root: Call, name: str, users: dict[int, int], consumers: dict[int, list[Expr]],
           resolve: Any, config: Config) -> tuple[Group | None, str]:
    """The VTA group rooted at the int32 convolution/dense ``root``: follow its single-use
    chain of int32 epilogue operators up to the cast to int8.  Returns the group, or ``None``
    and why the pattern does not match."""
    shape, why = _root_layer(root, name, resolve)
    if shape is None:
        return None, why
    out_shape = _shape(root)
    if out_shape is None:
        return None, "shapes are not static"
    steps: list[Step] = []
    inputs: list[Expr] = [resolve(root.args[0]), resolve(root.args[1])]
    internal: list[Expr] = [root]
    node: Expr = root
    while True:
        rounded = _sign_round(node, users, consumers, resolve)
        if rounded is not None:
            step, joined, parts = rounded
            steps.append(step)
            internal.extend(parts)
            node = joined
            continue
        if users.get(id(node), 0) != 1 or len(consumers.get(id(node), [])) != 1:
            return None, "the int32 result has other uses before a cast to int8"
        nxt = consumers[id(node)][0]
        op = _name(nxt)
        if op is None:
            return None, "the result is not cast to int8"
        assert isinstance(nxt, Call)
        args = [resolve(a) for a in nxt.args]
        if op == "cast":
            dt = nxt.attrs.get("dtype")
            if dt == "int8":
                return _group(name, root, nxt, internal, inputs, steps, shape, out_shape,
                              config)
            if dt != "int32":
                return None, f"cast to {dt}"
            internal.append(nxt)
            node = nxt
            continue
        if _dtype(nxt) != "int32":
            return None, f"{op} does not stay in int32"
        why = _epilogue_step(op, nxt, args, node, out_shape, name, inputs, steps)
        if why:
            return None, why
        internal.append(nxt)
        node = nxt


def _epilogue_step(op: str, nxt: Call, args: list[Expr], node: Expr,
                   out_shape: tuple[int, ...], name: str, inputs: list[Expr],
                   steps: list[Step]) -> str:
    """Append to ``steps`` (and ``inputs``, for a tensor operand) the ALU step of the int32
    epilogue operator ``nxt`` (named ``op``, resolved ``args``) applied to ``node``.
    Returns why it cannot run on VTA, or ``""`` when it was appended."""
    if op in _COMMUTATIVE or op == "subtract":
        return _binary_step(op, args, node, out_shape, name, inputs, steps)
    elif op in ("right_shift", "left_shift"):
        amount = _scalar(args[1]) if len(args) == 2 and args[0] is node else None
        if amount is None or not 0 <= amount <= 31:
            return f"{op} by something other than a constant in [0, 31]"
        steps.append(Step("imm", isa.ALU_SHR, amount if op == "right_shift" else -amount))
    elif op == "clip":
        hi = math.floor(float(nxt.attrs["a_max"]))
        lo = math.ceil(float(nxt.attrs["a_min"]))
        if hi < (1 << 31) - 1:
            if not _I16[0] <= hi <= _I16[1]:
                return "clip bound beyond 16 bits"
            steps.append(Step("imm", isa.ALU_MIN, hi))
        if lo > -(1 << 31):
            if not _I16[0] <= lo <= _I16[1]:
                return "clip bound beyond 16 bits"
            steps.append(Step("imm", isa.ALU_MAX, lo))
    elif op == "nn.relu":
        steps.append(Step("imm", isa.ALU_MAX, 0))
    else:
        return f"{op} in the epilogue"
    return ""


def _binary_step(op: str, args: list[Expr], node: Expr, out_shape: tuple[int, ...], name: str,
                 inputs: list[Expr], steps: list[Step]) -> str:
    """The step of ``add``/``subtract``/``multiply``/``maximum``/``minimum`` of ``node`` by a
    16-bit constant (an immediate) or, for ``add``, by an int32 tensor broadcasting to the
    output (a per-channel or per-pixel operand).  Returns why not, or ``""``."""
    if len(args) != 2:
        return f"{op} arity"
    if args[0] is node:
        other = args[1]
    elif args[1] is node and op in _COMMUTATIVE:
        other = args[0]
    else:
        return f"{op} of the result from the right"
    value = _scalar(other)
    if value is not None and op == "subtract":
        value = -value
    if value is not None and _I16[0] <= value <= _I16[1]:
        steps.append(Step("imm", _IMM_OPS.get(op, isa.ALU_ADD), value))
    elif op == "add":
        oshape = _shape(other)
        if oshape is None or _dtype(other) != "int32":
            return "add of an operand without a static int32 shape"
        try:
            np.broadcast_shapes(oshape, out_shape)
        except ValueError:
            return "add of an operand that does not broadcast"
        if np.broadcast_shapes(oshape, out_shape) != out_shape:
            return "add broadcasts beyond the output"
        steps.append(Step("channel" if _per_channel(oshape, out_shape, name)
                          else "tensor", operand=len(inputs) - 2))
        inputs.append(other)
    else:
        return f"{op} by a non-constant or a constant beyond 16 bits"
    return ""


def _sign_round(node: Expr, users: dict[int, int], consumers: dict[int, list[Expr]],
                resolve: Any) -> tuple[Step, Expr, list[Expr]] | None:
    """``add(add(x, C), right_shift(x, K))`` (realize's rounding to nearest, the sign fixed by
    ``x >> 31``) with ``x`` used by exactly those two: a ``"sign_round"`` step."""
    uses = consumers.get(id(node), [])
    if users.get(id(node), 0) != 2 or len(uses) != 2:
        return None
    adds = [u for u in uses if _name(u) == "add"]
    shifts = [u for u in uses if _name(u) == "right_shift"]
    if len(adds) != 1 or len(shifts) != 1:
        return None
    plus, shift = adds[0], shifts[0]
    assert isinstance(plus, Call) and isinstance(shift, Call)
    pargs = [resolve(a) for a in plus.args]
    const = pargs[1] if pargs[0] is node else pargs[0] if pargs[1] is node else None
    value = _scalar(const) if const is not None else None
    sargs = [resolve(a) for a in shift.args]
    amount = _scalar(sargs[1]) if sargs[0] is node else None
    if value is None or amount is None or not _I16[0] <= value <= _I16[1] \
            or not 0 <= amount <= 31:
        return None
    if _dtype(plus) != "int32" or _dtype(shift) != "int32":
        return None
    for part in (plus, shift):
        if users.get(id(part), 0) != 1 or len(consumers.get(id(part), [])) != 1:
            return None
    joined = consumers[id(plus)][0]
    if joined is not consumers[id(shift)][0] or _name(joined) != "add":
        return None
    assert isinstance(joined, Call)
    jargs = [resolve(a) for a in joined.args]
    if not ((jargs[0] is plus and jargs[1] is shift) or (jargs[0] is shift
                                                         and jargs[1] is plus)):
        return None
    return Step("sign_round", isa.ALU_ADD, value, shift=amount), joined, [plus, shift, joined]


def _per_channel(oshape: tuple[int, ...], out_shape: tuple[int, ...], name: str) -> bool:
    """Whether an operand broadcast to the output varies along the channel axis only."""
    padded = (1,) * (len(out_shape) - len(oshape)) + tuple(oshape)
    axis = 1
    return all(d == 1 for i, d in enumerate(padded) if i != axis)


def _group(name: str, root: Call, cast: Call, internal: list[Expr], inputs: list[Expr],
           steps: list[Step], shape: dict[str, Any], out_shape: tuple[int, ...],
           config: Config) -> tuple[Group | None, str]:
    layer = ConvLayer(steps=tuple(steps), **shape)
    p = plan(layer, config)
    if p is None:
        return None, "no tile fits the on-chip buffers"
    return Group("dense" if name == "nn.dense" else "conv2d", root, cast, internal, inputs,
                 layer, p, out_shape), ""
