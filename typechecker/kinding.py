"""Kinding: which written types are well formed (RULES.md, "Kinding"; paper appendix Fig. 14).

``Δ ⊢ τ : k`` is checked for every type a program *writes*: parameter and
let annotations, return types, explicit type arguments, and the constructor
fields of ADT definitions. Inferred types are well kinded by construction.

:class:`Kinder` checks a type and returns its *internal* form, the form
inference works with: a bare ADT name ``U`` of an ADT without parameters
becomes the type call ``U[]`` (the two spellings denote the same type), and
numpy integers in shapes become Python ints. The type is returned unchanged
(the same object) when nothing needed rewriting.

Rules (one method branch each): Kind-BaseType (the dtype is a Relay base
type), Kind-Shape (every dim is a natural number, ``?`` or an integer
expression over shape variables), Kind-Tensor, Kind-Tuple, Kind-Function
(type parameters extend Δ; constraints are relations), Kind-Ref,
Kind-TypeVar (a type variable must be in scope), Kind-TypeCall (an ADT
applied to as many arguments as its definition has parameters), Kind-ADT
(definitions: parameters are distinct type variables, constructor fields
are well kinded under them and mention no shape variables, since nothing
would bind them), Kind-Relation.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import sympy

from semantics.dtypes import is_dtype
from semantics.errors import RelayTypeError
from semantics.expr import Call, Constructor, Function, Let, Match, PatternVar, Var
from semantics.ops.memory import STORAGE
from semantics.rules import Rule
from semantics.shapes import ANY, Dim, dim_str
from semantics.span import Span
from semantics.type_visitor import TypeMutator, TypeVisitor
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
    TypeRelation,
    TypeVar,
)
from semantics.visitor import ExprVisitor
from typechecker import messages


@dataclass(frozen=True)
class ConstructorInfo:
    """A constructor's typing data: ``C : fn[V...](fields) -> D[V...]`` (Type-ADT-Constructor)."""

    name: str
    adt: str
    type_vars: tuple[TypeVar, ...]
    fields: tuple[Type, ...]
    result: TypeCall
    scheme: FuncType
    tag: int


def _error(rule: Rule, what: str, span: Span | None) -> RelayTypeError:
    return RelayTypeError(messages.ill_kinded(rule, what), span, code=rule)


