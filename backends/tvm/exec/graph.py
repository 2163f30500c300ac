"""The graph executor: first-order dataflow programs with memory planning (issue 14 §2a).

What it runs: a global whose body, after fusion, is pure dataflow — ``let`` bindings,
variables, constants, tuples, projections and calls of ``Primitive=1`` functions — over
tensors (or tuples of tensors). Everything else (closures, calls of globals, ``if``,
``match``, ADTs, references) is rejected at build time with a ``RelayTypeError`` that
says to build with ``executor="vm"``. Tensors whose shapes are only known at run time
(``Any``, symbolic dimensions) are not planned: their kernel allocates them.

Plan (once per global, at build time; TVM's graph executor + its storage planner):

1. **Linearize.** The body's DAG in evaluation order (children left to right before
   the parent) becomes a list of kernel steps. Every value is described by a nested
   tuple of *tensor ids*: a tuple or a projection costs nothing, it only rearranges ids.
2. **Liveness.** A tensor dies after the last step that reads it; the tensors of the
   result live to the end (they are returned, so they are allocated afresh per run).
3. **Storage.** Walking the steps, each output tensor takes a storage block from the
   free list — the smallest free block large enough, else the largest free block grown
   to fit, else a new block — *before* the step's dead inputs return their blocks (so
   no kernel writes over an input it is still reading). ``peak_memory`` is the total of
   the blocks; ``intermediate_bytes`` the sum of all intermediate tensors' sizes, the
   memory a naive executor would allocate.

Running: the blocks are allocated once (64-byte aligned) and every intermediate tensor
is a view into its block; each kernel is called with ``out=`` its output views. Calls from
several threads at once are correct: a call takes a whole set of blocks for itself from
the executable's free list (allocating a new set when every set is in use) and returns it
when it ends, so two calls never share an intermediate buffer; one thread calling again
and again reuses one set.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from backends.tvm.exec.vm import is_primitive_function
from backends.tvm.kernel_table import KernelTable, flatten_tuples, is_static_tensor
from semantics.errors import InternalError, RelayTypeError
from semantics.expr import (
    Call,
    Constant,
    Function,
    GlobalVar,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from semantics.module import IRModule
from semantics.shapes import as_int
from semantics.types import TensorType, TupleType, Type
from semantics.visitor import post_order

__all__ = ["GraphPlan", "GraphRunner", "StepProfile", "kernel_flops", "plan_function"]

_ALIGN = 64

# A value: a tensor id (int) or a tuple of values.
Desc = Any


@dataclass
class GraphPlan:
    """The linearized, memory-planned body of one global.

    Invariants: tensor ids ``0..n_inputs-1`` are the flattened parameters; ``consts``
    maps ids to constant arrays; each step writes fresh ids; ``storage[tid]`` is the
    block of a planned intermediate (absent for results, inputs and constants).
    """

    params: list[Desc] = field(default_factory=list)
    n_inputs: int = 0
    consts: dict[int, np.ndarray] = field(default_factory=dict)
    steps: list[tuple[Any, Desc, list[int]]] = field(default_factory=list)
    funcs: list[Function] = field(default_factory=list)
    layouts: dict[int, Layout] = field(default_factory=dict)
    result: Desc = None
    storage: dict[int, int] = field(default_factory=dict)
    blocks: list[int] = field(default_factory=list)
    intermediate_bytes: int = 0

    @property
    def peak_memory(self) -> int:
        return sum(self.blocks)


def _reject(name: str, what: str, node: Any = None) -> RelayTypeError:
    return RelayTypeError(
        f"graph executor: @{name} is not a first-order dataflow function ({what}); "
        "build with executor=\"vm\"", getattr(node, "span", None))


Layout = tuple[np.dtype, tuple[int, ...]] | None


def _leaves(t: Type | None, name: str, node: Any) -> list[Layout]:
    """The tensor layouts of a tensor or (nested) tuple-of-tensors type, flattened (None for
    a tensor whose shape is only known at run time)."""
    out: list[Layout] = []
    stack: list[Any] = [t]
    while stack:
        x = stack.pop()
        if isinstance(x, TupleType):
            stack.extend(reversed(x.fields))
        elif isinstance(x, TensorType):
            if is_static_tensor(x):
                out.append((np.dtype(x.dtype), tuple(as_int(d) for d in x.shape)))
            else:
                out.append(None)
        else:
            raise _reject(name, f"a value of type {type(x).__name__} that is not a tensor",
                          node)
    return out


def _shape_like(t: Type | None, ids: list[int]) -> Desc:
    """The description of a value of type ``t`` whose leaves are ``ids`` (in order)."""
    it = iter(ids)

    def build(x: Any) -> Desc:
        # Types of values are shallow (no user-controlled depth worth a stack here).
        if isinstance(x, TupleType):
            return tuple(build(f) for f in x.fields)
        return next(it)
    return build(t)


def _flat(desc: Desc) -> list[int]:
    return flatten_tuples((desc,))


def plan_function(name: str, fn: Function, table: KernelTable) -> GraphPlan:
    """Linearize and memory-plan ``fn`` (see the module docstring).

    Raises:
        RelayTypeError: ``fn`` is not a first-order dataflow function over static tensors.
    """
    plan = GraphPlan()
    next_id = 0

    def fresh(t: Type | None, node: Any) -> tuple[Desc, list[int]]:
        nonlocal next_id
        layouts = _leaves(t, name, node)
        ids = list(range(next_id, next_id + len(layouts)))
        next_id += len(layouts)
        for i, lay in zip(ids, layouts):
            plan.layouts[i] = lay
        return _shape_like(t, ids), ids

    values: dict[int, Desc] = {}
    for p in fn.params:
        ptype = p.type_annotation if p.type_annotation is not None else p.checked_type
        pdesc, _ = fresh(ptype, p)
        plan.params.append(pdesc)
        values[id(p)] = pdesc
    plan.n_inputs = next_id
    let_vars: dict[int, list[Var]] = {}   # a value's id -> every let binding it (a shared
    for node in post_order(fn.body, descend=lambda n: type(n) is not Function):  # value may
        if isinstance(node, Let):                                           # be bound twice)
            let_vars.setdefault(id(node.value), []).append(node.var)
    for node in post_order(fn.body, descend=lambda n: type(n) is not Function):
        t = type(node)
        desc: Desc
        if t is Var:
            if id(node) not in values:
                raise InternalError(f"graph executor: %{node.name_hint} unbound")  # type: ignore
            desc = values[id(node)]
        elif t is Constant:
            desc, ids = fresh(node.checked_type or TensorType(node.data.shape, node.dtype),  # type: ignore
                              node)
            plan.consts[ids[0]] = node.data  # type: ignore[attr-defined]
        elif t is Tuple:
            desc = tuple(values[id(f)] for f in node.fields)  # type: ignore[attr-defined]
        elif t is TupleGetItem:
            src = values[id(node.tuple_value)]  # type: ignore[attr-defined]
            if type(src) is not tuple:
                raise _reject(name, "a projection of a value that is not a tuple", node)
            desc = src[node.index]  # type: ignore[attr-defined]
        elif t is Let:
            desc = values[id(node.body)]  # type: ignore[attr-defined]
        elif t is Function:
            if not is_primitive_function(node):
                raise _reject(name, "a closure", node)
            continue
        elif isinstance(node, Call) and is_primitive_function(node.op):
            args = tuple(values[id(a)] for a in node.args)
            kernel = table.kernel_for(node.op)  # type: ignore[arg-type]
            desc, ids = fresh(node.checked_type, node)
            plan.steps.append((kernel, args, ids))
            plan.funcs.append(node.op)  # type: ignore[arg-type]
        elif isinstance(node, Call):
            what = "a call of a global function" if type(node.op) is GlobalVar else \
                "a call of something other than a fused kernel"
            raise _reject(name, what, node)
        elif t is GlobalVar:
            raise _reject(name, f"a use of the global @{node.name_hint}", node)  # type: ignore
        else:
            raise _reject(name, f"a {t.__name__} expression", node)
        values[id(node)] = desc
        for var in let_vars.get(id(node), ()):
            values[id(var)] = desc
    plan.result = values[id(fn.body)]
    _plan_memory(plan)
    return plan


def _nbytes(layout: Layout) -> int:
    if layout is None:
        raise InternalError("graph executor: planning storage for a dynamic shape")
    dtype, shape = layout
    return int(np.prod(shape, dtype=np.int64)) * dtype.itemsize


def _plan_memory(plan: GraphPlan) -> None:
    """Liveness and storage blocks (see the module docstring)."""
    keep = set(_flat(plan.result))
    last_use: dict[int, int] = {}
    for i, (_, args, _ids) in enumerate(plan.steps):
        for tid in _flat(args):
            last_use[tid] = i
    free: list[int] = []          # block numbers
    blocks = plan.blocks
    for i, (_, args, ids) in enumerate(plan.steps):
        dynamic = any(plan.layouts[tid] is None for tid in ids)
        for tid in ids:
            if tid in keep or dynamic:
                continue  # results are allocated per run; dynamic shapes by the kernel
            need = _nbytes(plan.layouts[tid])
            plan.intermediate_bytes += need
            fits = [b for b in free if blocks[b] >= need]
            if fits:
                b = min(fits, key=lambda k: blocks[k])
                free.remove(b)
            elif free:
                b = max(free, key=lambda k: blocks[k])
                free.remove(b)
                blocks[b] = need
            else:
                b = len(blocks)
                blocks.append(need)
            plan.storage[tid] = b
        dead = {tid for tid in _flat(args) if last_use.get(tid) == i}
        dead.update(tid for tid in ids if tid not in last_use)
        for tid in dead:
            block = plan.storage.get(tid)
            if block is not None and block not in free:
                free.append(block)


def _allocate_views(plan: GraphPlan) -> dict[int, np.ndarray]:
    """One set of the plan's storage blocks: each planned tensor id -> its view."""
    buffers = []
    for size in plan.blocks:
        raw = np.empty(size + _ALIGN, dtype=np.uint8)
        offset = (-raw.ctypes.data) % _ALIGN
        buffers.append(raw[offset:offset + size])
    views: dict[int, np.ndarray] = {}
    for tid, b in plan.storage.items():
        layout = plan.layouts[tid]
        assert layout is not None
        dtype, shape = layout
        n = _nbytes(layout)
        views[tid] = buffers[b][:n].view(dtype).reshape(shape)
    return views


