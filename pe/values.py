"""Partially static values, the residual scopes they live in, and the simulated store.

The paper's appendix (Fig. 14) gives the value domain of the partial evaluator:
a *partially static value* pairs an optional **static part** (what is known at
partial-evaluation time) with a **dynamic residual** — an atom of the residual
program that denotes the same value at run time. This module holds that
domain, generalized to the whole of Relay:

======================  =====================================  ==========================
static part             what is known                          residual atom
======================  =====================================  ==========================
:class:`STensor`        the tensor                             the ``Constant``
:class:`STuple`         each field (partially static)          ``let %t = (a1, ..., an)``
:class:`SCtor`          the constructor and its fields         ``let %c = C(a1, ..., an)``
:class:`SClosure`       the function, its environment          ``let %f = fn (...) {...}``
:class:`SGlobal`        which global                           ``@g``
:class:`SOp`            which operator                         the ``Op``
:class:`SCtorFn`        which constructor (as a function)      the ``Constructor``
:class:`SRef`           which simulated cell                   ``let %r = ref(a)``
(none: dynamic)         nothing                                a residual variable
======================  =====================================  ==========================

Residual atoms are produced **lazily** (:meth:`pe.evaluator.PartialEvaluator.force`):
a static tuple, ADT value or closure gets its residual binding only when the
residual program needs it (it escapes into dynamic code), bound in the
:class:`Frame` where the value was created. Such bindings are pure (a tuple,
a constructor application, a function literal), so placing them at the end of
an enclosing frame's let-list — before the construct under evaluation — keeps
every effect in place.

**Frames** are the residual scopes: one let-list each (TVM's ``LetList``,
:class:`semantics.rewrite.LetList`), linked to the lexically enclosing frame.
A new frame opens for each arm of a dynamic ``if``/``match``, for the body of
a residualized function and for the body of a specialization. Invariant: a
static value created in frame ``F`` is only reachable while ``F`` is open —
results leaving a frame are forced to atoms, stores merged after a dynamic
branch keep only entries older than the branch, and a residual function body
starts with an empty store — so forcing always binds into an open frame.

**The store** (:class:`Store`) simulates Δ flow-sensitively: it maps
simulated cells (:class:`RefCell`) to the partially static value they hold
along the current path. A cell *escapes* when its residual atom reaches code
the partial evaluator does not see (an argument of a dynamic call, a field of
a residual tuple, a variable of a residual function body, ...); unknown code
may write escaped cells, so :meth:`Store.invalidate_escaped` forgets them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from semantics.expr import Constructor, Expr, Function, Op, Var
from semantics.rewrite import LetList
from semantics.types import Type, TypeVar

__all__ = [
    "Env", "Frame", "PValue", "RefCell", "SClosure", "SCtor", "SCtorFn", "SGlobal", "SOp",
    "SRef", "STensor", "STuple", "Static", "Store",
]


class Static:
    """Base of the static parts of partially static values."""

    __slots__ = ()


class STensor(Static):
    """A tensor known at partial-evaluation time (a read-only ndarray of a Relay dtype)."""

    __slots__ = ("data",)

    def __init__(self, data: np.ndarray):
        self.data = data


class STuple(Static):
    """A tuple whose fields are partially static values."""

    __slots__ = ("fields",)

    def __init__(self, fields: tuple[PValue, ...]):
        self.fields = fields


class SCtor(Static):
    """An ADT value ``C(v1, ..., vn)`` with partially static fields.

    ``ty`` is its type when known (it annotates the residual binding: a constructor
    that does not mention every type parameter of its ADT leaves them to the context).
    """

    __slots__ = ("ctor", "fields", "ty")

    def __init__(self, ctor: Constructor, fields: tuple[PValue, ...], ty: Type | None = None):
        self.ctor = ctor
        self.fields = fields
        self.ty = ty


class SClosure(Static):
    """A closure ``⟨fn, Γ⟩`` over the partial evaluator's environment (``self_var``: let-rec)."""

    __slots__ = ("fn", "env", "self_var")

    def __init__(self, fn: Function, env: Env, self_var: Var | None):
        self.fn = fn
        self.env = env
        self.self_var = self_var