class Kinder:
    """Kinding against a module's ADT definitions.

    ``check(t, delta)`` implements ``Δ ⊢ t : Type`` where ``delta`` is the
    collection of type variables in scope; ``constructor(name)`` gives a
    constructor's (well-kinded) typing data.
    """

    def __init__(self, types: Mapping[str, TypeData],
                 fallback: Callable[[], Mapping[str, TypeData]] | None = None):
        self.types = types
        self.fallback = fallback
        self._checked_adts: set[str] = set()
        self._ctors: dict[str, ConstructorInfo] = {}

    def _load_fallback(self) -> bool:
        """Switch to the fallback definitions (the prelude's) on the first unknown name."""
        if self.fallback is None:
            return False
        types = self.fallback()
        self.fallback = None
        merged = dict(types)
        merged.update(self.types)
        self.types = merged
        return True

    # --- Kind-ADT -----------------------------------------------------------------------------
    def check_adts(self) -> None:
        """Check every ADT definition of the module (Kind-ADT)."""
        for name in self.types:
            self.check_adt(name)

    def check_adt(self, name: str) -> None:
        # [Kind-ADT]  V1..Vk distinct   ∀ C(T1..Tn) ∈ D: Δ, V1..Vk ⊢ Ti : Type   ⟹   ⊢ D : ADT
        if name in self._checked_adts:
            return
        td = self.types[name]
        span = td.span
        if not isinstance(td, TypeData) or not isinstance(td.header, GlobalTypeVar) \
                or td.header.name != name:
            raise _error(Rule.KIND_ADT, f"definition of {name} is malformed", span)
        vars_ = td.type_vars
        if not isinstance(vars_, tuple) or not all(isinstance(v, TypeVar) for v in vars_):
            raise _error(Rule.KIND_ADT, f"the parameters of {name} must be type variables", span)
        if len(set(map(id, vars_))) != len(vars_):
            raise _error(Rule.KIND_ADT, f"the parameters of {name} are not distinct", span)
        self._checked_adts.add(name)
        result = TypeCall(td.header, vars_)
        for tag, c in enumerate(td.constructors):
            if not isinstance(c, Constructor):
                raise _error(Rule.KIND_ADT, f"{name} has a malformed constructor", span)
            if not isinstance(c.belong_to, GlobalTypeVar) or c.belong_to.name != name:
                raise _error(Rule.KIND_ADT,
                             f"constructor {c.name} does not belong to {name}", c.span or span)
            if not isinstance(c.inputs, tuple):
                raise _error(Rule.KIND_ADT, f"constructor {c.name} has malformed fields", span)
            fields = tuple(self.check(t, vars_, c.span or span) for t in c.inputs)
            for f in fields:
                free = shape_vars_of(f)
                if free:
                    raise _error(Rule.KIND_ADT, f"constructor {c.name} of {name} mentions shape "
                                 f"variable {sorted(free)[0]}, which nothing binds", c.span or span)
            scheme = FuncType(fields, result, vars_)
            self._ctors[c.name] = ConstructorInfo(c.name, name, vars_, fields, result, scheme, tag)

    def constructor(self, name: str) -> ConstructorInfo | None:
        """Typing data of the constructor ``name`` (None when no ADT defines it)."""
        info = self._ctors.get(name)
        if info is not None:
            return info
        for adt, td in self.types.items():
            if isinstance(td, TypeData) and any(
                    isinstance(c, Constructor) and c.name == name for c in td.constructors):
                self.check_adt(adt)
                return self._ctors.get(name)
        if self._load_fallback():
            return self.constructor(name)
        return None

    def constructors_of(self, adt: str) -> list[ConstructorInfo]:
        """Every constructor of ADT ``adt`` in definition order (empty if unknown)."""
        td = self.types.get(adt)
        if td is None and self._load_fallback():
            td = self.types.get(adt)
        if td is None:
            return []
        self.check_adt(adt)
        return [self._ctors[c.name] for c in td.constructors]

    # --- Δ ⊢ τ : Type -------------------------------------------------------------------------
    def check(self, t: Type, delta: Collection[TypeVar], span: Span | None = None) -> Type:
        """Check ``Δ ⊢ t : Type`` and return ``t`` in internal form (RelayTypeError if not)."""
        return self._check(t, delta, span or getattr(t, "span", None))

    def _check(self, t: Type, delta: Collection[TypeVar], span: Span | None) -> Type:
        return _KindCheck(self, delta, span).mutate(t)

    def _tensor(self, t: TensorType, span: Span | None) -> Type:
        # [Kind-BaseType]  the dtype names a base type (intN, uintN, floatN, bool, with lanes)
        if not isinstance(t.dtype, str) or not is_dtype(t.dtype):
            raise _error(Rule.KIND_BASETYPE, f"{t.dtype!r} is not a base type", span)
        shape = t.shape
        if not isinstance(shape, tuple):
            raise _error(Rule.KIND_SHAPE, f"malformed shape {shape!r}", span)
        if all(type(d) is int and d >= 0 for d in shape):
            return t
        new = tuple(check_dim(d, span) for d in shape)
        if all(a is b for a, b in zip(new, shape, strict=False)):
            return t
        return TensorType(new, t.dtype, span=t.span)

    def _func(self, t: FuncType, span: Span | None) -> None:
        # [Kind-Function]  Δ' = Δ, V1..Vk   Δ' ⊢ Ti : Type   Δ' ⊢ O : Type   Δ' ⊢ Rj : Relation
        #                  ⟹   Δ ⊢ fn[V1..Vk](T1..Tn) -> O where R1..Rr : Type
        params = t.type_params
        if not isinstance(params, tuple) or not all(
                isinstance(p, TypeVar) and p.kind is Kind.Type for p in params):
            raise _error(Rule.KIND_FUNCTION, "type parameters must be type variables", span)
        if not isinstance(t.arg_types, tuple) or not isinstance(t.type_constraints, tuple):
            raise _error(Rule.KIND_FUNCTION, "malformed function type", span)
        for c in t.type_constraints:
            self._relation(c, span)

    def _relation(self, c: Type, span: Span | None) -> None:
        # [Kind-Relation]  Rel is a registered relation   ∀i. Δ ⊢ Ti : Type
        #                  ⟹   Δ ⊢ Rel(T1, ..., Tn) : Relation
        if not isinstance(c, TypeRelation) or not callable(c.relation):
            raise _error(Rule.KIND_RELATION, "a function type constraint must be a relation",
                         span)
        if not isinstance(c.args, tuple) or not c.args or not isinstance(c.num_inputs, int) \
                or not 0 <= c.num_inputs < len(c.args):
            raise _error(Rule.KIND_RELATION, "malformed relation arguments", span)

    def _type_call(self, func: GlobalTypeVar, args: tuple[Type, ...], span: Span | None) -> None:
        # [Kind-TypeCall]  Δ ⊢ D : ADT with k parameters   ∀i. Δ ⊢ Ti : Type
        #                  ⟹   Δ ⊢ D[T1, ..., Tk] : Type
        name = func.name
        td = self.types.get(name) if isinstance(name, str) else None
        if td is None and isinstance(name, str) and self._load_fallback():
            td = self.types.get(name)
        if td is None and name == STORAGE and not args:
            return  # the memory dialect's storage: the prelude's type, needed by no definition
        if td is None:
            raise _error(Rule.KIND_TYPECALL, f"undefined type {name}", span)
        self.check_adt(name)
        want = len(td.type_vars)
        if len(args) != want:
            noun = "type argument" if want == 1 else "type arguments"
            raise _error(Rule.KIND_TYPECALL,
                         f"{name} expects {want} {noun}, found {len(args)}", span)


