"""Crossing between Python and the interpreter (docs/architecture.md#api, ``evaluate``).

* :func:`convert_arguments` turns the Python arguments of ``evaluate`` into
  runtime values (:mod:`interpreter.values`) and validates them against the
  parameters' declared types: numpy arrays must have exactly the declared
  dtype and rank and agree with every concrete dimension; a symbolic dimension
  (``n``) is bound by the first argument that fixes it and must agree
  everywhere else (two ``Tensor[(n), float32]`` parameters given lengths 3 and
  4 is an error); ``?`` accepts any length. Python scalars (and, as the
  ``relay run`` command line passes them, nested lists) become arrays of the
  declared dtype; a list or tuple is a tuple where a tuple type is declared;
  :class:`~interpreter.values.ConstructorValue` s (or ``{"Cons": [...]}``
  dictionaries) are resolved by constructor name against the program and their
  fields converted to the constructor's field types. A parameter without a
  declared type takes Python scalars at the default dtypes (int32, float32,
  bool). A :class:`~interpreter.values.RefValue` is the caller's cell: its
  contents are converted and checked against ``Ref[T]``'s ``T`` like any
  argument and stored back into the same cell (so the caller sees the
  program's writes; a cell passed twice must be passed at one type). Every
  mismatch is a ``RelayRuntimeError`` naming the parameter: a value that
  contains itself (a cyclic list, dict or ``ConstructorValue``; cycles
  through a ``RefValue`` are values, as in Relay), a number that overflows the
  dtype (``1e40`` for float32, ``2**70`` for int32), a dimension equation the
  solver cannot invert (``Tensor[(n % 3)]`` with ``n`` bound nowhere else).

Deep values (a 10,000-element list) are converted with
:func:`semantics.visitor.run_recursive` and explicit stacks: no Python
recursion over values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import sympy

from interpreter.values import (
    Closure,
    ConstructorFunction,
    ConstructorValue,
    OpValue,
    RefValue,
    value_str,
)
from semantics import errors
from semantics.dtypes import SCALAR_DTYPES, is_bool, is_float, is_int, split_lanes
from semantics.errors import RelayRuntimeError
from semantics.expr import Constructor, Var
from semantics.module import IRModule
from semantics.ops.memory import StorageValue, is_storage_type
from semantics.shapes import ANY
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)
from semantics.visitor import run_recursive

__all__ = ["convert_arguments", "convert_value"]

_RELAY_DTYPES = frozenset(SCALAR_DTYPES)
_NUMPY_DTYPES = {name: np.dtype(name) for name in SCALAR_DTYPES}
_FUNCTION_VALUES = (Closure, OpValue, ConstructorFunction)


# --- arguments --------------------------------------------------------------------------------

def convert_arguments(params: Sequence[Var], args: Sequence[Any], mod: IRModule, where: str,
                      param_types: Sequence[Type | None] | None = None) -> list[Any]:
    """The runtime values of ``args`` for a function with parameters ``params``.

    Args:
        params: the function's parameters (their ``type_annotation`` is the declared type).
        args: the Python arguments.
        mod: the program (its constructors and ADT definitions resolve ADT arguments).
        where: the function's name for messages (``"@main"``).
        param_types: types to use instead of the annotations (e.g. inferred ones); an entry
            None falls back to the parameter's annotation.
    Returns:
        One value per parameter.
    Raises:
        RelayRuntimeError: wrong number of arguments, or an argument that does not fit its
            parameter's type (the message names the parameter).
    """
    if len(args) != len(params):
        raise RelayRuntimeError(
            errors.wrong_arity(where, len(params), len(args)))
    conv = _Converter(mod)
    values = []
    for i, (param, arg) in enumerate(zip(params, args)):
        ty = param_types[i] if param_types is not None and i < len(param_types) else None
        if ty is None:
            ty = param.type_annotation
        try:
            values.append(conv.convert(arg, ty, "%" + param.name_hint))
        except RelayRuntimeError as err:
            raise err.with_span(param.span) from None
    try:
        conv.resolve_pending()
    except RelayRuntimeError as err:
        raise err.with_span(params[0].span if params else None) from None
    return values


def convert_value(x: Any, ty: Type | None, mod: IRModule, name: str = "value") -> Any:
    """One Python value as a runtime value of type ``ty`` (see :func:`convert_arguments`)."""
    conv = _Converter(mod)
    value = conv.convert(x, ty, name)
    conv.resolve_pending()
    return value


# TensorType -> (numpy dtype, shape) when its dtype is a Relay scalar dtype and every
# dimension is a constant, else () (identity-keyed; types are immutable).
_EXACT: dict[TensorType, tuple[Any, ...]] = {}


def _exact_layout(ty: TensorType) -> tuple[Any, ...]:
    dtype = _NUMPY_DTYPES.get(ty.dtype)
    shape = tuple(ty.shape)
    exact: tuple[Any, ...] = ()
    if dtype is not None and all(type(d) is int for d in shape):
        exact = (dtype, shape)
    if len(_EXACT) >= 4096:
        _EXACT.clear()
    _EXACT[ty] = exact
    return exact


class _Path:
    """Where in an argument a conversion is (rendered only for messages)."""

    __slots__ = ("parent", "step", "index")

    def __init__(self, parent: _Path | str, step: str, index: int | None = None):
        # ``step``, or ``step.index`` when an index is given (formatted only for messages).
        self.parent = parent
        self.step = step
        self.index = index

    def render(self) -> str:
        steps: list[str] = []
        node: _Path | str = self
        while isinstance(node, _Path):
            steps.append(node.step if node.index is None else f"{node.step}.{node.index}")
            node = node.parent
        steps.reverse()
        if len(steps) > 4:
            steps = ["…"] + steps[-3:]
        return f"argument {node}" + ("" if not steps else " (at " + " → ".join(steps) + ")")


def _render(path: _Path | str) -> str:
    return path.render() if isinstance(path, _Path) else f"argument {path}"


def _type_text(ty: Type) -> str:
    from semantics.printer import pretty

    return pretty(ty)


def _describe(x: Any) -> str:
    if isinstance(x, (np.ndarray, np.generic)):
        arr = np.asarray(x)
        return f"an array of shape {tuple(arr.shape)} and dtype {arr.dtype.name}"
    if isinstance(x, bool):
        return f"the Python bool {x}"
    if isinstance(x, (int, float)):
        return f"the Python {type(x).__name__} {x!r}"
    if isinstance(x, (tuple, list)):
        return f"a {type(x).__name__} of {len(x)} elements"
    if isinstance(x, (ConstructorValue, Closure, OpValue, ConstructorFunction, RefValue)):
        return value_str(x, limit=60)
    return f"a Python {type(x).__name__}"


class _Converter:
    """Converts one call's arguments; ``dims`` binds shape variables across all of them."""

    def __init__(self, mod: IRModule):
        self.mod = mod
        self.dims: dict[str, tuple[int, str]] = {}
        self.pending: list[tuple[sympy.Expr, int, _Path | str]] = []
        # ids of the containers on the path being converted (a repeat is a cycle), and the
        # type text of every reference cell met (converted once; one type per cell)
        self.active: set[int] = set()
        self.refs: dict[int, str] = {}

    def convert(self, x: Any, ty: Type | None, name: str) -> Any:
        return run_recursive(self._convert(x, ty, name))

    def fail(self, path: _Path | str, ty: Type | None, x: Any, why: str = "") -> RelayRuntimeError:
        expected = _type_text(ty) if ty is not None else "a value"
        tail = f" ({why})" if why else ""
        return RelayRuntimeError(f"{_render(path)}: expected {expected}, got {_describe(x)}{tail}")

    def enter(self, x: Any, path: _Path | str) -> None:
        """Mark container ``x`` as being converted; meeting it again inside is a cycle."""
        key = id(x)
        if key in self.active:
            raise RelayRuntimeError(
                f"{_render(path)}: the value contains itself ({_describe(x)} is one of its own "
                f"parts); Relay values are finite (a cycle must go through a reference)")
        self.active.add(key)

    def _ref(self, x: RefValue, content_ty: Type | None, ty_text: str, path: _Path | str):
        """Convert the contents of the cell ``x`` in place (once; cycles through it stop)."""
        seen = self.refs.get(id(x))
        if seen is not None:
            if seen != ty_text:
                raise RelayRuntimeError(
                    f"{_render(path)}: the same reference cell is passed as {seen} and as "
                    f"{ty_text}")
            return x
        self.refs[id(x)] = ty_text
        x.value = yield self._convert(x.value, content_ty, _Path(path, "ref contents"))
        return x

    def _convert(self, x: Any, ty: Type | None, path: _Path | str):
        if ty is None or isinstance(ty, (TypeVar, IncompleteType)):
            return (yield self._untyped(x, path))
        if isinstance(ty, TensorType):
            return self._tensor(x, ty, path)
        if isinstance(ty, TupleType):
            if not isinstance(x, (tuple, list)) or len(x) != len(ty.fields):
                raise self.fail(path, ty, x)
            self.enter(x, path)
            fields = []
            for i, (item, fty) in enumerate(zip(x, ty.fields)):
                fields.append((yield self._convert(item, fty, _Path(path, f".{i}"))))
            self.active.discard(id(x))
            return tuple(fields)
        if isinstance(ty, (TypeCall, GlobalTypeVar)):
            if is_storage_type(ty) and isinstance(x, StorageValue):
                return x
            plain = self._plain_adt(x, ty) if type(x) is ConstructorValue else None
            if plain is not None:
                return plain
            return (yield self._adt(x, ty, path))
        if isinstance(ty, FuncType):
            if isinstance(x, _FUNCTION_VALUES) or _is_nullary_constructor(x):
                return x
            raise self.fail(path, ty, x)
        if isinstance(ty, RefType):
            if isinstance(x, RefValue):
                return (yield self._ref(x, ty.value, _type_text(ty), path))
            raise self.fail(path, ty, x)
        raise self.fail(path, ty, x, "this parameter type cannot be given from Python")

    # -- tensors ---------------------------------------------------------------------------
    def _tensor(self, x: Any, ty: TensorType, path: _Path | str) -> np.ndarray:
        if type(x) is np.ndarray:
            # The common case: an array of exactly the declared dtype and concrete shape.
            exact = _EXACT.get(ty)
            if exact is None:
                exact = _exact_layout(ty)
            if exact and x.dtype is exact[0] and x.shape == exact[1]:
                return x
        dtype = ty.dtype
        base, lanes = split_lanes(dtype)
        if lanes != 1 or dtype not in _RELAY_DTYPES:
            raise RelayRuntimeError(
                f"{_render(path)}: tensors of dtype {dtype} cannot be evaluated")
        arr: np.ndarray | None
        if isinstance(x, (np.ndarray, np.generic)):
            arr = np.asarray(x)
            if arr.dtype != _NUMPY_DTYPES[dtype]:
                raise self.fail(path, ty, x, f"dtype {arr.dtype.name} is not {dtype}")
        elif isinstance(x, (bool, int, float)):
            arr = _scalar_array(x, dtype)
            if arr is None:
                why = _overflow(x, dtype) or f"not representable as {dtype}"
                raise self.fail(path, ty, x, why)
        elif isinstance(x, list):
            arr = _list_array(x, dtype)
            if arr is None:
                raise self.fail(path, ty, x, _list_problem(x, dtype))
        else:
            raise self.fail(path, ty, x)
        if arr.ndim != len(ty.shape):
            raise self.fail(path, ty, x, f"rank {arr.ndim}, expected rank {len(ty.shape)}")
        for axis, (want, have) in enumerate(zip(ty.shape, arr.shape)):
            self._dim(want, int(have), axis, path, ty, x)
        return arr

    def _dim(self, want: Any, have: int, axis: int, path: _Path | str, ty: Type, x: Any) -> None:
        if want is ANY:
            return
        if isinstance(want, int):
            if want != have:
                raise self.fail(path, ty, x, f"dimension {axis} is {have}, expected {want}")
            return
        if isinstance(want, sympy.Symbol):
            bound = self.dims.get(want.name)
            if bound is None:
                self.dims[want.name] = (have, _render(path))
            elif bound[0] != have:
                raise self.fail(
                    path, ty, x, f"dimension {axis} is {have}, but {want.name} = {bound[0]} "
                    f"from {bound[1]}")
            return
        self.pending.append((want, have, path))

    def resolve_pending(self) -> None:
        """Check the compound symbolic dims (``2 * n``) once the simple ones are bound.

        An equation with one unknown binds it; one the solver cannot invert
        (``n % 3 = 2``) waits until the other equations have bound its variable, and is an
        error if none does.

        Raises:
            RelayRuntimeError: a dimension disagrees, has no solution, or cannot be solved.
        """
        progress = True
        stuck: dict[int, str] = {}   # pending index -> why the solver failed
        while self.pending and progress:
            progress = False
            rest: list[tuple[sympy.Expr, int, _Path | str]] = []
            for expr, have, path in self.pending:
                known = {s: self.dims[s.name][0] for s in expr.free_symbols if s.name in self.dims}
                unknown = [s for s in expr.free_symbols if s.name not in self.dims]
                if not unknown:
                    value = _integer(expr.subs(known))
                    if value != have:
                        shown = "" if value is None else f" = {value}"
                        raise RelayRuntimeError(
                            f"{_render(path)}: a dimension is {have}, expected "
                            f"{sympy.sstr(expr)}{shown}")
                    progress = True
                elif len(unknown) == 1:
                    solutions, why = _solve(expr.subs(known), have, unknown[0])
                    if solutions is None:
                        stuck[len(rest)] = why
                        rest.append((expr, have, path))
                        continue
                    if not solutions:
                        raise RelayRuntimeError(
                            f"{_render(path)}: no value of {unknown[0].name} makes "
                            f"{sympy.sstr(expr)} equal {have}")
                    self.dims[unknown[0].name] = (solutions[0], _render(path))
                    progress = True
                else:
                    rest.append((expr, have, path))
            self.pending = rest
            if not progress:
                for index, why in stuck.items():
                    expr, have, path = rest[index]
                    unknown = [s for s in expr.free_symbols if s.name not in self.dims]
                    if len(unknown) == 1:
                        raise RelayRuntimeError(
                            f"{_render(path)}: a dimension is {have}, expected "
                            f"{sympy.sstr(expr)}, and the equation {sympy.sstr(expr)} = {have} "
                            f"cannot be solved for {unknown[0].name} ({why}); give "
                            f"{unknown[0].name} directly as the dimension of another parameter")
            stuck = {}
        # Dims over two or more still-unknown variables cannot be decided from the shapes
        # alone; they are accepted (the operators check what they need).

    # -- ADTs ------------------------------------------------------------------------------
    def _plain_plan(self, t: Type, name: str) -> tuple[Constructor, list[Type]] | None:
        """For :meth:`_plain_adt`: the constructor ``name`` of the ADT ``t`` and its field
        types at ``t``, when every field is a tensor or an ADT (not a storage type)."""
        if type(t) is TypeCall:
            head, args = t.func, t.args
        elif type(t) is GlobalTypeVar:
            head, args = t, ()
        else:
            return None
        ctor = self.mod.constructors.get(name)
        td = self.mod.types.get(head.name)
        if ctor is None or td is None or ctor.belong_to.name != head.name \
                or is_storage_type(t):
            return None
        field_types = _layout(td, ctor, t, args)[1]
        if not all(type(f) is TensorType or (type(f) in (TypeCall, GlobalTypeVar)
                                              and not is_storage_type(f))
                   for f in field_types):
            return None
        return ctor, field_types

    def _plain_adt(self, x: ConstructorValue, ty: TypeCall | GlobalTypeVar) -> Any:
        """The common case without generators: ``x`` a tree of ConstructorValues of this
        program's ADTs at ``ty``, every tensor field an array of exactly the declared dtype
        and concrete shape, no node met twice. The same value :meth:`_adt` builds, else
        None (anything else — a dict, a Python scalar, a tuple field, a shared or cyclic
        node, a mismatch — is left to :meth:`_adt`, which also says what is wrong). A
        TreeLSTM's 30-node tree: 11 → 5.5 µs a node (``bench/vm_overhead.py``)."""
        plans: dict[tuple[int, str], Any] = {}   # (id(type), name) -> (ctor, field types)
        # Field types by structure: substituting a type argument makes new type objects (a
        # Tree's List[Tree[...]]), so the ADT field types of a plan are replaced by the first
        # object of the same structure, and the plans are found by identity.
        canon: dict[Any, Type] = {}
        order: list[tuple[ConstructorValue, Constructor]] = []
        seen: set[int] = set()
        stack: list[tuple[Any, Type]] = [(x, ty)]
        while stack:
            v, t = stack.pop()
            if type(v) is not ConstructorValue or id(v) in seen:
                return None
            seen.add(id(v))
            plan = plans.get((id(t), v.name))
            if plan is None:
                plan = self._plain_plan(t, v.name)
                if plan is None:
                    return None
                plan = plans[id(t), v.name] = (plan[0], [
                    f if type(f) is TensorType else canon.setdefault(_type_key(f), f)
                    for f in plan[1]])
            ctor, field_types = plan
            fields = v.fields
            if len(fields) != len(field_types):
                return None
            for item, fty in zip(fields, field_types):
                if type(fty) is TensorType:
                    exact = _EXACT.get(fty) or _exact_layout(fty)
                    if not exact or type(item) is not np.ndarray or item.dtype is not exact[0] \
                            or item.shape != exact[1]:
                        return None
                else:
                    stack.append((item, fty))
            order.append((v, ctor))
        # Children come after their parent in ``order``: build from the end.
        built: dict[int, ConstructorValue] = {}
        for v, ctor in reversed(order):
            fields = tuple([built.pop(id(f)) if type(f) is ConstructorValue else f
                            for f in v.fields])
            built[id(v)] = ConstructorValue(ctor.name, fields, ctor)
        return built[id(x)]

    def _adt(self, x: Any, ty: TypeCall | GlobalTypeVar, path: _Path | str):
        head = ty.func if isinstance(ty, TypeCall) else ty
        args = ty.args if isinstance(ty, TypeCall) else ()
        td = self.mod.types.get(head.name)
        if td is None:
            raise RelayRuntimeError(f"{_render(path)}: the program does not define ADT {head.name}")
        # A list is a chain of constructor values: walk the spine iteratively (fields that are
        # themselves of this ADT are continued in the loop, not by a nested generator).
        value = x
        built: list[tuple[Constructor, list[Any], int]] = []
        layouts: dict[str, tuple[Constructor, list[Type], int]] = {}
        constructors = self.mod.constructors
        spine_ids: list[int] = []
        while True:
            name, fields = _constructor_parts(value)
            if name is None:
                raise self.fail(path, ty, value)
            self.enter(value, path)
            spine_ids.append(id(value))
            layout = layouts.get(name)
            if layout is None:
                ctor = constructors.get(name)
                if ctor is None:
                    raise RelayRuntimeError(f"{_render(path)}: unknown constructor {name}")
                if ctor.belong_to.name != head.name:
                    raise self.fail(path, ty, value,
                                    f"{name} builds a {ctor.belong_to.name}, not a {head.name}")
                layout = layouts[name] = _layout(td, ctor, ty, args)
            ctor, field_types, spine = layout
            if len(fields) != len(field_types):
                raise self.fail(path, ty, value,
                                f"{name} takes {len(field_types)} fields, got {len(fields)}")
            converted: list[Any] = []
            for i, (item, field_ty) in enumerate(zip(fields, field_types)):
                if i == spine:
                    converted.append(None)
                elif type(item) is np.ndarray and type(field_ty) is TensorType:
                    exact = _EXACT.get(field_ty) or _exact_layout(field_ty)
                    if exact and item.dtype is exact[0] and item.shape == exact[1]:
                        converted.append(item)  # (what _tensor's first test accepts)
                    else:
                        converted.append(self._tensor(item, field_ty, _Path(path, name, i)))
                else:
                    converted.append(
                        (yield self._convert(item, field_ty, _Path(path, name, i))))
            built.append((ctor, converted, spine))
            if spine < 0:
                break
            value = fields[spine]
            path = _Path(path, name, spine)
        self.active.difference_update(spine_ids)
        result: Any = None
        for ctor, converted, spine in reversed(built):
            if spine >= 0:
                converted[spine] = result
            result = ConstructorValue(ctor.name, tuple(converted), ctor)
        return result

    # -- values without a declared type ------------------------------------------------------
    def _untyped(self, x: Any, path: _Path | str):
        if isinstance(x, np.ndarray):
            if x.dtype.name not in _RELAY_DTYPES:
                raise RelayRuntimeError(
                    f"{_render(path)}: arrays of dtype {x.dtype.name} are not Relay tensors")
            return x
        if isinstance(x, np.generic):
            return (yield self._untyped(np.asarray(x), path))
        if isinstance(x, bool):
            return np.array(x, dtype=np.bool_)
        if isinstance(x, int):
            arr = _scalar_array(x, "int32") if -2**31 <= x < 2**31 else _scalar_array(x, "int64")
            if arr is None:
                raise RelayRuntimeError(f"{_render(path)}: the integer {x} does not fit in int64")
            return arr
        if isinstance(x, float):
            return np.array(x, dtype=np.float32)
        if isinstance(x, tuple):
            self.enter(x, path)
            fields = []
            for i, item in enumerate(x):
                fields.append((yield self._untyped(item, _Path(path, f".{i}"))))
            self.active.discard(id(x))
            return tuple(fields)
        if isinstance(x, list):
            arr = _list_array(x, None)
            if arr is None:
                raise RelayRuntimeError(f"{_render(path)}: {_list_problem(x, None)}")
            return arr
        if isinstance(x, (ConstructorValue, dict)):
            name, parts = _constructor_parts(x)
            ctor = self.mod.constructors.get(name) if name is not None else None
            if ctor is None:
                raise RelayRuntimeError(f"{_render(path)}: unknown constructor {name}")
            if len(parts) != len(ctor.inputs):
                raise RelayRuntimeError(
                    f"{_render(path)}: {name} takes {len(ctor.inputs)} fields, got {len(parts)}")
            head = GlobalTypeVar(ctor.belong_to.name)
            td = self.mod.types.get(head.name)
            holes = tuple(IncompleteType() for _ in td.type_vars) if td is not None else ()
            return (yield self._adt(x, TypeCall(head, holes) if holes else head, path))
        if isinstance(x, RefValue):
            return (yield self._ref(x, None, "Ref[?]", path))
        if isinstance(x, _FUNCTION_VALUES):
            return x
        raise RelayRuntimeError(f"{_render(path)}: {_describe(x)} is not a Relay value")


