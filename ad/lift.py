"""The machinery both AD modes share: preparing the input, lifting types and terms, closing.

An AD mode (:mod:`ad.reverse`, :mod:`ad.forward`) is a *lifting*: every floating-point tensor
value of the program is replaced by a pair carrying the extra information of the mode (a
reference to its adjoint in reverse mode, its tangent in forward mode), and every other type is
lifted structurally (``ADType`` of the paper's Fig. 4). This module holds what does not depend on
the mode:

* :func:`prepare` — the input pipeline: the program and the prelude definitions it uses, every
  nested ``grad(e)`` expanded first (innermost first, reverse mode: Semantics-Grad), then type
  inference, A-normal form and inference again, so every atom handed to a rule has its
  ``checked_type``;
* :class:`Lifter` — the term transformation over A-normal form (one case per construct, the mode
  supplies the tensor-specific cases), written as generator premises driven by
  :func:`semantics.visitor.run_recursive` (nested scopes are premises; a ``let`` spine is a loop,
  so 20,000-deep chains never reach Python's stack);
* :func:`lifted_globals` / :func:`close_globals` — the globals a program reaches are lifted one by
  one (``@g`` becomes ``@g__<mode>``); a closed result binds them as ``let``-bound functions
  inside it (mutually recursive ones nested, each inner copy fresh);
* :func:`let_bound_functions` — the function literals a program binds with ``let``, by variable
  identity (``grad(%f)`` of a ``let``-bound ``%f`` is resolved through it).

What is a *float* value: a tensor of a floating-point dtype. Integer and boolean tensors, ADT
tags and the unit value carry no derivative and are not lifted (``Tensor[(), bool]`` conditions
stay as they are).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Generator
from types import GeneratorType
from typing import Any, NamedTuple

from passes.defuse_ops import defuse_ops
from passes.to_anf import to_anf
from semantics.analysis import free_vars
from semantics.errors import InternalError, RelayTypeError
from semantics.expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Grad,
    If,
    Let,
    Match,
    Op,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from semantics.module import IRModule
from semantics.printer import pretty
from semantics.rewrite import LetList, fresh_copy, substitute
from semantics.type_visitor import TypeMutator
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeData,
)
from semantics.visitor import ExprMutator, kind_cases, post_order, run_recursive

Gen = Generator[Any, Any, Any]

ENTRY = "__ad_entry"

MAX_GRAD_NESTING = 32
"""How deeply ``grad`` nodes may nest (each level expands the next one first)."""
_DEPTH = 0


def is_float_type(t: Type | None) -> bool:
    """Whether ``t`` is a tensor type of a floating-point dtype (the values that carry
    derivatives)."""
    return isinstance(t, TensorType) and t.dtype.startswith(("float", "bfloat"))


def carries_float(t: Type | None) -> bool:
    """Whether a value of type ``t`` may contain a float tensor (so may carry a derivative)."""
    stack = [t]
    while stack:
        u = stack.pop()
        if u is None:
            continue
        if isinstance(u, TensorType):
            if is_float_type(u):
                return True
        elif isinstance(u, TupleType):
            stack.extend(u.fields)
        else:
            return True  # functions, references, ADTs, type variables: possibly
    return False


def project(e: Expr, path: tuple[int, ...]) -> Expr:
    """``e.i.j...`` for ``path = (i, j, ...)``."""
    for i in path:
        e = TupleGetItem(e, i)
    return e


def by_type(t: Type, leaf: Callable[[tuple[int, ...], Type], Expr],
            whole: Callable[[Type], bool] = lambda u: False) -> Expr:
    """An expression with the tuple structure of ``t``: a ``Tuple`` for each tuple type (unless
    ``whole(u)``), ``leaf(path, u)`` for every other part (``path``: the projections leading to
    it). Iterative (types nest as deeply as the user writes them)."""
    results: list[Expr] = []
    stack: list[tuple[tuple[int, ...], Type, bool]] = [((), t, False)]
    while stack:
        path, u, built = stack.pop()
        if built:
            assert isinstance(u, TupleType)
            n = len(u.fields)
            kids = tuple(results[len(results) - n:]) if n else ()
            if n:
                del results[len(results) - n:]
            results.append(Tuple(kids))
        elif isinstance(u, TupleType) and not whole(u):
            stack.append((path, u, True))
            stack.extend(((*path, i), ft, False) for i, ft in reversed(list(enumerate(u.fields))))
        else:
            results.append(leaf(path, u))
    return results[0]


def no_float(u: Type) -> bool:
    """``by_type``'s ``whole`` for structures rebuilt only where a float tensor is inside."""
    return not carries_float(u)