class _KindCheck(TypeMutator):
    """``Δ ⊢ t : Type`` as one iterative walk: each node's rule is checked on entry, its
    sub-types (under the function type's parameters, which extend Δ) by the walk."""

    def __init__(self, kinder: Kinder, delta: Collection[TypeVar], span: Span | None):
        super().__init__()
        self.kinder = kinder
        self.delta = delta
        self.span = span
        self.constraints: set[int] = set()

        # the rule of each type kind, checked on entry (a table of typed cases)
        self._rules: dict[type, Callable[[Any], Type | None]] = {
            TensorType: self._rule_tensor, TupleType: self._rule_tuple,
            FuncType: self._rule_func, RefType: self._rule_ref, TypeVar: self._rule_type_var,
            GlobalTypeVar: self._rule_global_type_var, TypeCall: self._rule_type_call,
            IncompleteType: self._rule_incomplete, TypeRelation: self._rule_relation}

    def enter(self, t: Type) -> Type | None:
        rule = self._rules.get(type(t))
        if rule is None:
            raise _error(Rule.KIND_TENSOR, f"{type(t).__name__} is not a type", self.span)
        return rule(t)

    def _rule_tensor(self, t: TensorType) -> Type | None:
        # [Kind-Tensor]  Δ ⊢ bt : BaseType   Δ ⊢ s : Shape   ⟹   Δ ⊢ Tensor[s, bt] : Type
        return self.kinder._tensor(t, self.span)

    def _rule_tuple(self, t: TupleType) -> Type | None:
        # [Kind-Tuple]  ∀i. Δ ⊢ Ti : Type   ⟹   Δ ⊢ (T1, ..., Tn) : Type
        if not isinstance(t.fields, tuple):
            raise _error(Rule.KIND_TUPLE, "malformed tuple type", self.span)
        return None

    def _rule_func(self, t: FuncType) -> Type | None:
        self.kinder._func(t, self.span)
        self.constraints.update(id(c) for c in t.type_constraints)
        return None

    def _rule_ref(self, t: RefType) -> Type | None:
        # [Kind-Ref]  Δ ⊢ T : Type   ⟹   Δ ⊢ Ref[T] : Type
        return None

    def _rule_type_var(self, v: TypeVar) -> Type | None:
        # [Kind-TypeVar]  V : Type ∈ Δ   ⟹   Δ ⊢ V : Type
        if v.kind is not Kind.Type:
            raise _error(Rule.KIND_TYPEVAR, f"{v.name} has kind {v.kind.value}, not Type",
                         self.span)
        if not self.is_bound(v) and v not in self.delta:
            raise _error(Rule.KIND_TYPEVAR, f"type variable {v.name} is not in scope", self.span)
        return v

    def _rule_global_type_var(self, g: GlobalTypeVar) -> Type | None:
        # [Kind-TypeCall] with no arguments: a bare ADT name
        self.kinder._type_call(g, (), self.span)
        return TypeCall(g, (), span=g.span)

    def _rule_type_call(self, call: TypeCall) -> Type | None:
        if not isinstance(call.func, GlobalTypeVar):
            raise _error(Rule.KIND_TYPECALL, "only an ADT can be applied to types", self.span)
        if not isinstance(call.args, tuple):
            raise _error(Rule.KIND_TYPECALL, "malformed type arguments", self.span)
        self.kinder._type_call(call.func, call.args, self.span)
        return None

    def _rule_incomplete(self, t: IncompleteType) -> Type | None:
        return t

    def _rule_relation(self, t: TypeRelation) -> Type | None:
        if id(t) in self.constraints:
            return None
        raise _error(Rule.KIND_RELATION, "a relation is not a type", self.span)