class SGlobal(Static):
    """The global function ``@name`` as a value."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class SOp(Static):
    """An operator used as a value."""

    __slots__ = ("op",)

    def __init__(self, op: Op):
        self.op = op


class SCtorFn(Static):
    """A constructor with fields used as a function value."""

    __slots__ = ("ctor",)

    def __init__(self, ctor: Constructor):
        self.ctor = ctor


class RefCell:
    """A simulated store location.

    Invariants: ``ctx`` is the residual function context (see
    :class:`Frame`) in which the cell was allocated; ``escaped`` becomes True
    (and stays True) once the cell's residual atom may be used by code the
    partial evaluator does not follow, from then on unknown code may write it.
    """

    __slots__ = ("ctx", "escaped")

    def __init__(self, ctx: int):
        self.ctx = ctx
        self.escaped = False


class SRef(Static):
    """A reference to a simulated cell (the residual program allocates the real one)."""

    __slots__ = ("cell",)

    def __init__(self, cell: RefCell):
        self.cell = cell


class PValue:
    """A partially static value: an optional static part and a (possibly lazy) residual atom.

    Invariants: ``atom`` is None only while ``static`` is a tuple, ADT value or
    closure whose residual has not been needed yet; then ``frame`` is the frame
    the value was created in (where the residual binding goes). Dynamic values
    (``static is None``) always have their atom. Compared and hashed by identity.
    """

    __slots__ = ("static", "atom", "frame")

    def __init__(self, static: Static | None, atom: Expr | None, frame: Frame | None = None):
        self.static = static
        self.atom = atom
        self.frame = frame

    @property
    def is_dynamic(self) -> bool:
        return self.static is None


class Env:
    """The partial evaluator's environment: variables (by identity) to partially static values.

    A frame dict linked to its parent, extended in place when the variable is
    not visible yet (the interpreter's :class:`interpreter.env.Env` argument:
    in a well-scoped program no lookup that lexically means another binding
    can see the addition) and with a child frame otherwise. ``memo`` holds the
    results of graph-shared nodes of the current activation (see
    :class:`pe.evaluator.PartialEvaluator`); ``tsub`` maps the type parameters of
    the polymorphic functions unfolded around this point to their instances (so
    annotations of residual binders can be instantiated).
    """

    __slots__ = ("vars", "parent", "memo", "tsub")

    def __init__(self, vars: dict[Var, PValue] | None = None, parent: Env | None = None,
                 memo: dict[int, tuple[PValue, Frame]] | None = None,
                 tsub: dict[TypeVar, Type] | None = None):
        self.vars = {} if vars is None else vars
        self.parent = parent
        self.memo = {} if memo is None else memo
        inherited: dict[TypeVar, Type] = parent.tsub if parent is not None else {}
        self.tsub: dict[TypeVar, Type] = tsub if tsub is not None else inherited

    def lookup(self, var: Var) -> PValue | None:
        frame: Env | None = self
        while frame is not None:
            found = frame.vars.get(var)
            if found is not None:
                return found
            frame = frame.parent
        return None

    def extend(self, var: Var, value: PValue) -> Env:
        """Γ[var ↦ value] (in place unless ``var`` is already visible)."""
        if self.lookup(var) is not None:
            return Env({var: value}, self, self.memo, self.tsub)
        self.vars[var] = value
        return self

    def activation(self, bindings: dict[Var, PValue],
                   tsub: dict[TypeVar, Type] | None = None) -> Env:
        """A new activation (a function body unfolded or residualized) inside this environment.

        ``tsub`` instantiates the type parameters of a polymorphic function being unfolded
        (added to the enclosing instantiation).
        """
        return Env(bindings, self, {}, {**self.tsub, **tsub} if tsub else None)


class Frame:
    """A residual scope: a let-list and the specializations bound in it.

    The last binding is held back until the next one arrives, so that
    :meth:`build` can turn ``let %x = e; %x`` into ``e``: a call in tail position
    of the source stays a tail call in the residual program (a residual loop runs
    in constant stack, as the oracle runs the source).

    Attributes:
        ll: the bindings pushed so far (outermost first), except the held-back last one.
        parent: the lexically enclosing frame (None at the top of a global).
        ctx: the residual function context: a number shared by the frames of one
            residual function body (the arms of a dynamic branch keep their
            parent's context; a residualized function or specialization gets a
            new one).
        specs: specializations bound in this frame: key -> the residual function variable.
        closed: True once the frame's expression has been built (nothing may be added).
    """

    __slots__ = ("ll", "last", "parent", "ctx", "specs", "closed")

    def __init__(self, parent: Frame | None, ctx: int):
        self.ll = LetList()
        self.last: tuple[Var, Expr] | None = None
        self.parent = parent
        self.ctx = ctx
        self.specs: dict[Any, Var] = {}
        self.closed = False

    def bind(self, var: Var, value: Expr) -> Var:
        """Append ``let var = value`` (the frame must be open); return ``var``."""
        if self.last is not None:
            self.ll.bind(*self.last)
        self.last = (var, value)
        return var

    def build(self, result: Expr) -> Expr:
        """Close the frame: its bindings around ``result`` (``let %x = e; %x`` is ``e``
        unless ``%x`` is annotated: the annotation may be what fixes ``e``'s type)."""
        self.closed = True
        last = self.last
        if last is not None:
            self.last = None
            var, value = last
            if var is result and type(value) is not Function and var.type_annotation is None:
                return self.ll.get(value)
            self.ll.bind(var, value)
        return self.ll.get(result)

    def find_spec(self, key: Any) -> Var | None:
        frame: Frame | None = self
        while frame is not None:
            found = frame.specs.get(key)
            if found is not None:
                return found
            frame = frame.parent
        return None


class Store:
    """The simulated store along the current path: cells to the values they hold.

    A missing cell means "unknown" (the residual program reads it at run time).
    """

    __slots__ = ("cells",)

    def __init__(self, cells: dict[RefCell, PValue] | None = None):
        self.cells = {} if cells is None else cells

    def copy(self) -> Store:
        return Store(dict(self.cells))

    def read(self, cell: RefCell) -> PValue | None:
        return self.cells.get(cell)

    def write(self, cell: RefCell, value: PValue) -> None:
        self.cells[cell] = value

    def forget(self, cell: RefCell) -> None:
        self.cells.pop(cell, None)

    def invalidate_escaped(self) -> None:
        """Forget every escaped cell: unknown code ran and may have written them."""
        for cell in [c for c in self.cells if c.escaped]:
            del self.cells[cell]

    @staticmethod
    def merge(before: Store, after: list[Store]) -> Store:
        """The store after a dynamic branch: what held before and still holds on every arm.

        An entry survives when every arm ends with the very value it had before the
        branch (values created inside an arm live in that arm's frame and never survive).
        """
        kept = {}
        for cell, value in before.cells.items():
            if all(s.cells.get(cell) is value for s in after):
                kept[cell] = value
        return Store(kept)