def non_tensor_part(t: Type) -> Type | None:
    """The first part of ``t`` that is neither a tuple nor a tensor type (None if there is
    none): what Type-Gradient rejects in a differentiated function's inputs and outputs."""
    stack = [t]
    while stack:
        u = stack.pop()
        if isinstance(u, TupleType):
            stack.extend(u.fields)
        elif not isinstance(u, TensorType):
            return u
    return None


def all_bool(t: Type | None) -> bool:
    """Whether every tensor in ``t`` (a tensor or tuple type) is boolean."""
    stack = [t]
    while stack:
        u = stack.pop()
        if isinstance(u, TupleType):
            stack.extend(u.fields)
        elif not (isinstance(u, TensorType) and u.dtype == "bool"):
            return False
    return True


class Lifted(NamedTuple):
    """A transformation's result: the gradient (or JVP) function, the lifted globals it refers
    to (empty when they are bound inside it) and the lifted copies of ADTs it uses."""

    function: Function
    globals: dict[str, Function]
    types: dict[str, TypeData]

    def module(self, mod: IRModule | None, entry: str = "main") -> IRModule:
        """``mod`` (or an empty module) with ``function`` as ``@entry``, the lifted globals and
        the lifted ADT copies added."""
        out = mod if mod is not None else IRModule()
        for td in self.types.values():
            out = out.with_type(td)
        for name, fn in self.globals.items():
            out = out.with_function(name, fn)
        return out.with_function(entry, self.function)


# --- lifting types ----------------------------------------------------------------------------

class TypeLifter(TypeMutator):
    """``ADType``: float tensors become the mode's pair, function types get the mode's extra
    parameters, everything else is lifted structurally (``List[T]`` to ``List[ADType(T)]``).

    Args:
        pair: the lifted type of a float tensor type.
        extra_params: parameters appended to every function type (reverse mode's
            backpropagator reference; none in forward mode).
        renames: ADTs that are lifted to a *copy* of their definition (those with a float
            field that is not a type parameter, see :func:`adts_needing_copies`), by name, to
            the copy's name.
    """

    def __init__(self, pair: Callable[[TensorType], Type], extra_params: tuple[Type, ...],
                 renames: dict[str, GlobalTypeVar]):
        super().__init__()
        self._pair = pair
        self._extra = extra_params
        self.renames = renames

    def leave(self, old: Type, new: Type) -> Type:
        if isinstance(new, TensorType):
            return self._pair(new) if is_float_type(new) else new
        if isinstance(new, FuncType):
            return FuncType((*new.arg_types, *self._extra), new.ret_type, new.type_params,
                            new.type_constraints, span=new.span)
        if isinstance(new, TypeCall) and new.func.name in self.renames:
            return TypeCall(self.renames[new.func.name], new.args, span=new.span)
        if isinstance(new, GlobalTypeVar) and new.name in self.renames:
            return self.renames[new.name]
        return new


