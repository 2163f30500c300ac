"""Reverse-mode automatic differentiation (the paper's §4.2 and Fig. 4; RULES.md Type-Gradient).

Design note
===========

``grad(f)`` is a source-to-source transformation: from ``f : fn(T1, ..., Tn) -> O`` it builds an
ordinary Relay function ``fn(T1, ..., Tn) -> (O, (T1, ..., Tn))`` returning the value of ``f``
and the gradient of (the sum of) its output with respect to each argument, seeded with
``ones_like`` of the output. Because the result is ordinary Relay, it can be differentiated
again (``grad(grad(f))``, third derivatives), partially evaluated or compiled.

**Lifting of types** (``ADType``). A floating-point tensor ``T`` becomes the pair
``(T, Ref[T])``: the value and a reference accumulating its adjoint (the partial derivative of
the output with respect to it). Everything else is lifted structurally:

* tuples field by field; ``Ref[T]`` to ``Ref[ADType(T)]`` (a program's own references hold
  lifted values, so gradients flow through what is stored in them);
* ``fn(T1..Tn) -> O`` to ``fn(ADType(T1)..ADType(Tn), Ref[fn() -> ()]) -> ADType(O)``: every
  lifted function takes the backpropagator reference as an extra last parameter (closures,
  let-bound and global functions alike, so first-class functions need no special case);
* ADTs: a polymorphic ADT is lifted at the lifted type arguments (``List[T]`` becomes
  ``List[ADType(T)]`` with the same constructors; gradients flow through constructor fields and
  ``match`` because the fields hold lifted pairs). An ADT with a float field that is not a
  type parameter (``type Box { B(Tensor[(3), float32]) }``) gets a lifted *copy* of its
  definition (``Box__rev { B__rev((Tensor[(3), float32], Ref[Tensor[(3), float32]])) }``;
  :func:`ad.lift.adts_needing_copies`): the gradient program uses the copy, which
  :func:`ad.grad_module` adds to the module (a closed function returned by :func:`ad.grad`
  evaluates as it is; to type-check it, use the module);
* integer and boolean tensors, ADT tags and ``()`` carry no derivative and stay as they are
  (``if`` conditions are plain booleans).

**Lifting of terms** (``ADTerm``, over A-normal form so every operand is an atom). A float
literal becomes ``(c, ref(zeros_like(c)))``; tuples, projections, ``if``, ``match``, references,
constructors and function literals are rebuilt over lifted atoms. A primitive call
``let %v = op(%a, %b)`` becomes::

    let %pa = %a.0; let %pb = %b.0;              // the primal values
    let %v = op(%pa, %pb);
    let %lv = (%v, ref(zeros_like(%v)));          // the lifted result
    let %old = !%bp;
    %bp := fn () {                                // extend the backpropagator
        let %g = !%lv.1;                          // the adjoint of the result, complete by now
        %a.1 := !%a.1 + <rule_a>;  %b.1 := !%b.1 + <rule_b>;
        %old()                                    // then the earlier operations
    };

where ``<rule_i>`` is the operator's gradient rule (``semantics.ops.tables.GRADIENTS``, written
in Relay by :mod:`ad.rules`). The backpropagator reference ``%bp`` is allocated once per
gradient (``ref(fn () { () })``) at the top and threaded to every lifted function as its extra
argument; a node of the program shared along several paths is bound once in A-normal form, so it
is differentiated once and its adjoint is the sum over its uses. The driver lifts the arguments
(``(x, ref(zeros_like(x)))``), calls the lifted function, writes ``ones_like`` into the result's
adjoint, runs ``(!%bp)()`` and reads the arguments' adjoints. Control flow, recursion and
higher-order functions need nothing special: the backpropagator is built as the program runs.

**What is not differentiable** (``RelayTypeError`` naming the operator or construct and its
span): an operator with a float argument, no gradient rule and a result that is not boolean
(``argmax``: "no gradient rule for operator argmax: ..."); an operator as a first-class value;
``grad`` of a polymorphic function; arguments or results that are not tensors or tuples of
tensors (Type-Gradient is stated over tensors); ``grad(%f)`` of a variable whose definition is
not a function literal let-bound in the program (a parameter; and, through the interpreter's
hook, a let-bound function of an *expression* passed to ``evaluate``, since the hook sees only
the module). A call whose result carries no float (a comparison, ``shape_of`` of an integer
tensor) needs no rule. Limits: nested ``grad`` expansions stop at
:data:`ad.lift.MAX_GRAD_NESTING`; the copies of mutually recursive globals bound inside a closed
gradient grow with the size of the cycle.

**Globals.** A global ``@g`` the function reaches is lifted to a function of the lifted type
(:func:`ad.lift.lifted_globals`). :func:`reverse_grad` returns a *closed* function: the lifted
globals are bound with ``let`` inside its body (mutually recursive ones nested); with
``closed=False`` it returns the function referring to them as globals ``@g__rev`` together with
their definitions (used by :func:`ad.grad_module`).

**Nested ``grad``.** ``grad(e)`` nodes inside the differentiated program are expanded first
(innermost first) into ordinary Relay; the outer transformation then differentiates through the
inner expansion (its references and closures are ordinary values), which gives higher-order
derivatives.
"""