def check_dim(d: object, span: Span | None) -> Dim:
    """Kind-Shape for one dim: a natural number, ``?``, or an integer expression (normalized)."""
    # [Kind-Shape]  ∀i. di ∈ ℕ, di = ?, or di an integer expression over shape variables
    #               ⟹   Δ ⊢ (d1, ..., dn) : Shape
    if d is ANY:
        return d
    if isinstance(d, bool):
        raise _error(Rule.KIND_SHAPE, f"{d!r} is not a dimension", span)
    if type(d) is int:
        if d < 0:
            raise _error(Rule.KIND_SHAPE, f"dimension {d} is negative", span)
        return d
    if hasattr(d, "__index__") and not isinstance(d, sympy.Basic):
        return check_dim(int(d.__index__()), span)
    if isinstance(d, sympy.Expr):
        if d.is_Integer:
            return check_dim(int(d), span)
        for s in d.free_symbols:
            if not (isinstance(s, sympy.Symbol) and s.is_integer and s.is_nonnegative):
                raise _error(Rule.KIND_SHAPE, f"{s} in dimension {dim_str(d)} is not a "
                             "shape variable (a non-negative integer symbol)", span)
        if d.is_integer is not True:
            raise _error(Rule.KIND_SHAPE, f"dimension {dim_str(d)} is not an integer", span)
        return d
    raise _error(Rule.KIND_SHAPE, f"{d!r} is not a dimension", span)


def shape_vars_of(t: Type) -> set[str]:
    """Names of the shape variables (not holes) occurring in ``t``."""
    walk = _ShapeVars()
    walk.visit(t)
    return walk.out


class _ShapeVars(TypeVisitor):
    """The walk of :func:`shape_vars_of`."""

    def __init__(self) -> None:
        super().__init__()
        self.out: set[str] = set()

    def enter(self, t: Type) -> bool:
        if type(t) is TensorType:
            for d in t.shape:
                if isinstance(d, sympy.Basic):
                    self.out.update(s.name for s in d.free_symbols
                                    if isinstance(s, sympy.Symbol)
                                    and not isinstance(s, sympy.Dummy))
            return False
        return True


def written_shape_names(root: Any) -> set[str]:
    """Names of the shape variables written in the annotations of the program ``root``."""
    walk = _WrittenShapeNames()
    walk.visit(root)
    return walk.out


class _WrittenShapeNames(ExprVisitor):
    """Collects the shape variables of the annotations of variables, function results and
    explicit type arguments (binders are not children: a let's variable, a function's
    parameters and pattern variables are read at their binding site)."""

    def __init__(self) -> None:
        self.out: set[str] = set()

    def add(self, t: Any) -> None:
        if isinstance(t, Type):
            self.out.update(shape_vars_of(t))

    def visit_var(self, node: Var) -> None:
        self.add(node.type_annotation)

    def visit_function(self, node: Function) -> None:
        self.add(node.ret_type)
        for p in node.params:
            self.add(getattr(p, "type_annotation", None))

    def visit_let(self, node: Let) -> None:
        self.add(getattr(node.var, "type_annotation", None))

    def visit_call(self, node: Call) -> None:
        for t in node.type_args if isinstance(node.type_args, tuple) else ():
            self.add(t)

    def visit_match(self, node: Match) -> None:
        for c in node.clauses:
            stack = [c.lhs]
            while stack:
                p = stack.pop()
                if type(p) is PatternVar:
                    self.add(getattr(p.var, "type_annotation", None))
                stack.extend(getattr(p, "patterns", ()) or ())