def adts_needing_copies(mod: IRModule) -> list[str]:
    """ADTs of ``mod`` that hold a float tensor in a field whose type is not a type parameter
    (directly or through another such ADT), in definition order.

    A polymorphic ADT whose fields are type parameters lifts at the lifted type arguments
    (``List[Tensor]`` is ``List[(Tensor, Ref[Tensor])]``, same constructors); these need a
    lifted copy of their definition (``Box`` becomes ``Box__rev`` with constructor
    ``B__rev``), which :class:`Lifter` builds.
    """
    direct: dict[str, set[str]] = {}
    needs: set[str] = set()
    for name, td in mod.types.items():
        refs: set[str] = set()
        for ctor in td.constructors:
            stack: list[Type] = list(ctor.inputs)
            while stack:
                u = stack.pop()
                if is_float_type(u):
                    needs.add(name)
                elif isinstance(u, TypeCall):
                    refs.add(u.func.name)
                    stack.extend(u.args)
                elif isinstance(u, TupleType):
                    stack.extend(u.fields)
                elif isinstance(u, FuncType):
                    stack.extend((*u.arg_types, u.ret_type))
                elif isinstance(u, RefType):
                    stack.append(u.value)
        direct[name] = refs
    changed = True
    while changed:
        changed = False
        for name, refs in direct.items():
            if name not in needs and refs & needs:
                needs.add(name)
                changed = True
    return [name for name in mod.types if name in needs]


# --- the input pipeline -----------------------------------------------------------------------

def let_bound_functions(roots: list[Expr]) -> dict[int, tuple[Var, Function]]:
    """Every ``let %f = fn ...`` in ``roots``: ``id(%f) -> (%f, fn)``."""
    out: dict[int, tuple[Var, Function]] = {}
    for root in roots:
        for node in post_order(root):
            if type(node) is Let and type(node.value) is Function:
                out[id(node.var)] = (node.var, node.value)
    return out


def resolve_function(f: Expr, defs: dict[int, tuple[Var, Function]]) -> Expr:
    """The function expression to differentiate for ``grad(f)``.

    A function literal or a global is itself; a ``let``-bound variable becomes
    ``let %f = <its literal>; %f`` (so a recursive literal keeps referring to itself). Free
    variables of function type that are ``let``-bound in the program are bound again inside the
    result the same way (fresh copies), transitively, so the result needs from its context only
    values that are not functions.

    Raises:
        RelayTypeError: ``f`` (or a function it uses) is a variable whose definition is not a
            ``let``-bound function literal (a parameter, a projection, ...).
    """
    if isinstance(f, Var):
        f = Let(f, defs[id(f)][1], f) if id(f) in defs else f
    seen: set[int] = set()
    while True:
        todo = [v for v in free_vars(f) if id(v) not in seen and _maybe_function(v)]
        if not todo:
            break
        for v in todo:
            seen.add(id(v))
            entry = defs.get(id(v))
            if entry is None:
                if _is_function_type(v):
                    raise RelayTypeError(
                        f"grad: cannot differentiate through %{v.name_hint}: its definition is "
                        "not a function literal let-bound in the program", v.span)
                continue
            fresh = Var(v.name_hint, v.type_annotation, span=v.span)
            literal = substitute(fresh_copy(entry[1]), {v: fresh})
            f = Let(fresh, literal, substitute(f, {v: fresh}))
    if isinstance(f, Var):
        raise RelayTypeError(
            f"grad: cannot differentiate %{f.name_hint}: its definition is not a function "
            "literal let-bound in the program (grad takes a function literal, a global or "
            "such a variable)", f.span)
    return f


def _is_function_type(v: Var) -> bool:
    t = v.type_annotation or v.checked_type
    return isinstance(t, FuncType)


def _maybe_function(v: Var) -> bool:
    t = v.type_annotation or v.checked_type
    return t is None or isinstance(t, FuncType)