from __future__ import annotations

from typing import Any

from ad.lift import (
    ENTRY,
    Lifted,
    Lifter,
    all_bool,
    by_type,
    carries_float,
    close_globals,
    is_float_type,
    let_bound_functions,
    lifted_globals,
    no_float,
    non_tensor_part,
    prepare,
    project,
    resolve_function,
)
from semantics.errors import InternalError, RelayTypeError
from semantics.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from semantics.module import IRModule
from semantics.ops.tables import GRADIENTS
from semantics.printer import pretty
from semantics.rewrite import LetList
from semantics.types import FuncType, RefType, TensorType, TupleType, Type
from semantics.visitor import run_recursive

__all__ = ["BACKPROP_TYPE", "ReverseLifter", "reverse_grad"]

BACKPROP_TYPE = RefType(FuncType((), TupleType(())))
"""``Ref[fn() -> ()]``: the type of the backpropagator reference."""


def _op(name: str, *args: Expr) -> Call:
    return Call(Op(name), tuple(args))


class ReverseLifter(Lifter):
    """``ADTerm`` of reverse mode: the context is the backpropagator reference in scope."""

    suffix = "rev"

    def __init__(self, mod: IRModule):
        super().__init__(mod, _pair_type, (BACKPROP_TYPE,))

    def extra_params(self) -> tuple[Var, ...]:
        return (Var("bp", BACKPROP_TYPE),)

    def extra_args(self, ctx: Any) -> tuple[Expr, ...]:
        return (ctx,)

    def context_of(self, params: tuple[Var, ...], outer: Any) -> Any:
        return params[0]

    def lift_constant(self, c: Constant, ll: LetList) -> Expr:
        return ll.push(Tuple((c, RefCreate(_op("zeros_like", c)))), "c")

    # --- values with adjoints -------------------------------------------------------------
    def fresh(self, v: Expr, t: Type) -> Expr:
        """The lifted value of the primal ``v`` with a zero adjoint."""
        def leaf(path: tuple[int, ...], u: Type) -> Expr:
            e = project(v, path)
            return Tuple((e, RefCreate(_op("zeros_like", e)))) if is_float_type(u) else e
        return by_type(t, leaf, no_float)

    def adjoint(self, lv: Expr, t: Type) -> Expr:
        """The adjoint accumulated in the lifted value ``lv``, of the original type ``t``."""
        def leaf(path: tuple[int, ...], u: Type) -> Expr:
            e = project(lv, path)
            if is_float_type(u):
                return RefRead(TupleGetItem(e, 1))
            if isinstance(u, TensorType):
                return _op("zeros_like", e)
            raise InternalError(f"ad: no adjoint for a value of type {u!r}")
        return by_type(t, leaf)

    def accumulate(self, la: Expr, g: Expr, t: Type, ll: LetList) -> None:
        """Add ``g`` (of type ``t``) to the adjoint of the lifted value ``la``."""
        stack: list[tuple[Expr, Expr, Type]] = [(la, g, t)]
        while stack:
            target, grad, u = stack.pop()
            if is_float_type(u):
                cell = TupleGetItem(target, 1)
                ll.push(RefWrite(cell, _op("add", RefRead(cell), grad)), "_")
            elif isinstance(u, TupleType) and carries_float(u):
                if isinstance(grad, Tuple):
                    parts: list[Expr | None] = list(grad.fields)
                else:
                    gv = ll.push(grad, "g")
                    parts = [TupleGetItem(gv, i) for i in range(len(u.fields))]
                for i in reversed(range(len(u.fields))):
                    part = parts[i]
                    if part is not None:
                        stack.append((TupleGetItem(target, i), part, u.fields[i]))

    # --- primitive calls --------------------------------------------------------------------
    def op_call(self, e: Call, ll: LetList, ctx: Any) -> Expr:
        op = e.op
        assert isinstance(op, Op)
        types: list[Type] = []
        lifted: list[Expr | None] = []
        prims: list[Expr] = []
        for a in e.args:
            t = a.checked_type
            if t is None:
                raise InternalError(f"ad: untyped argument of {op.name}")
            types.append(t)
            if isinstance(a, Constant):
                lifted.append(None)
                prims.append(Constant(a.data, span=a.span, checked_type=t))
            else:
                la = self.atom(a, ll)
                lifted.append(la)
                prims.append(self.primal(la, t, ll))
        out_t = e.checked_type
        if out_t is None:
            raise InternalError(f"ad: untyped call of {op.name}")
        v = Var("v", None, checked_type=out_t)
        call = Call(op, tuple(prims), e.attrs, e.type_args, span=e.span, checked_type=out_t)
        ll.bind(v, call)
        flows = [la is not None and carries_float(t) for la, t in zip(lifted, types)]
        if not carries_float(out_t):
            if any(flows) and not all_bool(out_t) and not GRADIENTS.has(op.name):
                _lookup(op, e)  # raises: no gradient flows through this operator
            return v
        lv = ll.push(self.fresh(v, out_t), "lv")
        if not any(flows):
            return lv
        rule = _lookup(op, e)
        g = Var("g", None, checked_type=out_t)
        body = LetList()
        body.bind(g, self.adjoint(lv, out_t))
        grads = rule(call, v, g)
        if len(grads) != len(e.args):
            raise InternalError(f"the gradient rule of {op.name} returned {len(grads)} "
                                f"gradients for {len(e.args)} arguments")
        for arg, gi, at, flow in zip(lifted, grads, types, flows):
            if flow and gi is not None and arg is not None:
                self.accumulate(arg, gi, at, body)
        old = ll.push(RefRead(ctx), "old")
        ll.push(RefWrite(ctx, Function((), body.get(Call(old, ())))), "_")
        return lv