# (ADT definition, constructor, the ADT type) -> the constructor's layout at that type; the
# keys are held (identity-hashed), so an entry is never confused with a later object.
_LAYOUTS: dict[tuple[Any, Constructor, Type], tuple[Constructor, list[Type], int]] = {}
_LAYOUTS_LIMIT = 4096


def _layout(td: Any, ctor: Constructor, ty: TypeCall | GlobalTypeVar, args: Sequence[Type]
            ) -> tuple[Constructor, list[Type], int]:
    """``(ctor, field types at ty, the index of the field of type ty or -1)``, cached per
    (definition, constructor, type): the field types are then the same objects every time, so
    nested values of the same type find their layouts cached too."""
    key = (td, ctor, ty)
    layout = _LAYOUTS.get(key)
    if layout is None:
        subst = {tv: a for tv, a in zip(td.type_vars, args)}
        field_types = [_substitute(fty, subst) for fty in ctor.inputs]
        spine = next((i for i, f in enumerate(field_types) if _same_adt(f, ty)), -1)
        if len(_LAYOUTS) >= _LAYOUTS_LIMIT:
            _LAYOUTS.clear()
        layout = _LAYOUTS[key] = (ctor, field_types, spine)
    return layout


def _integer(x: Any) -> int | None:
    """``x`` (a SymPy number) as an int, or None when it is not an integer."""
    try:
        return int(x) if bool(x.is_integer) else None
    except (TypeError, ValueError):
        return None