class _GradExpander(ExprMutator):
    """Replaces each ``grad(e)`` node by its reverse-mode expansion (innermost first)."""

    def __init__(self, mod: IRModule, defs: dict[int, tuple[Var, Function]],
                 expand: Callable[[Expr, IRModule, dict[int, tuple[Var, Function]]], Expr]):
        self._mod = mod
        self._defs = defs
        self._expand = expand

    def visit_grad(self, new: Expr, old: Expr) -> Expr:
        assert isinstance(new, Grad) and isinstance(old, Grad)
        target = old.func if isinstance(old.func, Var) else new.func
        try:
            return self._expand(target, self._mod, self._defs)
        except RelayTypeError as err:
            err.with_span(old.span)
            raise


def expand_nested_grads(mod: IRModule, roots: dict[str, Function],
                        expand: Callable[[Expr, IRModule, dict[int, tuple[Var, Function]]], Expr],
                        ) -> dict[str, Function]:
    """``roots`` with every ``grad(e)`` node replaced by ``expand(e, mod, defs)``."""
    defs = let_bound_functions([*mod.functions.values(), *roots.values()])
    out: dict[str, Function] = {}
    for name, fn in roots.items():
        if not any(type(n) is Grad for n in post_order(fn)):
            out[name] = fn
            continue
        new = _GradExpander(mod, defs, expand).mutate(fn)
        assert isinstance(new, Function)
        out[name] = new
    return out


def prepare(f: Expr, mod: IRModule | None,
            expand: Callable[[Expr, IRModule, dict[int, tuple[Var, Function]]], Expr],
            ) -> tuple[IRModule, list[Var]]:
    """The typed, A-normal-form module to lift: ``mod`` (and the prelude definitions it uses)
    plus ``@__ad_entry``, a function of ``f``'s free variables returning ``f``.

    Args:
        f: the function expression to differentiate (a literal, a global, a let chain ending in
            a function); its free variables must have a type (annotation or checked type).
        mod: the module ``f``'s globals and ADTs come from (None: the prelude only).
        expand: the expander for nested ``grad`` nodes.
    Returns:
        ``(module, free)``: the prepared module and ``f``'s free variables (the entry's
        parameters, in order).
    Raises:
        RelayTypeError: ``f`` is ill-typed or not a function, a free variable has no type.
    """
    from interpreter.linking import with_prelude

    base = with_prelude(mod) if mod is not None else IRModule()
    free = free_vars(f)
    params = []
    mapping: dict[Var, Expr] = {}
    for v in free:
        t = v.type_annotation or v.checked_type
        if t is None:
            raise RelayTypeError(f"grad: the free variable %{v.name_hint} has no known type",
                                 v.span)
        p = Var(v.name_hint, t, span=v.span)
        params.append(p)
        mapping[v] = p
    body = substitute(f, mapping) if mapping else f
    entry = Function(tuple(params), body, span=f.span)
    linked = with_prelude(base.with_function(ENTRY, entry))
    keep = [ENTRY, *reachable_globals(linked, entry)]
    # Fused functions (FuseOps' Primitive=1 kernels) are opaque to A-normal form: undo them
    # first, so grad of a fused program differentiates its operators (passes.defuse_ops).
    whole = defuse_ops(linked.with_functions({name: linked[name] for name in keep}))
    global _DEPTH
    if _DEPTH >= MAX_GRAD_NESTING:
        raise RelayTypeError(f"grad: more than {MAX_GRAD_NESTING} nested grad expansions "
                             "(does a function take the gradient of itself?)", f.span)
    _DEPTH += 1
    try:
        roots = expand_nested_grads(linked, dict(whole.functions), expand)
    finally:
        _DEPTH -= 1
    whole = whole.with_functions(roots)
    from typechecker import infer

    typed = infer(whole)
    assert isinstance(typed, IRModule)
    anf = infer(to_anf(typed))
    assert isinstance(anf, IRModule)
    ftype = anf[ENTRY].body.checked_type
    if not isinstance(ftype, FuncType):
        raise RelayTypeError(f"grad: expected a function, found a value of type "
                             f"{pretty(ftype) if ftype is not None else '?'}",
                             f.span)
    if ftype.type_params:
        raise RelayTypeError("grad: cannot differentiate a polymorphic function "
                             "(Type-Gradient needs a monomorphic one)", f.span)
    return anf, free