def _pair_type(t: TensorType) -> Type:
    return TupleType((t, RefType(t)))


def _lookup(op: Op, e: Call) -> Any:
    try:
        return GRADIENTS.lookup(op.name)
    except RelayTypeError as err:
        err.with_span(e.span)
        raise


# --- the driver -------------------------------------------------------------------------------

def _check_io(t: Type, what: str, span: Any) -> None:
    bad = non_tensor_part(t)
    if bad is not None:
        raise RelayTypeError(f"grad: the {what} must be tensors or tuples of tensors "
                             f"(Type-Gradient), found {pretty(bad)}", span)


def _seed(r: Expr, t: Type, ll: LetList) -> None:
    """Write ``ones_like`` into the adjoint of every float tensor of the lifted result ``r``."""
    stack: list[tuple[Expr, Type]] = [(r, t)]
    while stack:
        e, u = stack.pop()
        if is_float_type(u):
            ll.push(RefWrite(TupleGetItem(e, 1), _op("ones_like", TupleGetItem(e, 0))), "_")
        elif isinstance(u, TupleType):
            stack.extend((TupleGetItem(e, i), ft) for i, ft in enumerate(u.fields))


def _free_lift(lifter: ReverseLifter, v: Var, t: Type, span: Any) -> Expr:
    if not carries_float(t):
        return v
    if non_tensor_part(t) is not None:
        raise RelayTypeError(f"grad: the free variable %{v.name_hint} of type {pretty(t)} "
                             "cannot be lifted (only tensors and tuples of tensors can)", span)
    return lifter.fresh(v, t)