class _Bound:
    """A plan with its storage: sets of views the steps write into, one set per running
    call (see the module docstring). Invariant: a set is in ``_free`` or in use by
    exactly one call."""

    def __init__(self, plan: GraphPlan):
        self.plan = plan
        self._free: list[dict[int, np.ndarray]] = [_allocate_views(plan)]
        self._lock = threading.Lock()

    def _take(self) -> dict[int, np.ndarray]:
        with self._lock:
            if self._free:
                return self._free.pop()
        return _allocate_views(self.plan)

    def _give_back(self, views: dict[int, np.ndarray]) -> None:
        with self._lock:
            self._free.append(views)

    def run(self, args: list[Any]) -> Any:
        views = self._take()
        try:
            return self._run(args, views)
        finally:
            self._give_back(views)

    def _run(self, args: list[Any], views: dict[int, np.ndarray]) -> Any:
        plan = self.plan
        env: dict[int, Any] = dict(plan.consts)
        for desc, value in zip(plan.params, args):
            _bind(desc, value, env)
        layouts = plan.layouts
        for kernel, arg_desc, ids in plan.steps:
            outs = []
            for tid in ids:
                v = views.get(tid)
                if v is None:
                    layout = layouts[tid]
                    if layout is None:
                        break  # a dynamic shape: the kernel allocates
                    v = np.empty(layout[1], layout[0])
                outs.append(v)
            else:
                kernel(*[_value(d, env) for d in arg_desc], out=outs)
                for tid, v in zip(ids, outs):
                    env[tid] = v
                continue
            result = kernel(*[_value(d, env) for d in arg_desc])
            for tid, v in zip(ids, result if type(result) is tuple else (result,)):
                env[tid] = v
        return _value(plan.result, env)


    def profile(self, args: list[Any], repeat: int) -> list[StepProfile]:
        """Run the plan once, timing each step on its own: the median of ``repeat`` calls
        after one warm-up call, with the step's real inputs (see :meth:`GraphRunner.profile`).
        """
        views = self._take()
        try:
            return self._profile(args, views, repeat)
        finally:
            self._give_back(views)

    def _profile(self, args: list[Any], own: dict[int, np.ndarray], repeat: int
                 ) -> list[StepProfile]:
        plan = self.plan
        env: dict[int, Any] = dict(plan.consts)
        for desc, value in zip(plan.params, args):
            _bind(desc, value, env)
        rows = []
        for i, ((kernel, arg_desc, ids), fn) in enumerate(zip(plan.steps, plan.funcs)):
            inputs = [_value(d, env) for d in arg_desc]
            views = [own.get(tid) for tid in ids]
            # a result or a dynamic shape: the kernel allocates
            outs = None if any(v is None for v in views) else views

            result = _call(kernel, inputs, outs)
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                result = _call(kernel, inputs, outs)
                times.append(time.perf_counter() - start)
            for tid, v in zip(ids, result if type(result) is tuple else (result,)):
                env[tid] = v
            shapes = tuple(tuple(np.shape(env[tid])) for tid in ids)
            rows.append(StepProfile(i, kernel.name, _anchor_ops(fn), shapes,
                                    float(np.median(times)), kernel_flops(fn)))
        return rows


