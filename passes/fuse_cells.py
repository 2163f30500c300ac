"""FuseCells (``fuse_cells``): one kernel per recurrent step (issue 35, item 3).

After :func:`passes.fuse_ops`, the step of an LSTM is still three or four kernels: the hidden
projection ``dense(h, W_hh) + b_hh (+ gi)`` (a group anchored on ``nn.dense``: an
``OUT_ELEMWISE_FUSABLE`` operator fuses only along elementwise paths, and the gates'
``split`` is injective), then one elementwise group per new state (``c2`` and ``h2``, each
reading the gates through its own copy of the ``split``). FuseOps builds single-output
groups, so it cannot put the cell's two results in one kernel. This pass merges such
kernels, after FuseOps, into one ``Primitive=1`` function with a **tuple result**:

* an **anchor** group — a call of a primitive function containing ``nn.dense`` — every use
  of whose result is an argument of a **cell** group: a primitive function whose operators
  are all elementwise, broadcast or injective (``OpPattern`` at most ``INJECTIVE``);
* the anchor and all those cells become one group; the cells' results that are used
  elsewhere (the new states) are its outputs, in evaluation order, and the cells' ``let``
  bindings are rebound to the projections of the group's call (the same variables);
* a cell's parameter with a dynamic shape that the cell reads only as
  ``take(p, i, axis=0)`` (the GRU's row of the input projection of the whole sequence)
  is taken out of the group as a call of its own (``fn(p, i) { take(p, i, axis=0) }``,
  which the executors run on the host: ``KernelTable`` runs dynamic data movement with the
  numpy references, which serve every shape) so that the merged kernel's parameters are
  static and it is compiled once, at build time, for every sequence length.

A member's argument may also be a kernel call of variables and constants that nothing else
reads (the TreeLSTM's ``dense(hsum, U_iou)``, a second anchor): it stays a kernel of its own,
evaluated as an argument of the merged call.

The lowering then sees one dataflow DAG with a single ``nn.dense``: the packed GEMV schedule
(:mod:`backends.tvm.sched.dense`) runs it with the weight packed at build time (a constant of
the kernel), then the gates and the state update as one vectorized pass over the outputs.

Where the merged call goes: at the ``let`` of the last cell of the group, inside one ``let``
chain. The merge is refused (the program is left as FuseOps made it) unless every member is
in that chain, the bindings between the anchor and the last cell are pure dataflow (kernel
calls, tuples, projections, variables, constants: nothing that may fail, write a reference
or diverge is moved across), every use of an output lies after the merged call, every
argument of a member is a variable, a constant, another member or such a kernel call. The
pass is pure rewriting of pure kernel calls: evaluating the anchor later, at the merged
call, is not observable.

A GRU step (a ``tanh`` of a sum holding a ``sigmoid``, read twice by the state update) merges
too: the dense schedule keeps the lowering's ``keep_tanh_arg`` stage, the cut of nested
``Let`` s without which LLVM took 195 s to compile the merged step
(:func:`backends.tvm.sched.dense.inline_into_consumers`); with it, about 5 s.
"""

from __future__ import annotations

from typing import Any