def reverse_grad(f: Expr, mod: IRModule | None = None, *,
                 defs: dict[int, tuple[Var, Function]] | None = None,
                 closed: bool = True) -> Lifted:
    """The reverse-mode gradient function of ``f`` (see the module's design note).

    Args:
        f: a function expression: a literal, a global of ``mod``, a ``let``-bound variable
            whose definition is in ``defs``, or a let chain ending in a function. Its free
            variables (if any) stay free in the result: they must be tensors or tuples of
            tensors (their gradients are not collected) or let-bound functions in ``defs``.
        mod: the module of ``f``'s globals and ADTs (None: the prelude only).
        defs: let-bound function literals by variable identity (for ``grad(%f)``).
        closed: bind the lifted globals inside the result (True), or leave them as references
            to globals returned in the second component.
    Returns:
        ``Lifted(function, globals, types)``: the gradient function, the lifted globals it
        refers to (empty when ``closed``) and the lifted copies of the ADTs it uses (needed to
        type-check it: :meth:`ad.lift.Lifted.module`).
    Raises:
        RelayTypeError: ``f`` is not differentiable (see the design note).
    """
    if defs is None:
        defs = let_bound_functions(list(mod.functions.values())) if mod is not None else {}
    target = resolve_function(f, defs)
    prepared, free = prepare(target, mod, _nested)
    lifter = ReverseLifter(prepared)
    entry = prepared[ENTRY]
    ftype = entry.body.checked_type
    assert isinstance(ftype, FuncType)
    for t in ftype.arg_types:
        _check_io(t, "arguments", f.span)
    _check_io(ftype.ret_type, "result", f.span)
    ll = LetList()
    bp = ll.push(RefCreate(Function((), Tuple(()))), "bp")
    for p, orig in zip(entry.params, free):
        pt = p.checked_type or p.type_annotation
        assert pt is not None
        lifter.env[id(p)] = ll.push(_free_lift(lifter, orig, pt, orig.span), orig.name_hint)
    fl = run_recursive(lifter.scope(entry.body, bp, ll))
    names = _param_names(f, mod)
    xs = [Var(names[i] if i < len(names) else f"x{i}", t)
          for i, t in enumerate(ftype.arg_types)]
    xl = [ll.push(lifter.fresh(x, t), x.name_hint) for x, t in zip(xs, ftype.arg_types)]
    r = ll.push(Call(fl, (*xl, bp)), "r")
    _seed(r, ftype.ret_type, ll)
    ll.push(Call(RefRead(bp), ()), "_")
    grads = Tuple(tuple(lifter.adjoint(a, t) for a, t in zip(xl, ftype.arg_types)))
    body = ll.get(Tuple((lifter.primal_expr(r, ftype.ret_type), grads)))
    lifted = lifted_globals(lifter)
    if not closed:
        return Lifted(Function(tuple(xs), body, span=f.span), lifted, lifter.lifted_types)
    outer = LetList()
    body = close_globals(body, lifted, outer)
    return Lifted(Function(tuple(xs), outer.get(body), span=f.span), {}, lifter.lifted_types)


def _param_names(f: Expr, mod: IRModule | None) -> list[str]:
    """The parameter names of the differentiated function, when it is written down."""
    if isinstance(f, GlobalVar) and mod is not None and f.name_hint in mod.functions:
        f = mod[f.name_hint]
    return [p.name_hint for p in f.params] if isinstance(f, Function) else []


def _nested(target: Expr, mod: IRModule, defs: dict[int, tuple[Var, Function]]) -> Expr:
    return reverse_grad(target, mod, defs=defs).function