def _call(kernel: Any, inputs: list[Any], outs: list[Any] | None) -> Any:
    return kernel(*inputs, out=outs) if outs is not None else kernel(*inputs)


@dataclass(frozen=True)
class StepProfile:
    """One kernel call of a profiled graph run (:meth:`GraphRunner.profile`).

    Attributes:
        step: its index in the plan (evaluation order).
        kernel: the kernel's name.
        ops: the operators of its primitive function, in evaluation order.
        shapes: the shapes of its outputs.
        seconds: median wall-clock time of one call.
        flops: 2 × the multiply-adds of its ``nn.conv2d``/``nn.dense`` calls (0 if none).
    """

    step: int
    kernel: str
    ops: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    seconds: float
    flops: int

    @property
    def gflops(self) -> float:
        """Throughput in GFLOP/s (0 for a kernel without convolution or dense)."""
        return self.flops / self.seconds / 1e9 if self.seconds > 0 else 0.0


def _anchor_ops(fn: Function) -> tuple[str, ...]:
    return tuple(n.op.name for n in post_order(fn.body)
                 if isinstance(n, Call) and isinstance(n.op, Op))


def _layout_channels(shape: list[int], layout: str) -> int:
    """The number of channels of a tensor of ``shape`` in ``layout`` (``NCHW``, ``NHWC``,
    ``NCHW16c``, ...): the ``C`` extent times the ``c`` block, if any."""
    axes = re.findall(r"[0-9]*[A-Za-z]", layout)
    if len(axes) != len(shape):
        raise ValueError(f"layout {layout} does not fit shape {shape}")
    channels = 1
    for axis, extent in zip(axes, shape):
        if axis[-1] in "Cc":
            channels *= extent
    return channels