def reachable_globals(mod: IRModule, root: Expr) -> list[str]:
    """Names of the globals ``root`` reaches through ``mod`` (transitively), in discovery order."""
    out: list[str] = []
    seen: set[str] = set()
    work = [root]
    while work:
        e = work.pop()
        for node in post_order(e):
            if type(node) is GlobalVar:
                name = node.name_hint
                if name not in seen and name in mod.functions:
                    seen.add(name)
                    out.append(name)
                    work.append(mod[name])
    return out


# --- the term lifting -------------------------------------------------------------------------

class Lifter(ABC):
    """The structural part of ``ADTerm`` over A-normal form; a mode subclasses it.

    A lifted program binds every original variable to a lifted atom (``env``, by variable
    identity). The mode supplies:

    * ``type_lifter`` (a :class:`TypeLifter`);
    * :meth:`extra_params` / :meth:`extra_args` — what every lifted function takes in
      addition (reverse: the backpropagator reference), and what every call passes;
    * :meth:`lift_constant` — a float literal as a lifted value;
    * :meth:`op_call` — a primitive call (the per-operator rules);
    * :meth:`primal` — the original value inside a lifted one.

    Invariant: scopes are walked in evaluation order, so the code emitted for a binding comes
    after the code of everything it depends on.
    """

    suffix = "lifted"

    def __init__(self, mod: IRModule, pair: Callable[[TensorType], Type],
                 extra_params: tuple[Type, ...]):
        self.mod = mod
        names = adts_needing_copies(mod)
        renames = {n: GlobalTypeVar(self.lifted_name(n)) for n in names}
        self.types = TypeLifter(pair, extra_params, renames)
        self.env: dict[int, Expr] = {}
        self.globals_used: set[str] = set()
        self.constructors: dict[str, Constructor] = {}
        self.lifted_types: dict[str, TypeData] = {}
        self._atoms = kind_cases(self, "atom_")
        self._values = kind_cases(self, "value_")
        for n in names:
            td = mod.types[n]
            header = renames[n]
            ctors = []
            for c in td.constructors:
                inputs = tuple(self.types.mutate(t) for t in c.inputs)
                copy = Constructor(self.lifted_name(c.name), inputs, header, c.tag, span=c.span)
                self.constructors[c.name] = copy
                ctors.append(copy)
            self.lifted_types[header.name] = TypeData(header, td.type_vars, tuple(ctors),
                                                      span=td.span)

    # --- mode hooks -------------------------------------------------------------------------
    def extra_params(self) -> tuple[Var, ...]:
        return ()

    def extra_args(self, ctx: Any) -> tuple[Expr, ...]:
        return ()

    def context_of(self, params: tuple[Var, ...], outer: Any) -> Any:
        """The mode's context inside a function whose extra parameters are ``params``."""
        return outer

    @abstractmethod
    def lift_constant(self, c: Constant, ll: LetList) -> Expr:
        """The lifted form of a literal (reverse: ``(c, ref(zeros_like(c)))``)."""

    @abstractmethod
    def op_call(self, e: Call, ll: LetList, ctx: Any) -> Expr:
        """The lifted form of a primitive call, applying the mode's rule table."""

    # --- helpers ------------------------------------------------------------------------------
    def lift_type(self, t: Type | None) -> Type | None:
        return None if t is None else self.types.mutate(t)

    def lifted_name(self, name: str) -> str:
        return f"{name}__{self.suffix}"

    def primal(self, a: Expr, t: Type, ll: LetList) -> Expr:
        """An atom bound to the original value of the lifted atom ``a`` (of original type
        ``t``), carrying ``checked_type`` ``t``."""
        if isinstance(a, Constant):
            return Constant(a.data, span=a.span, checked_type=t)
        v = Var("p", None, checked_type=t)
        ll.bind(v, self.primal_expr(a, t))
        return v

    def primal_expr(self, a: Expr, t: Type) -> Expr:
        """The original value inside the lifted value ``a`` of original type ``t``."""
        def leaf(path: tuple[int, ...], u: Type) -> Expr:
            e = project(a, path)
            return TupleGetItem(e, 0) if is_float_type(u) else e
        return by_type(t, leaf, no_float)

    def atom(self, e: Expr, ll: LetList) -> Expr:
        """The lifted form of an atom (by the case ``atom_<kind>`` of its kind)."""
        case = self._atoms.get(type(e))
        if case is None:
            raise InternalError(f"ad: {type(e).__name__} is not an atom")
        out: Expr = case(e, ll)
        return out

    def atom_var(self, e: Var, ll: LetList) -> Expr:
        found = self.env.get(id(e))
        if found is None:
            raise InternalError(f"ad: unbound variable %{e.name_hint}")
        return found

    def atom_constant(self, e: Constant, ll: LetList) -> Expr:
        return self.lift_constant(e, ll) if is_float_type(e.checked_type) else e

    def atom_global_var(self, e: GlobalVar, ll: LetList) -> Expr:
        self.globals_used.add(e.name_hint)
        return GlobalVar(self.lifted_name(e.name_hint), span=e.span)

    def atom_constructor(self, e: Constructor, ll: LetList) -> Expr:
        return self.constructor(e)

    def atom_op(self, e: Op, ll: LetList) -> Expr:
        raise RelayTypeError(f"grad: the operator {e.name} used as a first-class value "
                             "cannot be differentiated (call it inside a function literal)",
                             e.span)

    def constructor(self, ctor: Constructor) -> Constructor:
        """The constructor of the lifted ADT (a copy for an ADT with float fields)."""
        return self.constructors.get(ctor.name, ctor)

    # --- scopes -------------------------------------------------------------------------------
    def scope(self, e: Expr, ctx: Any, ll: LetList | None = None) -> Gen:
        """Premise: the lifted scope ``e`` (a let chain); into ``ll`` if given (then the tail
        atom is returned), else as a new let chain."""
        own = ll is None
        lets = LetList() if ll is None else ll
        while type(e) is Let:
            var: Var = e.var
            value: Expr = e.value
            if type(value) is Function:
                nv = Var(var.name_hint, self.lift_type(var.type_annotation), span=var.span)
                self.env[id(var)] = nv
                fn = yield self.function(value, ctx)
                lets.bind(nv, fn)
            else:
                out = yield from self.value(value, lets, ctx)
                if _is_atom(out):
                    self.env[id(var)] = out
                else:
                    self.env[id(var)] = lets.bind(Var(var.name_hint, span=var.span), out)
            e = e.body
        tail = yield from self.value(e, lets, ctx)
        return lets.get(tail) if own else tail

    def function(self, fn: Function, ctx: Any) -> Gen:
        """Premise: the lifted function literal (parameters lifted, the mode's extras added)."""
        params = []
        for p in fn.params:
            np_ = Var(p.name_hint, self.lift_type(p.type_annotation or p.checked_type),
                      span=p.span)
            self.env[id(p)] = np_
            params.append(np_)
        extra = self.extra_params()
        body = yield self.scope(fn.body, self.context_of(extra, ctx))
        ret = self.lift_type(fn.ret_type)
        return Function((*params, *extra), body, ret, fn.type_params, span=fn.span)

    def value(self, e: Expr, ll: LetList, ctx: Any) -> Gen:
        """The lifted form of a let-bound value (compound or atom) — delegated with
        ``yield from``; by the case ``value_<kind>`` of its kind (nested scopes are yielded
        as premises); an atom is lifted by :meth:`atom`."""
        case = self._values.get(type(e))
        if case is None:
            return self.atom(e, ll)
        out = case(e, ll, ctx)
        if type(out) is GeneratorType:
            out = yield from out
        return out

    def value_call(self, e: Call, ll: LetList, ctx: Any) -> Expr:
        op = e.op
        if isinstance(op, Op):
            return self.op_call(e, ll, ctx)
        args = tuple(self.atom(a, ll) for a in e.args)
        if isinstance(op, Constructor):
            return Call(self.constructor(op), args, span=e.span)
        return Call(self.atom(op, ll), (*args, *self.extra_args(ctx)), span=e.span)

    def value_tuple(self, e: Tuple, ll: LetList, ctx: Any) -> Expr:
        return Tuple(tuple(self.atom(a, ll) for a in e.fields), span=e.span)

    def value_tuple_getitem(self, e: TupleGetItem, ll: LetList, ctx: Any) -> Expr:
        return TupleGetItem(self.atom(e.tuple_value, ll), e.index, span=e.span)

    def value_if(self, e: If, ll: LetList, ctx: Any) -> Gen:
        cond = self.atom(e.cond, ll)
        yes = yield self.scope(e.true_branch, ctx)
        no = yield self.scope(e.false_branch, ctx)
        return If(cond, yes, no, span=e.span)

    def value_match(self, e: Match, ll: LetList, ctx: Any) -> Gen:
        data = self.atom(e.data, ll)
        clauses = []
        for c in e.clauses:
            lhs = self.pattern(c.lhs)
            rhs = yield self.scope(c.rhs, ctx)
            clauses.append(Clause(lhs, rhs, span=c.span))
        return Match(data, tuple(clauses), e.complete, span=e.span)

    def value_ref_create(self, e: RefCreate, ll: LetList, ctx: Any) -> Expr:
        return RefCreate(self.atom(e.value, ll), span=e.span)

    def value_ref_read(self, e: RefRead, ll: LetList, ctx: Any) -> Expr:
        return RefRead(self.atom(e.ref, ll), span=e.span)

    def value_ref_write(self, e: RefWrite, ll: LetList, ctx: Any) -> Expr:
        return RefWrite(self.atom(e.ref, ll), self.atom(e.value, ll), span=e.span)

    def value_function(self, e: Function, ll: LetList, ctx: Any) -> Gen:
        fn = yield self.function(e, ctx)
        return fn

    def value_let(self, e: Let, ll: LetList, ctx: Any) -> Gen:
        out = yield self.scope(e, ctx)
        return out

    def value_grad(self, e: Grad, ll: LetList, ctx: Any) -> Expr:
        raise InternalError("ad: grad nodes are expanded before lifting")

    def pattern(self, p: Pattern) -> Pattern:
        """The lifted pattern: pattern variables get new variables (bound in ``env``)."""
        # patterns are as deep as the data type they destructure: an explicit stack
        results: list[Pattern] = []
        stack: list[tuple[Pattern, bool]] = [(p, False)]
        while stack:
            q, done = stack.pop()
            if type(q) is PatternVar:
                v = q.var
                nv = Var(v.name_hint, None, span=v.span)
                self.env[id(v)] = nv
                results.append(PatternVar(nv, span=q.span))
            elif type(q) is PatternWildcard:
                results.append(q)
            elif not isinstance(q, (PatternConstructor, PatternTuple)):
                raise InternalError(f"ad: not a pattern: {type(q).__name__}")
            elif not done:
                stack.append((q, True))
                stack.extend((k, False) for k in reversed(q.patterns))
            else:
                n = len(q.patterns)
                kids = tuple(results[len(results) - n:]) if n else ()
                if n:
                    del results[len(results) - n:]
                if type(q) is PatternConstructor:
                    results.append(PatternConstructor(self.constructor(q.constructor), kids,
                                                      span=q.span))
                else:
                    results.append(PatternTuple(kids, span=q.span))
        return results[0]

    # --- globals ------------------------------------------------------------------------------
    def lift_global(self, name: str) -> Function:
        """The lifted definition of the global ``@name`` (references other lifted globals)."""
        fn = self.mod[name]
        out = run_recursive(self.function(fn, None))
        assert isinstance(out, Function)
        return out