def _solve(lhs: sympy.Expr, have: int, symbol: sympy.Symbol) -> tuple[list[int] | None, str]:
    """The non-negative integer solutions of ``lhs = have`` for ``symbol`` (smallest first),
    or ``(None, why)`` when the solver cannot invert the equation."""
    try:
        raw = sympy.solve(sympy.Eq(lhs, have), symbol)
    except (NotImplementedError, TypeError, ValueError) as exc:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return None, f"the solver says: {why}"
    if not isinstance(raw, list) or any(not isinstance(r, sympy.Expr) for r in raw):
        return None, "the solver found no explicit solution"
    out: list[int] = []
    for r in raw:
        if r.free_symbols:
            return None, "the solution depends on other unknowns"
        value = _integer(r)
        if value is not None and value >= 0:
            out.append(value)
    return sorted(out), ""


def _overflow(x: Any, dtype: str) -> str:
    """Why the Python number ``x`` does not fit ``dtype`` when it is a range problem, else ""."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return ""
    if is_float(dtype) and isinstance(x, (int, float)) and np.isfinite(x):
        with np.errstate(over="ignore"):
            if not np.isfinite(np.array(x, dtype=np.float64).astype(np.dtype(dtype))):
                return (f"not representable as {dtype}: {x!r} overflows {dtype}, whose largest "
                        f"finite value is {np.finfo(dtype).max}")
    if is_int(dtype) and isinstance(x, int):
        info = np.iinfo(np.dtype(dtype))
        if not info.min <= x <= info.max:
            return (f"not representable as {dtype}: {x} is outside its range "
                    f"{info.min} .. {info.max}")
    return ""


def _list_problem(x: list, dtype: str | None) -> str:
    """Why the nested list ``x`` is not a tensor of ``dtype`` (default dtypes when None)."""
    cycle = _cycle_in(x)
    if cycle:
        return "the list contains itself; Relay values are finite"
    leaves: list[Any] = []
    lengths: dict[int, set[int]] = {}
    work: list[tuple[Any, int]] = [(x, 0)]
    while work:
        item, depth = work.pop()
        if isinstance(item, (list, tuple)):
            lengths.setdefault(depth, set()).add(len(item))
            work.extend((child, depth + 1) for child in item)
        else:
            leaves.append((item, depth))
    depths = {d for _, d in leaves}
    if len(depths) > 1 or any(len(n) > 1 for n in lengths.values()):
        what = dtype or "numbers"
        return f"not a rectangular list of {what} values (rows differ in length or depth)"
    for leaf, _ in leaves:
        if isinstance(leaf, (np.generic, np.ndarray)):
            continue
        if not isinstance(leaf, (bool, int, float)):
            return f"the element {_describe(leaf)} is not a number"
        if dtype is None:
            if isinstance(leaf, int) and not isinstance(leaf, bool) and \
                    not -2**63 <= leaf < 2**63:
                return f"{leaf} does not fit in int64"
            continue
        why = _overflow(leaf, dtype)
        if why:
            return why
        if is_bool(dtype) != isinstance(leaf, bool):
            return f"the element {leaf!r} is not a {dtype} value"
        if is_int(dtype) and isinstance(leaf, float) and not leaf.is_integer():
            return f"the element {leaf!r} is not an integer"
    return f"not a list of {dtype or 'numbers'} values" + (
        " (mixed bool and number elements)" if any(isinstance(v, bool) for v, _ in leaves)
        else "")


def _cycle_in(x: Any) -> bool:
    """True when the nested lists/tuples of ``x`` contain one of their own ancestors."""
    ancestors: set[int] = set()
    work: list[tuple[Any, bool]] = [(x, False)]
    while work:
        item, leaving = work.pop()
        if leaving:
            ancestors.discard(id(item))
            continue
        if not isinstance(item, (list, tuple)):
            continue
        if id(item) in ancestors:
            return True
        ancestors.add(id(item))
        work.append((item, True))
        work.extend((child, False) for child in item)
    return False


def _is_nullary_constructor(x: Any) -> bool:
    return isinstance(x, ConstructorValue) and x.constructor is not None \
        and not x.constructor.inputs and not x.fields


def _constructor_parts(x: Any) -> tuple[str | None, tuple[Any, ...]]:
    """``(name, fields)`` of a ConstructorValue or a one-key dict ``{"Cons": [h, t]}``."""
    if isinstance(x, ConstructorValue):
        return x.name, x.fields
    if isinstance(x, dict) and len(x) == 1:
        (name, fields), = x.items()
        if isinstance(name, str):
            if fields is None:
                return name, ()
            if isinstance(fields, (list, tuple)):
                return name, tuple(fields)
            return name, (fields,)
    return None, ()


def _type_key(t: Type) -> Any:
    """A hashable key equal for structurally equal ADT and tensor types (others: identity)."""
    if type(t) is GlobalTypeVar:
        return ("adt", t.name)
    if type(t) is TypeCall:
        return ("call", _type_key(t.func), tuple(_type_key(a) for a in t.args))
    if type(t) is TensorType:
        return ("tensor", t.dtype, tuple(t.shape))
    return ("id", id(t))


def _same_adt(a: Type, b: Type) -> bool:
    """True when ``a`` and ``b`` are the same ADT applied to the same argument objects."""
    if isinstance(a, GlobalTypeVar) and isinstance(b, GlobalTypeVar):
        return a.name == b.name
    if isinstance(a, TypeCall) and isinstance(b, TypeCall):
        return a.func.name == b.func.name and len(a.args) == len(b.args) \
            and all(x is y for x, y in zip(a.args, b.args))
    return False


def _substitute(t: Type, subst: dict[TypeVar, Type]) -> Type:
    """``t`` with type variables replaced (types are shallow: direct recursion is fine)."""
    if not subst:
        return t
    if isinstance(t, TypeVar):
        return subst.get(t, t)
    if isinstance(t, TypeCall):
        args = tuple(_substitute(a, subst) for a in t.args)
        if all(x is y for x, y in zip(args, t.args)):
            return t
        return TypeCall(t.func, args, span=t.span)
    if isinstance(t, TupleType):
        fields = tuple(_substitute(f, subst) for f in t.fields)
        if all(x is y for x, y in zip(fields, t.fields)):
            return t
        return TupleType(fields, span=t.span)
    if isinstance(t, FuncType):
        return FuncType(tuple(_substitute(a, subst) for a in t.arg_types),
                        _substitute(t.ret_type, subst), t.type_params, t.type_constraints,
                        span=t.span)
    if isinstance(t, RefType):
        return RefType(_substitute(t.value, subst), span=t.span)
    return t


def _scalar_array(x: bool | int | float, dtype: str) -> np.ndarray | None:
    """A 0-d array of ``dtype`` holding ``x`` exactly, or None if ``x`` does not fit."""
    if is_bool(dtype):
        return np.array(x, dtype=np.bool_) if isinstance(x, bool) else None
    if isinstance(x, bool):
        return None
    if is_int(dtype):
        if isinstance(x, float):
            if not x.is_integer():
                return None
            x = int(x)
        info = np.iinfo(np.dtype(dtype))
        if not info.min <= x <= info.max:
            return None
        return np.array(x, dtype=np.dtype(dtype))
    if is_float(dtype):
        if _overflow(x, dtype):
            return None
        return np.array(x, dtype=np.dtype(dtype))
    return None


def _list_array(x: list, dtype: str | None) -> np.ndarray | None:
    """A nested Python list as an array of ``dtype`` (default dtypes when None), or None."""
    try:
        raw = np.array(x)
    except (ValueError, TypeError, RecursionError):
        return None
    kind = raw.dtype.kind
    if dtype is None:
        if kind == "b":
            return raw
        if kind in "iu":
            fits = raw.size == 0 or (raw.min() >= -2**31 and raw.max() < 2**31)
            return raw.astype(np.int32 if fits else np.int64)
        if kind == "f":
            return raw.astype(np.float32)
        return None
    if kind == "b":
        return raw if is_bool(dtype) else None
    if kind in "iu":
        if is_int(dtype):
            info = np.iinfo(np.dtype(dtype))
            if raw.size and (raw.min() < info.min or raw.max() > info.max):
                return None
            return raw.astype(np.dtype(dtype))
        return raw.astype(np.dtype(dtype)) if is_float(dtype) else None
    if kind == "f":
        if is_float(dtype):
            with np.errstate(over="ignore"):
                out = raw.astype(np.dtype(dtype))
            if not np.array_equal(np.isfinite(out), np.isfinite(raw)):
                return None     # a finite element overflows the dtype (_list_problem says so)
            return out
        if is_int(dtype) and raw.size and bool(np.all(np.mod(raw, 1) == 0)):
            return _list_array(raw.astype(np.int64).tolist(), dtype)
        return None
    return None