_WINOGRAD = "nn.contrib_conv2d_winograd_without_weight_transform"


def kernel_flops(fn: Function) -> int:
    """FLOPs (2 per multiply-add) of the ``nn.conv2d`` and ``nn.dense`` calls of a
    type-checked primitive function, in any data layout (0 when a type is not concrete).

    A convolution's output element sums ``kernel elements / output channels`` products;
    a dense output element sums the reduction length (the data's last axis). A Winograd
    convolution counts as the direct convolution it computes (``input channels × r × r`` per
    output, ``r = a - tile_size + 1``): its GFLOP/s are *effective* ones, comparable with a
    direct kernel's (and may exceed the machine's peak).
    """
    total = 0
    for node in post_order(fn.body):
        if not (isinstance(node, Call) and isinstance(node.op, Op)) or \
                node.op.name not in ("nn.conv2d", "nn.dense", _WINOGRAD):
            continue
        out, data, weight = (node.checked_type, node.args[0].checked_type,
                             node.args[1].checked_type)
        if not all(isinstance(t, TensorType) and all(type(d) is int for d in t.shape)
                   for t in (out, data, weight)):
            return 0
        oshape = [int(d) for d in out.shape]  # type: ignore[union-attr]
        outputs = int(np.prod(oshape, dtype=np.int64))
        if node.op.name == "nn.dense":
            reduction = int(data.shape[-1])  # type: ignore[union-attr]
        elif node.op.name == _WINOGRAD:
            alpha, _, _, in_c = (int(d) for d in weight.shape)  # type: ignore[union-attr]
            r = alpha - int(node.attrs.get("tile_size", 1)) + 1
            reduction = in_c * r * r
        else:
            layout = node.attrs.get("out_layout") or node.attrs.get("data_layout") or "NCHW"
            channels = _layout_channels(oshape, layout)
            reduction = int(np.prod([int(d) for d in weight.shape],  # type: ignore[union-attr]
                                    dtype=np.int64)) // max(channels, 1)
        total += 2 * outputs * reduction
    return total