def _is_atom(e: Expr) -> bool:
    return type(e) in (Var, Constant, GlobalVar, Constructor, Op)


def lifted_globals(lifter: Lifter) -> dict[str, Function]:
    """Lift every global the lifter has met so far, and those they reach (by lifted name)."""
    done: dict[str, Function] = {}
    while True:
        todo = [g for g in lifter.globals_used if lifter.lifted_name(g) not in done]
        if not todo:
            return done
        for g in sorted(todo):
            done[lifter.lifted_name(g)] = lifter.lift_global(g)


class _GlobalsToVars(ExprMutator):
    def __init__(self, mapping: dict[str, Var]):
        self._map = mapping

    def visit_global_var(self, new: GlobalVar, old: GlobalVar) -> Expr:
        v = self._map.get(old.name_hint)
        return new if v is None else v


def _global_refs(fn: Expr, names: dict[str, Function]) -> list[str]:
    seen: list[str] = []
    for node in post_order(fn):
        if type(node) is GlobalVar and node.name_hint in names:
            if node.name_hint not in seen:
                seen.append(node.name_hint)
    return seen


def close_globals(body: Expr, lifted: dict[str, Function], ll: LetList) -> Expr:
    """Bind the lifted globals ``body`` reaches as ``let``-bound functions pushed onto ``ll``
    and return ``body`` with its references to them replaced by the variables.

    A global is bound after the globals it calls (post-order over the call graph). The members
    of a cycle (mutual recursion) that are not yet bound when one of them is defined are bound
    again *inside* it, fresh copies, so every reference is in scope; a let-bound function may
    refer to itself, which covers self-recursion.
    """
    order: list[str] = []
    state: dict[str, int] = {}
    for root in _global_refs(body, lifted):
        if root in state:
            continue
        stack: list[tuple[str, list[str]]] = [(root, _global_refs(lifted[root], lifted))]
        state[root] = 1
        while stack:
            name, kids = stack[-1]
            if kids:
                k = kids.pop(0)
                if k not in state:
                    state[k] = 1
                    stack.append((k, _global_refs(lifted[k], lifted)))
                continue
            stack.pop()
            state[name] = 2
            order.append(name)
    scope: dict[str, Var] = {}
    for name in order:
        var, fn = _define(name, dict(scope), lifted)
        ll.bind(var, fn)
        scope[name] = var
    return _GlobalsToVars(scope).mutate(body) if scope else body


def _define(name: str, scope: dict[str, Var], lifted: dict[str, Function]) -> tuple[Var, Function]:
    # Nesting depth is bounded by the size of one cycle of mutually recursive globals.
    var = Var(name)
    inner = dict(scope)
    inner[name] = var
    fn = fresh_copy(lifted[name])
    assert isinstance(fn, Function)
    ll = LetList()
    for ref in _global_refs(fn, lifted):
        if ref not in inner:
            v, f = _define(ref, inner, lifted)
            ll.bind(v, f)
            inner[ref] = v
    body = _GlobalsToVars(inner).mutate(fn.body)
    return var, Function(fn.params, ll.get(body), fn.ret_type, fn.type_params, fn.attrs,
                         span=fn.span)


__all__ = ["ENTRY", "Lifted", "Lifter", "TypeLifter", "all_bool", "by_type", "carries_float",
           "close_globals", "no_float", "non_tensor_part", "project",
           "expand_nested_grads", "is_float_type", "let_bound_functions", "lifted_globals",
           "prepare", "reachable_globals", "resolve_function", "adts_needing_copies"]

