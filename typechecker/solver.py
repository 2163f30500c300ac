"""The relation solver: a queue of constraints and a dependency graph (paper §3.3.3).

Constraints:

* :class:`RelationConstraint` ``R(T1, ..., Tn) ↦ O`` — an operator's type
  relation (or one of the checker's own: projection, gradient), instantiated
  at a call site with the argument types ``Ti`` and the output ``O``;
* :class:`DimConstraint` ``d1 = d2`` — a dimension equation the unifier could
  not solve yet because it has dimension holes inside larger expressions.

The **dependency graph** is bipartite between *blockers* (unbound type
variables and dimension holes of the :class:`~typechecker.unify.TypeStore`)
and constraints: a constraint is registered under each blocker it waits on.
When the store binds a variable or a hole it calls :meth:`Solver._refined`,
which moves exactly the constraints depending on it to the *front* of the
queue. A relation runs when its inputs are known: operator relations want
them fully known (no variable or hole anywhere — the paper's case 1), the
checker's structural relations only their outermost constructor.
Running a relation calls its function and unifies the result with the
output; that may bind more variables and wake more constraints, until the
queue is empty (a fixpoint).

Constraints are tried as soon as they are added, so the common case — a
dataflow graph whose inputs are annotated — never touches the queue: the
relation is evaluated at once and its (hash-consed) result used directly.
This interleaving is equivalent to generating all constraints first and
solving afterwards, because solving is monotone (unification only refines).

**Stalls.** When the queue is empty but constraints remain, :meth:`settle`
tries what the protocol allows with partial knowledge: it calls pending
relations with the arguments as far as they are known (a relation returns
``None`` when that is not enough) and, for dimension holes local to the
definition being generalized, evaluates relations treating the hole as a
symbolic dimension. If nothing moves, the remaining constraints are either
left for an enclosing scope (generalization keeps their variables
monomorphic) or, at the end of inference, reported as ``underconstrained``.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from typing import Any

from semantics.errors import InternalError, RelayTypeError
from semantics.rules import Rule
from semantics.shapes import Dim
from semantics.span import Span
from semantics.type_visitor import TypeMutator
from semantics.types import IncompleteType, TensorType, TupleType, Type
from typechecker import messages
from typechecker.unify import Blocker, Mismatch, TypeStore

RelationFn = Callable[[tuple[Type, ...], Any, Any], "Type | None"]


class Constraint:
    """Base: ``done`` once discharged; ``order`` is creation order (deterministic errors)."""

    __slots__ = ("done", "order", "span", "rule", "level")

    def __init__(self, order: int, span: Span | None, rule: Rule):
        self.done = False
        self.level = 0
        self.order = order
        self.span = span
        self.rule = rule


class RelationConstraint(Constraint):
    """``relation(inputs) ↦ output``; ``label`` names the call site (e.g. the operator)."""

    __slots__ = ("relation", "inputs", "output", "attrs", "label", "deep", "internal")

    def __init__(self, order: int, relation: Any, inputs: tuple[Type, ...], output: Type,
                 attrs: Any, span: Span | None, rule: Rule, label: str, deep: bool,
                 internal: bool):
        super().__init__(order, span, rule)
        self.relation = relation
        self.inputs = inputs
        self.output = output
        self.attrs = attrs
        self.label = label
        self.deep = deep
        self.internal = internal


class DimConstraint(Constraint):
    """A deferred dimension equation ``a = b`` arising while unifying ``expected``/``found``."""

    __slots__ = ("a", "b", "what", "expected", "found")

    def __init__(self, order: int, a: Dim, b: Dim, ctx: Any):
        rule, what, span, expected, found = ctx
        super().__init__(order, span, rule)
        self.a = a
        self.b = b
        self.what = what
        self.expected = expected
        self.found = found


class Solver:
    """Runs constraints to a fixpoint over a :class:`TypeStore`."""

    def __init__(self, store: TypeStore):
        self.store = store
        store.on_refine = self._refined
        store.on_defer = self._defer_dim
        self.queue: deque[Constraint] = deque()
        self.deps: dict[Blocker, list[Constraint]] = {}
        self.pending: dict[Constraint, None] = {}
        self.by_level: dict[int, list[Constraint]] = {}
        self._order = itertools.count()
        self.relations_run = 0

    # --- adding constraints -------------------------------------------------------------------
    def relate(self, relation: Any, inputs: tuple[Type, ...], attrs: Any, *, rule: Rule,
               span: Span | None, label: str, deep: bool = True, internal: bool = False,
               output: Type | None = None) -> Type:
        """Constrain ``relation(inputs)`` and return its result type (a variable if not yet known).

        When the inputs are already known the relation runs immediately and
        its result is returned (unified with ``output`` when one is given).
        """
        store = self.store
        if all(store.is_ground_fast(t) for t in inputs):
            c = RelationConstraint(next(self._order), relation, inputs, output,  # type: ignore
                                   attrs, span, rule, label, deep, internal)
            result = self._call(c, inputs)
            if result is None:
                raise self._undetermined(c, inputs)
            if output is not None:
                store.unify(output, result, rule, f"result of {label}", span)
                self.solve()
            return result
        out = output if output is not None else store.fresh()
        c = RelationConstraint(next(self._order), relation, inputs, out, attrs, span, rule,
                               label, deep, internal)
        self._file(c)
        self._attempt(c)
        self.solve()
        return out

    def _file(self, c: Constraint) -> None:
        """A new pending constraint, filed under the current let level (for generalization)."""
        self.pending[c] = None
        c.level = self.store.current_level
        bucket = self.by_level.get(c.level)
        if bucket is None:
            self.by_level[c.level] = [c]
        else:
            bucket.append(c)

    def _defer_dim(self, a: Dim, b: Dim, ctx: Any) -> None:
        c = DimConstraint(next(self._order), a, b, ctx)
        self._file(c)
        self.queue.append(c)

    def _refined(self, key: Blocker) -> None:
        waiting = self.deps.pop(key, None)
        if waiting:
            for c in reversed(waiting):
                if not c.done:
                    self.queue.appendleft(c)

    # --- solving ------------------------------------------------------------------------------
    def solve(self) -> None:
        """Run queued constraints until the queue is empty."""
        queue = self.queue
        while queue:
            c = queue.popleft()
            if not c.done:
                self._attempt(c)

    def _attempt(self, c: Constraint) -> bool:
        """Run ``c`` if its inputs are known; otherwise register it under its blockers."""
        if type(c) is RelationConstraint:
            blockers = self._relation_blockers(c)
            if blockers:
                self._wait(c, blockers)
                return False
            inputs = tuple(self.store.resolve(t) for t in c.inputs)
            result = self._call(c, inputs)
            if result is None:
                raise self._undetermined(c, inputs)
            self._discharge(c, result)
            return True
        assert isinstance(c, DimConstraint)
        holes = self.store.unbound_holes(c.a) + self.store.unbound_holes(c.b)
        if not holes:
            return self._try_dim(c, final=True)
        if self._try_dim(c):
            return True
        self._wait(c, holes)
        return False

    def _try_dim(self, c: DimConstraint, final: bool = False) -> bool:
        """Unify the two dims again; False if the equation is still blocked on holes."""
        store = self.store
        saved = store.on_defer
        blocked = []
        store.on_defer = lambda a, b, ctx: blocked.append((a, b))
        try:
            store.unify_dim(c.a, c.b, (c.rule, c.what, c.span, c.expected, c.found))
        except Mismatch as m:
            raise store.mismatch_error(c.rule, c.what, c.span, c.expected, c.found,
                                       m.detail) from None
        finally:
            store.on_defer = saved
        if blocked and not final:
            return False
        c.done = True
        self.pending.pop(c, None)
        return True

    def _relation_blockers(self, c: RelationConstraint) -> list[Blocker]:
        store = self.store
        out: list[Blocker] = []
        for t in c.inputs:
            if not store.is_ground_fast(t):
                out.extend(store.blockers(t, deep=c.deep))
        return out

    def _wait(self, c: Constraint, blockers: list[Blocker]) -> None:
        deps = self.deps
        for b in blockers:
            lst = deps.get(b)
            if lst is None:
                deps[b] = [c]
            elif lst[-1] is not c:
                lst.append(c)

    def _discharge(self, c: RelationConstraint, result: Type) -> None:
        c.done = True
        self.pending.pop(c, None)
        self.store.unify(c.output, result, c.rule, f"result of {c.label}", c.span)

    def _call(self, c: RelationConstraint, inputs: tuple[Type, ...]) -> Type | None:
        """Evaluate the relation function; user-facing failures become RelayTypeErrors."""
        # [Type-Relation]  Rel(T1, ..., Tn; attrs) = O   ⟹   ⊨ Rel(T1, ..., Tn; attrs) ↦ O
        self.relations_run += 1
        try:
            result = c.relation(inputs, c.attrs, self.store.dims)
        except RelayTypeError as err:
            raise self._relation_error(c, inputs, err) from None
        except Exception as exc:  # noqa: BLE001 - a broken relation is an internal error
            raise InternalError(
                f"relation {getattr(c.relation, 'name', c.relation)} crashed on "
                f"{self._show_all(inputs)}: {type(exc).__name__}: {exc}") from exc
        if result is None:
            return None
        if not isinstance(result, Type):
            raise InternalError(f"relation {getattr(c.relation, 'name', c.relation)} returned "
                                f"{result!r}, not a type")
        return self._canonical(result)

    def _canonical(self, t: Type) -> Type:
        """Hash-cons ground tensors of a relation's result; mark tuples of ground fields ground."""
        tt = type(t)
        if tt is not TensorType and tt is not TupleType:
            return t
        return _Canonical(self.store).mutate(t)

    def _show_all(self, types: tuple[Type, ...]) -> str:
        """Argument types for a message (dimension unknowns shown as shape variables)."""
        return "(" + ", ".join(messages.show(self.store.for_display(t)) for t in types) + ")"

    def _relation_error(self, c: RelationConstraint, inputs: tuple[Type, ...],
                        err: RelayTypeError) -> RelayTypeError:
        msg = err.message
        if c.internal:
            pass
        elif msg.startswith("relation ") or msg.startswith("bad attribute"):
            msg = messages.with_rule(msg, f"{c.rule}: {c.label}")
        else:
            name = getattr(c.relation, "name", str(c.relation))
            msg = messages.relation_failed(name, self._show_all(inputs), msg, c.rule, c.label)
        return RelayTypeError(msg, err.span or c.span, code=err.code or c.rule)

    def _undetermined(self, c: RelationConstraint, inputs: tuple[Type, ...]) -> RelayTypeError:
        name = getattr(c.relation, "name", str(c.relation))
        return RelayTypeError(
            messages.relation_failed(name, self._show_all(inputs),
                                     "these argument types do not determine a result",
                                     c.rule, c.label), c.span, code=c.rule)

    # --- stalls -------------------------------------------------------------------------------
    def settle(self, local_level: int) -> None:
        """Make what progress partial knowledge allows (see the module docstring)."""
        self.solve()
        while self.pending:
            if not self._partial_round(local_level):
                return
            self.solve()

    def _partial_round(self, local_level: int) -> bool:
        store = self.store
        for c in list(self.pending):
            if c.done:
                continue
            if type(c) is RelationConstraint:
                blockers = self._relation_blockers(c)
                if not blockers:
                    self._attempt(c)
                    return True
                holes = [b for b in blockers if type(b) is not IncompleteType]
                if any(store.hole_level.get(h, 0) <= local_level for h in holes):
                    continue
                inputs = tuple(store.resolve(t) for t in c.inputs)
                result = self._call(c, inputs)
                if result is not None:
                    self._discharge(c, result)
                    return True
            else:
                assert isinstance(c, DimConstraint)
                holes = store.unbound_holes(c.a) + store.unbound_holes(c.b)
                if all(store.hole_level.get(h, 0) > local_level for h in holes) and \
                        store.dims.equal(store.resolve_dim(c.a), store.resolve_dim(c.b)) is True:
                    c.done = True
                    self.pending.pop(c, None)
                    return True
        return False

    def pending_blockers(self, level: int) -> set[Any]:
        """Variables and holes of unsolved constraints that may be deeper than ``level``.

        Generalization at ``level`` must keep these monomorphic. Only constraints
        filed deeper than ``level`` can mention such variables (binding lowers levels,
        never raises them); each is then re-filed at ``level`` with all its variables
        and holes lowered to it — it now belongs to the enclosing scope — so a chain of
        generalizations looks at every constraint a bounded number of times (no scan of
        the whole set of pending constraints per binding).
        """
        store = self.store
        out: set[Any] = set()
        deeper = [lv for lv in self.by_level if lv > level]
        if not deeper:
            return out
        moved: list[Constraint] = []
        for lv in deeper:
            for c in self.by_level.pop(lv):
                if c.done or c.level != lv:
                    continue
                found: list[Any] = []
                if type(c) is RelationConstraint:
                    for t in (*c.inputs, c.output):
                        found.extend(store.blockers(t, deep=True))
                else:
                    assert isinstance(c, DimConstraint)
                    found.extend(store.unbound_holes(c.a))
                    found.extend(store.unbound_holes(c.b))
                for b in found:
                    if type(b) is IncompleteType:
                        if store.level.get(b, 0) > level:
                            store.level[b] = level
                    elif store.hole_level.get(b, 0) > level:
                        store.hole_level[b] = level
                out.update(found)
                c.level = level
                moved.append(c)
        if moved:
            self.by_level.setdefault(level, []).extend(moved)
        return out

    def fail_if_pending(self) -> None:
        """At the end of inference: report the first unsolved constraint as underconstrained."""
        for c in sorted((c for c in self.pending if not c.done), key=lambda c: c.order):
            store = self.store
            if type(c) is RelationConstraint:
                name = getattr(c.relation, "name", str(c.relation))
                inputs = self._show_all(c.inputs)
                what = (f"cannot infer the argument types of {c.label}: relation {name} "
                        f"is unsolved for {inputs}")
            else:
                assert isinstance(c, DimConstraint)
                names = " and ".join(store.hole_names(c.a, c.b)) or "its unknowns"
                what = (f"cannot solve the dimension equation {store.show_dim(c.a)}"
                        f" == {store.show_dim(c.b)}: it does not determine {names}")
            raise RelayTypeError(messages.underconstrained(c.rule, what), c.span, code=c.rule)


class _Canonical(TypeMutator):
    """The walk of :meth:`Solver._canonical` (iterative: a result can be a deep tuple)."""

    def __init__(self, store: TypeStore):
        super().__init__()
        self.store = store

    def enter(self, t: Type) -> Type | None:
        tt = type(t)
        if tt is TensorType:
            store = self.store
            shape = t.shape  # type: ignore[attr-defined]
            if all(type(d) is int for d in shape) or not any(
                    store.dim_has_holes(d) for d in shape):
                return store.tensor(tuple(shape), t.dtype)  # type: ignore[attr-defined]
            return t
        if tt is not TupleType:
            return t
        return None

    def leave(self, old: Type, new: Type) -> Type:
        fields = new.fields  # type: ignore[attr-defined]
        if all(self.store.is_ground_fast(f) for f in fields):
            if new is old:
                new = TupleType(fields)
            return self.store.mark_ground(new)
        return new