def _bind(desc: Desc, value: Any, env: dict[int, Any]) -> None:
    stack = [(desc, value)]
    while stack:
        d, v = stack.pop()
        if type(d) is tuple:
            stack.extend(zip(d, v))
        else:
            env[d] = v


def _value(desc: Desc, env: dict[int, Any]) -> Any:
    if type(desc) is not tuple:
        return env[desc]
    return tuple(_value(d, env) for d in desc)


class GraphRunner:
    """The graph executor behind an :class:`~backends.tvm.exec.executable.Executable`.

    ``main`` is planned at construction (a program the graph executor cannot run is
    rejected then); other globals when first run.
    """

    def __init__(self, mod: IRModule, table: KernelTable):
        self.mod = mod
        self.table = table
        self.plans: dict[str, _Bound] = {}
        self._planning = threading.Lock()
        if "main" in mod.functions:
            self._bound("main")

    def _bound(self, name: str) -> _Bound:
        b = self.plans.get(name)
        if b is None:
            with self._planning:        # two threads' first calls: one plan
                b = self.plans.get(name)
                if b is None:
                    b = self.plans[name] = _Bound(plan_function(
                        name, self.mod.functions[name], self.table))
        return b

    @property
    def peak_memory(self) -> int:
        b = self.plans.get("main")
        return b.plan.peak_memory if b is not None else 0

    @property
    def intermediate_bytes(self) -> int:
        b = self.plans.get("main")
        return b.plan.intermediate_bytes if b is not None else 0

    def run(self, name: str, values: list[Any]) -> Any:
        return self._bound(name).run(values)

    def profile(self, name: str, values: list[Any], repeat: int = 10) -> list[StepProfile]:
        """Time every kernel call of one run of ``name`` on ``values`` (converted
        arguments): one :class:`StepProfile` per step, in evaluation order. Each kernel is
        called ``1 + repeat`` times on its real inputs; the results equal a normal run's."""
        return self._bound(name).profile(values, max(1, int(repeat)))