from passes.fuse_ops import is_primitive
from semantics import ops as _ops
from semantics.expr import (
    Attrs,
    Call,
    Constant,
    Expr,
    Function,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from semantics.module import IRModule
from semantics.ops.registry import OpPattern
from semantics.rewrite import substitute
from semantics.shapes import is_concrete
from semantics.types import TensorType, TupleType
from semantics.visitor import ExprMutator, post_order

__all__ = ["fuse_cells"]

_INJECTIVE = int(OpPattern.INJECTIVE)
_ANCHORS = frozenset({"nn.dense"})


def fuse_cells(p: Any) -> Any:
    """Merge each dense-anchored kernel with the elementwise kernels that read it (module
    docstring) in every function of ``p``.

    Args:
        p: a fused ``IRModule`` (after :func:`passes.fuse_ops`) or a fused expression.
    Returns:
        The same kind, with the merged groups; ``p`` itself when nothing merges.
    """
    if isinstance(p, IRModule):
        out = {name: _Cells().mutate(fn) for name, fn in p.functions.items()}
        if all(out[n] is p.functions[n] for n in out):
            return p
        return p.with_functions(out)  # type: ignore[arg-type]
    return _Cells().mutate(p)


# --- classification ------------------------------------------------------------------------------

def _kernel_call(e: Expr) -> bool:
    return type(e) is Call and is_primitive(e.op)


def _op_names(fn: Function) -> list[str]:
    return [n.op.name for n in post_order(fn.body)
            if type(n) is Call and type(n.op) is Op]


def _has_anchor(fn: Any) -> bool:
    return sum(name in _ANCHORS for name in _op_names(fn)) == 1


def _is_cell(fn: Any) -> bool:
    names = _op_names(fn)
    if not names:
        return False
    for name in names:
        try:
            if int(_ops.get(name).pattern) > _INJECTIVE:
                return False
        except Exception:  # noqa: BLE001 - an unknown operator is not elementwise
            return False
    return True


def _pure_dataflow(e: Expr) -> bool:
    """Nothing in ``e`` may fail, write or diverge: kernel calls, tuples, projections."""
    for node in post_order(e, descend=lambda n: not is_primitive(n)):
        t = type(node)
        if t is Call:
            if not (is_primitive(node.op) or type(node.op) is Op):  # type: ignore[attr-defined]
                return False
        elif t not in (Var, Constant, Tuple, TupleGetItem, Op, Function):
            return False
        elif t is Function and not is_primitive(node):
            return False
    return True


# --- the rewrite ----------------------------------------------------------------------------------

class _Cells(ExprMutator):
    """Rewrites every ``let`` chain (at its head) after its values were rewritten."""

    def mutate(self, root: Expr, memo: dict[int, Expr] | None = None) -> Expr:
        self.heads = _chain_heads(root)
        return super().mutate(root, memo)

    def descend(self, node: Expr) -> bool:
        return not is_primitive(node)

    def visit_call(self, new: Call, old: Call) -> Expr:
        if not _kernel_call(new):
            return new
        assert isinstance(new.op, Function)
        fn, args = _without_dynamic_takes(new.op, list(new.args))
        if fn is new.op:
            return new
        return Call(fn, tuple(args), span=new.span, checked_type=old.checked_type)

    def visit_let(self, new: Let, old: Let) -> Expr:
        if id(old) not in self.heads:
            return new
        return _rewrite_chain(new)


def _chain_heads(root: Expr) -> set[int]:
    inner: set[int] = set()
    lets: list[Let] = []
    for node in post_order(root, descend=lambda n: not is_primitive(n)):
        if type(node) is Let:
            lets.append(node)
            if type(node.body) is Let:
                inner.add(id(node.body))
    return {id(x) for x in lets if id(x) not in inner}


class _Chain:
    """A flattened ``let`` chain: its bindings, body, and where each node is first used."""

    def __init__(self, head: Let):
        self.lets: list[Let] = []
        e: Expr = head
        while type(e) is Let:
            self.lets.append(e)
            e = e.body
        self.body = e
        roots = [x.value for x in self.lets] + [self.body]
        self.where: dict[int, int] = {}     # id(node) -> first binding index (body: len)
        self.parents: dict[int, list[Expr]] = {}
        seen: set[int] = set()
        for i, r in enumerate(roots):
            for node in post_order(r, descend=lambda n: not is_primitive(n)):
                self.where.setdefault(id(node), i)
                if id(node) in seen:
                    continue
                seen.add(id(node))
                if is_primitive(node):
                    continue
                for kid in children(node):
                    self.parents.setdefault(id(kid), []).append(node)
        self.pos_of_var = {id(x.var): i for i, x in enumerate(self.lets)}
        self.value_at = {id(x.value): i for i, x in enumerate(self.lets)}

    def users(self, node: Expr) -> list[Expr]:
        """The nodes reading ``node``'s value: its parents, and the readers of the variable
        it is bound to (not the binding ``let`` itself)."""
        out = [p for p in self.parents.get(id(node), []) if type(p) is not Let]
        i = self.value_at.get(id(node))
        if i is not None:
            out.extend(self.parents.get(id(self.lets[i].var), []))
        return out


def _rewrite_chain(head: Let) -> Expr:
    chain = _Chain(head)
    done: set[int] = set()
    merged = False
    for b in chain.lets:
        for anchor in _anchors_in(b.value):
            if id(anchor) in done:
                continue
            done.add(id(anchor))
            plan = _plan(chain, anchor)
            applied = _apply(chain, plan) if plan is not None else None
            if applied is not None:
                chain = applied
                merged = True
                break
        if merged:
            break
    if not merged:
        return head
    rebuilt = _rebuild(chain.lets, chain.body)
    assert isinstance(rebuilt, Let)
    return _rewrite_chain(rebuilt)   # the next group, if any


def _leaf_kernel_call(chain: _Chain, e: Expr) -> bool:
    """``e`` is a kernel call of variables and constants read by one node only: it can be
    evaluated as an argument of the merged call (the TreeLSTM's ``dense(hsum, U)``)."""
    return _kernel_call(e) and len(chain.parents.get(id(e), [])) == 1 and all(
        type(a) in (Var, Constant) for a in e.args)  # type: ignore[attr-defined]


def _anchors_in(value: Expr) -> list[Expr]:
    """Anchor kernel calls in a binding's value: the value itself or its kernel arguments."""
    if not _kernel_call(value):
        return []
    cands = [value] + [a for a in value.args if _kernel_call(a)]  # type: ignore[attr-defined]
    return [c for c in cands if _has_anchor(c.op)]  # type: ignore[attr-defined]


class _Plan:
    """A group to merge: its members in evaluation order, its outputs, where it goes."""

    def __init__(self, members: list[Call], outputs: list[Call], last: int):
        self.members, self.outputs, self.last = members, outputs, last


def _plan(chain: _Chain, anchor: Expr) -> _Plan | None:
    cells = chain.users(anchor)
    if not cells or not all(_kernel_call(c) and _is_cell(c.op) for c in cells):  # type: ignore[attr-defined]
        return None
    cells = list({id(c): c for c in cells}.values())
    if any(id(c) not in chain.value_at for c in cells):
        return None                      # a cell nested in another expression
    member_ids = {id(anchor)} | {id(c) for c in cells}
    bound = {id(chain.lets[chain.value_at[id(m)]].var)
             for m in [anchor, *cells] if id(m) in chain.value_at}
    first = chain.where[id(anchor)]
    last = max(chain.value_at[id(c)] for c in cells)
    for m in [anchor, *cells]:
        for a in m.args:  # type: ignore[attr-defined]
            if id(a) in member_ids or id(a) in bound or type(a) in (Var, Constant) \
                    or _leaf_kernel_call(chain, a):
                continue
            return None
    for j in range(first, last + 1):
        v = chain.lets[j].value
        if id(v) not in member_ids and not _pure_dataflow(v):
            return None
    if id(anchor) not in chain.value_at and any(
            chain.where[id(p)] < chain.where[id(anchor)] for p in chain.users(anchor)):
        return None
    outputs: list[Call] = []
    for c in sorted(cells, key=lambda c: chain.value_at[id(c)]):
        outside = [u for u in chain.users(c) if id(u) not in member_ids]
        if not outside:
            continue
        if any(chain.where[id(u)] <= last for u in outside):
            return None                  # read before the merged call would run
        outputs.append(c)  # type: ignore[arg-type]
    if not outputs:
        return None
    members = [anchor] + sorted(cells, key=lambda c: chain.value_at[id(c)])
    return _Plan(members, outputs, last)  # type: ignore[arg-type]


def _apply(chain: _Chain, plan: _Plan) -> _Chain | None:
    """The chain with the plan's members replaced by one call of the merged function."""
    call = _merged_call(chain, plan)
    if call is None:
        return None
    cell = Var("cell", call.checked_type if call.checked_type is not None else None)
    removed = {chain.value_at[id(m)] for m in plan.members if id(m) in chain.value_at}
    lets: list[Let] = []
    for i, b in enumerate(chain.lets):
        if i == plan.last and len(plan.outputs) == 1:
            ob = chain.lets[chain.value_at[id(plan.outputs[0])]]
            lets.append(Let(ob.var, call, b.body, span=ob.span))
        elif i == plan.last:
            lets.append(Let(cell, call, b.body, span=b.span))
            for k, out in enumerate(plan.outputs):
                ob = chain.lets[chain.value_at[id(out)]]
                lets.append(Let(ob.var, TupleGetItem(cell, k, span=out.span), b.body,
                                span=ob.span))
        elif i not in removed:
            lets.append(b)
    new = _Chain.__new__(_Chain)
    new.lets, new.body = lets, chain.body
    return new


def _merged_call(chain: _Chain, plan: _Plan) -> Call | None:
    """``(fn (params) Primitive=1 { outputs })(arguments...)`` for the plan (the outputs as a
    tuple when there are several); None when a parameter or result is not static (the
    group would be compiled per shape: the input projection of a whole sequence)."""
    member_ids = {id(m) for m in plan.members}
    var_to_member = {id(chain.lets[chain.value_at[id(m)]].var): m
                     for m in plan.members if id(m) in chain.value_at}
    parts = [(m, *_without_dynamic_takes(m.op, list(m.args)))  # type: ignore[arg-type]
             for m in plan.members]
    externals: dict[int, Expr] = {}
    declared: dict[int, Any] = {}      # the type of the member's parameter it is passed to
    for _, fn, args in parts:
        for p, a in zip(fn.params, args):
            if id(a) not in member_ids and id(a) not in var_to_member and type(a) is not Constant:
                externals.setdefault(id(a), a)
                declared.setdefault(id(a), p.type_annotation or _type_of(a))
    params = {k: Var(f"p{j}", declared[k]) for j, k in enumerate(externals)}
    built: dict[int, Expr] = {}
    for m, fn, args in parts:
        mapping: dict[Var, Expr] = {}
        for p, a in zip(fn.params, args):
            src = var_to_member.get(id(a), a)
            if id(src) in built:
                mapping[p] = built[id(src)]
            elif type(a) is Constant:
                mapping[p] = a
            else:
                mapping[p] = params[id(a)]
        built[id(m)] = substitute(fn.body, mapping)
    types = [o.op.ret_type for o in plan.outputs]  # type: ignore[attr-defined]
    if len(plan.outputs) == 1:
        body, rtype = built[id(plan.outputs[0])], types[0]
    else:
        body = Tuple(tuple(built[id(o)] for o in plan.outputs))
        rtype = TupleType(tuple(types))
    if not all(_static(p.type_annotation) for p in params.values()) or not all(
            _static_tensors(t) for t in types):
        return None
    prim = Function(tuple(params[k] for k in externals), body, rtype, (),
                    Attrs({"Primitive": 1}), span=plan.members[0].span)
    return Call(prim, tuple(externals.values()), span=plan.members[-1].span,
                checked_type=rtype)


def _type_of(e: Expr) -> Any:
    if type(e) is Var and e.type_annotation is not None:
        return e.type_annotation
    if _kernel_call(e):
        return e.op.ret_type  # type: ignore[attr-defined]
    return e.checked_type


def _static(t: Any) -> bool:
    return isinstance(t, TensorType) and all(is_concrete(d) for d in t.shape)


def _static_tensors(t: Any) -> bool:
    """A static tensor type or a (nested) tuple type of them."""
    if isinstance(t, TupleType):
        return all(_static_tensors(f) for f in t.fields)
    return _static(t)


def _without_dynamic_takes(fn: Function, args: list[Expr]) -> tuple[Function, list[Expr]]:
    """``fn`` and its arguments with each dynamic-shape parameter that ``fn`` reads only as
    ``take(p, i, axis=0)`` (a static row) taken out (module docstring): the take becomes a
    kernel call of its own, passed in as a new static parameter."""
    params = list(fn.params)
    body = fn.body
    changed = False
    for j, p in enumerate(fn.params):
        if _static(p.type_annotation):
            continue
        uses = [n for n in post_order(body) if type(n) is Call and any(a is p for a in n.args)]
        if not uses or not all(_row_take(n, p, params) for n in uses) \
                or any(n is body for n in uses):   # the group is the take itself
            continue
        replace: dict[int, Var] = {}
        for n in uses:
            idx = n.args[1]
            idx_arg = args[params.index(idx)] if type(idx) is Var else idx
            itype = idx.type_annotation if type(idx) is Var else idx.checked_type
            q0, q1 = Var("p0", p.type_annotation), Var("p1", itype)
            take = Function((q0, q1), Call(n.op, (q0, q1), n.attrs, span=n.span),
                            n.checked_type, (), Attrs({"Primitive": 1}), span=n.span)
            fresh = Var(f"row{len(params)}", n.checked_type)
            replace[id(n)] = fresh
            params.append(fresh)
            args.append(Call(take, (args[j], idx_arg), span=n.span,
                             checked_type=n.checked_type))
        body = _Replace(replace).mutate(body)
        changed = True
    if not changed:
        return fn, args
    used = {id(x) for x in post_order(body) if type(x) is Var}
    keep = [k for k, q in enumerate(params) if id(q) in used]
    new = Function(tuple(params[k] for k in keep), body, fn.ret_type, (), fn.attrs,
                   span=fn.span)
    return new, [args[k] for k in keep]


def _row_take(n: Call, p: Var, params: list[Var]) -> bool:
    """``n`` is ``take(p, i, axis=0)`` with a scalar integer ``i`` (a parameter or constant)
    and a static result."""
    if type(n.op) is not Op or n.op.name != "take" or len(n.args) != 2 or n.args[0] is not p:
        return False
    axis = n.attrs.get("axis")
    if n.args[1] is p or type(axis) is not int or axis != 0 or not _static(n.checked_type):
        return False
    idx = n.args[1]
    t = idx.checked_type if type(idx) is not Var else idx.type_annotation
    return (type(idx) is Constant or any(idx is q for q in params)) \
        and isinstance(t, TensorType) and t.shape == () and t.dtype.startswith(("int", "uint"))


class _Replace(ExprMutator):
    def __init__(self, table: dict[int, Var]):
        self.table = table

    def visit_call(self, new: Call, old: Call) -> Expr:
        return self.table.get(id(old), new)


def _rebuild(lets: list[Let], body: Expr) -> Expr:
    out = body
    for b in reversed(lets):
        out = Let(b.var, b.value, out, span=b.span)
    return out
