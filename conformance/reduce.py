"""A test-case reducer run after Hypothesis's shrinking (in the spirit of C-Reduce).

Hypothesis shrinks the *choices* that drew a program; what it returns can still carry
definitions and sub-expressions that play no part in the disagreement (an unused ADT, a
global nobody calls, the other components of ``main``'s result tuple). This reducer works
on the program itself: it proposes a smaller candidate, asks ``still_fails(module,
inputs)`` whether the disagreement survives (the candidate must type-check, the oracle
must accept it and the transform must still disagree in the same way: the caller decides
what "the same way" means), keeps it if so, and repeats until no candidate is kept or the
time budget is spent. It never makes a program larger (:func:`program_size`: nodes,
ADT definitions and input elements: a sub-expression replaced by a parameter must be larger
than the input it adds), so it terminates and its result is never bigger than what it was
given.

Candidates, cheapest and most productive first:

1. drop a global function other than ``main``, drop an ADT definition;
2. keep one component of the tuple ``main`` returns (the component that differs, first);
3. for every node of every function, outermost first: delete a ``let`` whose variable is
   unused, inline a ``let`` (substitute its value), replace a node by a child of the same
   type (an ``if`` by a branch, a call by an argument, a ``match`` by a clause), replace a
   tensor node by a constant filled with 0 or 1, replace a non-scalar constant by one
   filled with its first element, and replace a sub-expression without free variables
   by a new parameter of ``main`` whose input is the value the sub-expression had;
4. drop a parameter of ``main`` that is no longer used (and its input).

Every walk uses :mod:`semantics.visitor`'s explicit-stack traversals and
:class:`semantics.visitor.ExprMutator`, so programs of any depth reduce without Python
recursion.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from semantics.errors import RelayError
from semantics.expr import (
    Call,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Op,
    Tuple,
    Var,
)
from semantics.module import IRModule
from semantics.types import TensorType
from semantics.visitor import ExprMutator, pre_order

__all__ = ["reduce_program", "program_size", "StillFails"]

# ``still_fails(module, inputs)``: True when the disagreement survives on the candidate.
StillFails = Callable[[IRModule, tuple[Any, ...]], bool]

_LEAVES = (Var, GlobalVar, Op, Constructor, Constant)


class _Replace(ExprMutator):
    """Replace the node whose ``id`` is ``target`` by ``by`` (everywhere it is shared)."""

    def __init__(self, target: int, by: Expr) -> None:
        self.target = target
        self.by = by

    def visit_default(self, new: Expr, old: Expr) -> Expr:
        return self.by if id(old) == self.target else new


def _annotate(mod: IRModule) -> IRModule | None:
    from typechecker import infer

    try:
        out = infer(mod)
    except RelayError:
        return None
    except Exception:  # noqa: BLE001 - a checker crash on a candidate: not usable
        return None
    return out if isinstance(out, IRModule) else None


def _static_tensor(node: Expr) -> TensorType | None:
    t = node.checked_type
    if isinstance(t, TensorType) and all(isinstance(d, int) for d in t.shape):
        return t
    return None


def _filled(t: TensorType, value: Any) -> Constant:
    shape = tuple(d for d in t.shape if isinstance(d, int))
    return Constant(np.full(shape, value, dtype=t.dtype))


def _result_tuple(body: Expr) -> Tuple | None:
    """The tuple ``main`` returns, at the end of its ``let`` chain (if it returns one)."""
    node = body
    while isinstance(node, Let):
        node = node.body
    return node if isinstance(node, Tuple) and len(node.fields) > 1 else None


def _node_candidates(node: Expr) -> Iterator[Expr]:
    """Smaller expressions to try in place of ``node`` (same type, when the type checker
    agrees)."""
    from semantics.analysis import free_vars
    from semantics.rewrite import substitute

    t = node.checked_type
    if isinstance(node, Let):
        used = any(v is node.var for v in free_vars(node.body))
        if not used:
            yield node.body
        elif not isinstance(node.value, Function):
            yield substitute(node.body, {node.var: node.value})
    elif isinstance(node, If):
        yield node.true_branch
        yield node.false_branch
    elif isinstance(node, Match):
        for clause in node.clauses:
            yield clause.rhs
    if isinstance(node, Call | Tuple) and t is not None:
        kids = node.args if isinstance(node, Call) else node.fields
        for arg in kids:
            if arg.checked_type == t:
                yield arg
    tensor = _static_tensor(node)
    if tensor is not None:
        if isinstance(node, Constant):
            flat = node.data.reshape(-1)
            if flat.size > 1 and not _uniform(node.data):
                # Special values first: they are what most slips trip over.
                seen: list[Any] = []
                for v in sorted(flat.tolist(), key=_speciality):
                    if len(seen) < 6 and not any(_same_bits(v, w) for w in seen):
                        seen.append(v)
                for v in seen:
                    yield Constant(np.full(node.data.shape, v, dtype=node.data.dtype))
        else:
            yield _filled(tensor, 0)
            yield _filled(tensor, 1)


def _uniform(a: np.ndarray) -> bool:
    flat = a.reshape(-1)
    return flat.size <= 1 or bool(np.all(flat.view(np.uint8).reshape(flat.size, -1)
                                         == flat[:1].view(np.uint8)))


def _same_bits(a: Any, b: Any) -> bool:
    return bool(np.asarray(a).tobytes() == np.asarray(b).tobytes()) or \
        (isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b))


def _speciality(v: Any) -> int:
    if isinstance(v, float):
        if np.isnan(v) or np.isinf(v):
            return 0
        if v == 0:
            return 1 if np.signbit(v) else 2
    return 3


def program_size(mod: IRModule, inputs: Sequence[Any]) -> int:
    """The size a report gives a counterexample: the nodes of every function, eight per
    ADT definition, and the elements of the tensor inputs (an input is part of what a
    reader has to look at)."""
    nodes = sum(len(pre_order(fn)) for fn in mod.functions.values())
    elements = sum(int(np.asarray(v).size) for v in inputs
                   if isinstance(v, np.ndarray | np.generic))
    return nodes + 8 * len(mod.types) + elements


def _rank(mod: IRModule, inputs: Sequence[Any]) -> tuple[int, int, int]:
    """The reducer's order: :func:`program_size` first (never larger than what it was
    given), then fewer non-uniform constants, then fewer inputs."""
    varied = sum(1 for fn in mod.functions.values() for node in pre_order(fn)
                 if isinstance(node, Constant) and not _uniform(node.data))
    return program_size(mod, inputs), varied, len(inputs)


PROBE_FUEL = 2_000_000
"""Rule applications a probe of a sub-expression's value may take (the harness's oracle
budget; not imported from it: the harness imports this module)."""


def _value_of(mod: IRModule, inputs: Sequence[Any], node: Expr) -> Any:
    """The value a closed sub-expression of ``main`` has (``None`` if it cannot be run)."""
    import copy

    from interpreter.entry import evaluate

    main = mod["main"]
    probe = IRModule(dict(mod.functions) | {"main": Function(main.params, node)}, mod.types)
    try:
        value = evaluate(probe, *copy.deepcopy(tuple(inputs)), fuel=PROBE_FUEL)
    except RelayError:
        return None
    return value if isinstance(value, np.ndarray | np.generic) else None


def _with_main(mod: IRModule, main: Function) -> IRModule:
    return mod.with_function("main", main)


def reduce_program(module: IRModule, inputs: Sequence[Any], still_fails: StillFails, *,
                   deadline: float, focus: int | None = None
                   ) -> tuple[IRModule, tuple[Any, ...]]:
    """Reduce ``(module, inputs)`` while ``still_fails`` holds, until ``deadline``.

    Args:
        module: a program on which the transform disagrees with the oracle.
        inputs: the arguments of its ``main``.
        still_fails: the oracle of the reduction (see the module docstring).
        deadline: a ``time.monotonic()`` instant after which the smallest program found so
            far is returned.
        focus: the index of the component of ``main``'s result tuple that differs (tried
            first).
    Returns:
        The smallest ``(module, inputs)`` found (the arguments themselves if nothing was
        removed).
    """
    return _Reducer(module, tuple(inputs), still_fails, deadline, focus).run()


class _Reducer:
    def __init__(self, module: IRModule, inputs: tuple[Any, ...], still_fails: StillFails,
                 deadline: float, focus: int | None) -> None:
        self.best = (module, inputs)
        self.best_rank = _rank(module, inputs)
        self.still_fails = still_fails
        self.deadline = deadline
        self.focus = focus

    def out_of_time(self) -> bool:
        return time.monotonic() >= self.deadline

    def attempt(self, mod: IRModule, args: tuple[Any, ...]) -> bool:
        """Keep ``(mod, args)`` if it ranks lower (:func:`_rank`) and still fails."""
        if self.out_of_time():
            return False
        rank = _rank(mod, args)
        if rank >= self.best_rank:
            return False
        if self.still_fails(mod, args):
            self.best, self.best_rank = (mod, args), rank
            return True
        return False

    def run(self) -> tuple[IRModule, tuple[Any, ...]]:
        progress = True
        while progress and not self.out_of_time():
            progress = False
            for step in (self.drop_definitions, self.keep_one_result, self.reduce_nodes,
                         self.drop_params):
                if step():
                    progress = True
        return self.best

    def drop_definitions(self) -> bool:
        changed = False
        for name in sorted(self.best[0].functions):
            mod, args = self.best
            if name != "main" and name in mod.functions:
                funcs = {k: v for k, v in mod.functions.items() if k != name}
                changed |= self.attempt(IRModule(funcs, mod.types), args)
        for tname in sorted(self.best[0].types):
            mod, args = self.best
            types = {k: v for k, v in mod.types.items() if k != tname}
            changed |= self.attempt(IRModule(mod.functions, types), args)
        return changed

    def keep_one_result(self) -> bool:
        mod, args = self.best
        main = mod["main"]
        tup = _result_tuple(main.body)
        if tup is None:
            return False
        order = list(range(len(tup.fields)))
        if self.focus is not None and self.focus in order:
            order.remove(self.focus)
            order.insert(0, self.focus)
        for i in order:
            body = _Replace(id(tup), tup.fields[i]).mutate(main.body)
            cand = Function(main.params, body, None, main.type_params, main.attrs)
            if self.attempt(_with_main(mod, cand), args):
                self.focus = None
                return True
        return False

    def reduce_nodes(self) -> bool:
        """Try every node's candidates, outermost first; restart the walk after a success."""
        changed = False
        name_index = 0
        node_index = 0
        # The annotated program and its node list, recomputed only when a candidate was
        # kept (type inference of the whole module is the walk's dearest step).
        walked: tuple[IRModule, IRModule | None, int, list[Expr]] | None = None
        while not self.out_of_time():
            mod, args = self.best
            if walked is None or walked[0] is not mod or walked[2] != name_index:
                ann = walked[1] if walked is not None and walked[0] is mod else _annotate(mod)
                if ann is None:
                    return changed
                names = ["main"] + sorted(n for n in ann.functions if n != "main")
                if name_index >= len(names):
                    return changed
                fn = ann[names[name_index]]
                walked = (mod, ann, name_index,
                          [n for n in pre_order(fn.body) if not isinstance(n, _LEAVES)]
                          + [n for n in pre_order(fn.body) if isinstance(n, Constant)])
            ann, nodes = walked[1], walked[3]
            assert ann is not None
            if node_index >= len(nodes):
                name_index, node_index = name_index + 1, 0
                continue
            node = nodes[node_index]
            kept = False
            for by in _node_candidates(node):
                if self.try_replace(ann, names[name_index], node, by, args):
                    kept = True
                    break
            if not kept and names[name_index] == "main" and not isinstance(node, Constant):
                kept = self.try_parameter(ann, node, args)
            if kept:
                changed = True  # the walk goes on at the same index of the smaller program
            else:
                node_index += 1
        return changed

    def try_replace(self, ann: IRModule, name: str, node: Expr, by: Expr,
                    args: tuple[Any, ...]) -> bool:
        fn = ann[name]
        body = _Replace(id(node), by).mutate(fn.body)
        return self.attempt(ann.with_function(name, Function(fn.params, body, fn.ret_type,
                                                             fn.type_params, fn.attrs)), args)

    def try_parameter(self, ann: IRModule, node: Expr, args: tuple[Any, ...]) -> bool:
        """Replace a closed tensor sub-expression of ``main`` by a new parameter."""
        from semantics.analysis import free_vars

        tensor = _static_tensor(node)
        if tensor is None or isinstance(node, Let) or free_vars(node):
            return False
        main = ann["main"]
        value = _value_of(ann, args, node)
        if value is None:
            return False
        param = Var(f"p{len(main.params)}", tensor)
        body = _Replace(id(node), param).mutate(main.body)
        cand = Function((*main.params, param), body, main.ret_type, main.type_params,
                        main.attrs)
        return self.attempt(_with_main(ann, cand), (*args, np.asarray(value)))

    def drop_params(self) -> bool:
        from semantics.analysis import free_vars

        mod, args = self.best
        main = mod["main"]
        used = {id(v) for v in free_vars(main.body)}
        keep = [i for i, p in enumerate(main.params) if id(p) in used]
        if len(keep) == len(main.params) or len(args) != len(main.params):
            return False
        cand = Function(tuple(main.params[i] for i in keep), main.body, main.ret_type,
                        main.type_params, main.attrs)
        return self.attempt(_with_main(mod, cand), tuple(args[i] for i in keep))
