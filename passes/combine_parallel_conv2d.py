"""CombineParallelConv2D (``combine_parallel_conv2d``): one convolution for parallel branches.

Rewrite, by name:

* **Combine-Conv2D** — ``k >= min_num_branches`` (default 3, TVM's default)
  calls ``nn.conv2d(x, W1)``, ..., ``nn.conv2d(x, Wk)`` on the *same* input
  node ``x`` whose attributes agree (strides, padding, dilation, layouts,
  ``out_dtype``, ``kernel_size``; ``groups = 1``) and whose weights have the
  same dtype and the same kernel height and width (the output channel counts
  ``O1..Ok`` may differ) become one call
  ``y = nn.conv2d(x, concatenate((W1, ..., Wk), axis=O), channels=O1+...+Ok)``
  and ``s = split(y, indices_or_sections=[O1, O1+O2, ...], axis=C)``; branch
  ``i`` is replaced by ``s.i``. Output channel ``o`` of a convolution depends
  only on ``W[o]``, so stacking the filters and splitting the result gives each
  branch exactly its channels. Convolutions that are compatible with each other
  form one group; a group smaller than ``min_num_branches`` is left alone.

Where: ``y`` and ``s`` are graph-shared nodes, evaluated once per activation
(Semantics-Shared) at the first branch the evaluation reaches. So that their
free variables are in scope at every branch, a branch is only combined when
its weight is a constant or a parameter of the global function being
rewritten, its input ``x`` is not a variable bound at two sites, and all the
branches of a group lie in the same function body (not across a ``fn``
boundary: that would share one result across activations).

Limits (TVM does more): the elementwise/broadcast operators that follow the
branches (bias, relu) are not combined, and grouped convolutions are never
combined (as in TVM).

Invariants: pure; one memoized walk per function (no Python recursion); the
result type of every branch is unchanged (``s.i`` has ``Oi`` channels);
values are the same (float results within summation-order tolerance).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TypeVar

import numpy as np

from passes.canonicalize_ops import normalized_attrs
from passes.common import typed_or_same
from passes.manager import Pass, register_pass
from semantics.expr import (
    Attrs,
    Call,
    Constant,
    Expr,
    Function,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from semantics.module import IRModule
from semantics.ops.layouts import is_blocked
from semantics.shapes import as_int, is_concrete
from semantics.types import TensorType
from semantics.visitor import ExprMutator, enclosing_functions, post_order, rebound_vars

__all__ = ["DEFAULT_MIN_NUM_BRANCHES", "combine_parallel_conv2d"]

DEFAULT_MIN_NUM_BRANCHES = 3

P = TypeVar("P", IRModule, Expr)


def _combine_module(mod: IRModule, min_num_branches: int) -> IRModule:
    typed = typed_or_same(mod)
    out = {name: _combine(fn, min_num_branches) for name, fn in typed.functions.items()}
    if all(out[n] is typed.functions[n] for n in out):
        return mod
    return typed.with_functions(out)


@register_pass("CombineParallelConv2D", "combine_parallel_conv2d", opt_level=3)
def _registered(mod: IRModule) -> IRModule:
    """Combine >= 3 parallel nn.conv2d on the same input into one conv2d and a split."""
    return _combine_module(mod, DEFAULT_MIN_NUM_BRANCHES)


COMBINE_PARALLEL_CONV2D: Pass = _registered


def combine_parallel_conv2d(program: P, min_num_branches: int = DEFAULT_MIN_NUM_BRANCHES) -> P:
    """Combine parallel convolutions (see the module docstring).

    Args:
        program: a module or an expression.
        min_num_branches: the fewest compatible branches worth combining (TVM's
            ``min_num_branches``, default 3; at least 2).
    Returns:
        The program of the same kind with every large enough group combined.
    Raises:
        ValueError: ``min_num_branches`` below 2.
    """
    if min_num_branches < 2:
        raise ValueError(f"combine_parallel_conv2d: min_num_branches must be at least 2, "
                         f"got {min_num_branches}")
    if min_num_branches == DEFAULT_MIN_NUM_BRANCHES:
        return COMBINE_PARALLEL_CONV2D(program)
    custom = Pass(COMBINE_PARALLEL_CONV2D.name, COMBINE_PARALLEL_CONV2D.func_name,
                  lambda m: _combine_module(m, min_num_branches))
    return custom(program)


# --- the rewrite ---------------------------------------------------------------------------------

def _combine(fn: Function, min_num_branches: int) -> Function:
    order = post_order(fn)
    rebound = rebound_vars(fn, order=order)
    owner = enclosing_functions(fn)
    scope_ok = {id(p) for p in fn.params if id(p) not in rebound}
    groups: dict[Hashable, list[Call]] = {}
    for node in order:
        if isinstance(node, Call):
            key = _key(node, scope_ok, rebound, owner)
            if key is not None:
                groups.setdefault(key, []).append(node)
    combiner = _Combiner()
    for group in groups.values():
        if len(group) >= min_num_branches:
            for i, conv in enumerate(group):
                combiner.branch_of[id(conv)] = (len(combiner.members), i)
            combiner.members.append(group)
    if not combiner.members:
        return fn
    out = combiner.mutate(fn)
    assert isinstance(out, Function)
    return out


class _Combiner(ExprMutator):
    """Replaces branch ``i`` of group ``g`` by ``split_g.i``; ``split_g`` is built when the
    walk meets the group's first branch."""

    def __init__(self) -> None:
        self.branch_of: dict[int, tuple[int, int]] = {}  # conv id -> (group number, index)
        self.members: list[list[Call]] = []
        self.splits: dict[int, Expr] = {}

    def visit_call(self, new: Call, old: Call) -> Expr:
        where = self.branch_of.get(id(old))
        if where is None:
            return new
        number, index = where
        split = self.splits.get(number)
        if split is None:
            group = self.members[number]
            data = self.rewritten(group[0].args[0])
            assert data is not None  # group[0] is the branch being visited
            split = _combined(group, data)
            self.splits[number] = split
        return TupleGetItem(split, index, span=old.span)


def _key(call: Call, scope_ok: set[int], rebound: set[int],
         owner: dict[int, int]) -> Hashable | None:
    """The compatibility key of a combinable conv2d (None: not combinable)."""
    if not (isinstance(call.op, Op) and call.op.name == "nn.conv2d" and len(call.args) == 2):
        return None
    data, weight = call.args
    if isinstance(data, Var) and id(data) in rebound:
        return None
    if not (isinstance(weight, Constant) or (isinstance(weight, Var) and id(weight) in scope_ok)):
        return None
    wt = weight.checked_type if not isinstance(weight, Constant) else None
    if isinstance(weight, Constant):
        shape: tuple[int, ...] = tuple(weight.data.shape)
        dtype = weight.data.dtype.name
    elif isinstance(wt, TensorType) and all(is_concrete(d) for d in wt.shape):
        shape, dtype = tuple(as_int(d) for d in wt.shape), wt.dtype
    else:
        return None
    if not isinstance(call.checked_type, TensorType):
        return None
    attrs = normalized_attrs(call)
    if int(attrs["groups"]) != 1:
        return None
    if is_blocked(attrs["data_layout"] + attrs["kernel_layout"] + attrs["out_layout"]):
        return None  # blocked layouts (NCHW16c): channel counts span two axes
    kernel_layout = attrs["kernel_layout"]
    kh, kw = shape[kernel_layout.index("H")], shape[kernel_layout.index("W")]
    fixed = tuple((k, v) for k, v in attrs.items() if k != "channels")
    return (id(data), owner.get(id(call), 0), fixed, kh, kw, dtype, len(shape))


def _out_channels(conv: Call) -> int:
    weight = conv.args[1]
    layout = normalized_attrs(conv)["kernel_layout"]
    if isinstance(weight, Constant):
        return int(weight.data.shape[layout.index("O")])
    wt = weight.checked_type
    assert isinstance(wt, TensorType)
    return int(wt.shape[layout.index("O")])


def _combined(group: list[Call], data: Expr) -> Expr:
    """``split(conv2d(data, concatenate(weights)), ...)`` for one group.

    Built when the walk meets the group's first branch (``group[0]``: groups are in
    post-order); ``data`` is that branch's input, rewritten.
    """
    first = group[0]
    attrs = normalized_attrs(first)
    sizes = [_out_channels(c) for c in group]
    span = first.span
    # Weights are constants or parameters (leaves the walk never changes); later branches'
    # weights are not visited yet, so they are taken as they are.
    weights = tuple(c.args[1] for c in group)
    axis = attrs["kernel_layout"].index("O")
    concat: Expr
    if all(isinstance(w, Constant) for w in weights):
        # Bound weights are concatenated now (FoldConstant does not fold a call on a tuple).
        arrays = tuple(w.data for w in weights if isinstance(w, Constant))
        concat = Constant(np.ascontiguousarray(np.concatenate(arrays, axis=axis)), span=span)
    else:
        concat = Call(Op("concatenate"), (Tuple(weights, span=span),), Attrs({"axis": axis}),
                      span=span)
    conv_attrs = Attrs({k: v for k, v in first.attrs.items() if k != "channels"})
    if "channels" in first.attrs or attrs["channels"] is not None:
        conv_attrs = conv_attrs.replace(channels=sum(sizes))
    conv = Call(first.op, (data, concat), conv_attrs, span=span)
    out_layout = attrs["out_layout"] or attrs["data_layout"]
    points = []
    total = 0
    for size in sizes[:-1]:
        total += size
        points.append(total)
    return Call(Op("split"), (conv,),
                Attrs({"indices_or_sections": tuple(points), "axis": out_layout.index("C")}),
                span=span)
