"""Symbolic shape-and-attribute proofs for the relations the generic checker cannot resolve.

:mod:`proofs.relcheck` proves a relation symbolically only where the relation's code resolves
*shape variables*. Six relations decline there (they answer ``?``, ask for static dims, or
need an attribute to be a concrete number): ``Arange``, ``BroadcastTo``, ``Squeeze``,
``StridedSlice``, ``Conv2DBackwardWeight`` and ``Pool2DGrad``. For each, this module proves a
claim **for all dims and all attribute values** (Z3 integers, with the attributes' own side
conditions: strides >= 1, paddings >= 0, ...), in one of two ways:

* **code run symbolically** (``BroadcastTo``, ``Squeeze`` with axes, ``Conv2DBackwardWeight``,
  ``Pool2DGrad``): the registered relation is called on SymPy shape variables *and* SymPy
  attribute values, with a :class:`Recorder` as its dim solver. Every question these relations
  ask the solver is a requirement (``unify``: equal, or a type error), so the recorder answers
  "equal" and records the equation; the conjunction of the recorded equations is the
  relation's acceptance condition on that path, and its returned type is the result. Branches
  the code takes only on concrete ``int`` dims (``d == 1`` in ``broadcast_into``, the
  ``kernel < 1`` / negative-window guards of ``window_out_dim``, ``groups`` dividing the
  channel counts) are *case-split* (``d`` is the literal 1, or a variable assumed ``!= 1``;
  channel counts written ``groups * q``) or *modelled from the code* as extra acceptance
  conditions — each named in the obligation's method text;
* **modelled in Z3 from the code** (``Arange``'s length, ``StridedSlice``'s bounds, ``Squeeze``
  without axes): the relation's arithmetic is transcribed into Z3 (the function names say
  which code each model follows), because the code only runs on concrete numbers.

Either way Z3 proves, against a specification written from the operator's *definition*
(NumPy broadcasting, Python's ``slice.indices`` clamping and ``range`` length, conv2d's output
formula for the adjoint ops, the number of steps of ``arange``):
``side conditions -> (accepts <-> defined) and (defined -> result == definition)``.

The models are tied to the code by a second, bounded link: :func:`differential` runs the
registered relation (and, for ``Arange``, the reference ``arange_length`` and the operator's
reference implementation) on a grid of concrete dims and attributes and compares each answer
with the model evaluated on the same numbers. The generic bounded check of
:mod:`proofs.relcheck` keeps running for these relations as well.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy
import z3

from proofs.core import PROVED, REFUTED, UNKNOWN, Verdict, model_text, prove_valid
from proofs.relations import BY_NAME, bcast_dims, s_conv2d, s_pool2d_grad
from proofs.relcheck import AND, IF, NOT, OR, Config, check_case
from proofs.symbolic import as_int, to_z3
from semantics.errors import RelayError
from semantics.expr import Attrs
from semantics.ops import get as get_op
from semantics.ops.registry import Relation
from semantics.shapes import ANY, Dim, DimSolver, shape_var
from semantics.types import TensorType, TupleType, Type

MAX_RANGE = 2 ** 63 - 1          # strided_slice's "to the end" sentinel (as in the code)
ARANGE_MAX = 2 ** 31 - 1         # arange's length limit (TVM types the length as int32)

Z3Claim = Any


# --- running a relation on symbolic dims and attributes ----------------------------------------

class Recorder(DimSolver):
    """A dim solver that answers every equality question "equal" and records the equation.

    Sound for relations whose every solver question is a requirement (a ``False`` or unknown
    answer would be a type error): the recorded equations are then exactly the condition
    under which the path the relation took accepts.
    """

    def __init__(self) -> None:
        self.required: list[tuple[Dim, Dim]] = []

    def equal(self, a: Dim, b: Dim) -> bool | None:
        if super().equal(a, b) is True:
            return True
        self.required.append((a, b))
        return True


@dataclass(frozen=True)
class SymbolicRun:
    """One run of a relation on symbolic arguments: result shapes (None: rejected)."""

    result: list[tuple[Dim, ...]] | None
    required: list[tuple[Dim, Dim]]
    error: str = ""


def run_symbolic(rel: Relation, shapes: Sequence[Sequence[Dim]], attrs: dict[str, Any],
                 dtype: str = "float32") -> SymbolicRun:
    """Call ``rel`` on tensors of ``shapes`` (SymPy or int dims) with ``attrs`` (which may hold
    SymPy values), a :class:`Recorder` as its solver.

    Returns:
        The result shapes (or None if the relation raised a ``RelayError``) and the recorded
        requirements.
    """
    rec = Recorder()
    args = tuple(TensorType(tuple(s), dtype) for s in shapes)
    try:
        got = rel(args, Attrs(attrs), rec)
    except RelayError as exc:
        return SymbolicRun(None, rec.required, str(exc))
    return SymbolicRun(_shapes_of(got), rec.required)


def _shapes_of(t: Type | None) -> list[tuple[Dim, ...]] | None:
    if isinstance(t, TensorType):
        return [tuple(t.shape)]
    if isinstance(t, TupleType):
        return [tuple(f.shape) for f in t.fields if isinstance(f, TensorType)]
    return None


class Env:
    """SymPy shape variables and their Z3 integer twins, created on demand by name."""

    def __init__(self) -> None:
        self.z: dict[str, z3.ArithRef] = {}

    def var(self, name: str) -> sympy.Symbol:
        self.z.setdefault(name, z3.Int(name))
        return shape_var(name)

    def zvar(self, name: str) -> z3.ArithRef:
        self.var(name)
        return self.z[name]

    def term(self, d: Any) -> tuple[z3.ArithRef, z3.BoolRef]:
        """A dim (int or SymPy) as a Z3 integer term and its integrality condition."""
        if d is ANY:
            raise ValueError("? has no Z3 term")
        if isinstance(d, int):
            return z3.IntVal(d), z3.BoolVal(True)
        t, ok = as_int(to_z3(d, self.z))
        return t, ok

    def nonneg(self) -> z3.BoolRef:
        return z3.And(*[v >= 0 for v in self.z.values()]) if self.z else z3.BoolVal(True)


def _accepts(env: Env, run: SymbolicRun) -> tuple[z3.BoolRef, list[z3.ArithRef] | None,
                                                   z3.BoolRef]:
    """(acceptance condition, result dims as Z3 terms, integrality of those terms)."""
    if run.result is None:
        return z3.BoolVal(False), None, z3.BoolVal(True)
    conds, integral = [], []
    for a, b in run.required:
        ta, oka = env.term(a)
        tb, okb = env.term(b)
        conds.append(ta == tb)
        integral += [oka, okb]
    dims = []
    for s in run.result:
        for d in s:
            t, ok = env.term(d)
            dims.append(t)
            integral.append(ok)
    return z3.And(*conds) if conds else z3.BoolVal(True), dims, z3.And(*integral)


def _equiv_claim(side: Any, accepts: Any, pre: Any, got: Sequence[Any] | None,
                 want: Sequence[Any]) -> Z3Claim:
    """``side -> (accepts <-> pre) and (pre -> got == want)`` (``want`` dims may be
    predicates on the result dim)."""
    if got is None:
        return z3.Implies(_b(side), z3.Not(_b(pre)))
    if len(got) != len(want):
        return z3.Implies(_b(side), z3.Not(_b(pre)))
    eqs = [w(g) if callable(w) else g == w for g, w in zip(got, want, strict=True)]
    return z3.Implies(_b(side), z3.And(_b(accepts) == _b(pre),
                                       z3.Implies(_b(pre), _b(AND(*eqs) if eqs else True))))


def _b(x: Any) -> z3.BoolRef:
    return z3.BoolVal(x) if isinstance(x, bool) else x


def _prove(claim: Z3Claim, where: str, method: str) -> Verdict:
    v = prove_valid(claim, describe=lambda m: f"{where}: {model_text(m)}", method=method)
    return v


def _first_failure(verdicts: Sequence[Verdict] | Any, method: str) -> Verdict:
    count = 0
    for v in verdicts:
        if v.status != PROVED:
            return v
        count += 1
    return Verdict(PROVED, method=f"{method} ({count} cases)")


def _normalized(op_name: str, concrete: dict[str, Any]) -> dict[str, Any]:
    return dict(get_op(op_name).normalize_attrs(concrete))


# --- BroadcastTo: code run symbolically, case split on the literal 1 ---------------------------

def _bcast_spec(x: Sequence[Any], target: Sequence[Any]) -> tuple[Any, Sequence[Any]]:
    """numpy.broadcast_to(x, target): defined iff broadcasting x's shape with target is
    defined and gives target itself."""
    ok, out = bcast_dims(list(x), list(target))
    if len(out) != len(target):
        return False, list(target)
    return AND(ok, *[o == t for o, t in zip(out, target, strict=True)]), list(target)


def broadcast_to_symbolic(rel: Relation | None = None, max_rank: int = 3) -> Verdict:
    """For input ranks and target ranks 0..max_rank, every input dim either the literal 1 or a
    variable assumed != 1 (the only concrete branch of ``broadcast_into``), and the ``shape``
    attribute all variables: the relation accepts iff numpy broadcasting is defined and
    gives the target, and then returns the target."""
    rel = rel or get_op("broadcast_to").relation

    def cases() -> Any:
        for rin in range(max_rank + 1):
            for rout in range(max_rank + 1):
                for ones in itertools.product((False, True), repeat=rin):
                    env = Env()
                    dims: list[Any] = [1 if one else env.var(f"a{i}")
                                       for i, one in enumerate(ones)]
                    target = [env.var(f"t{j}") for j in range(rout)]
                    run = run_symbolic(rel, [dims], {"shape": tuple(target)})
                    acc, got, integral = _accepts(env, run)
                    zx = [1 if one else env.z[f"a{i}"] for i, one in enumerate(ones)]
                    zt = [env.z[f"t{j}"] for j in range(rout)]
                    pre, want = _bcast_spec(zx, zt)
                    side = z3.And(env.nonneg(), integral,
                                  *[env.z[f"a{i}"] != 1 for i, one in enumerate(ones)
                                    if not one])
                    where = (f"BroadcastTo, input rank {rin} (dims "
                             f"{['1' if o else f'a{i}' for i, o in enumerate(ones)]}), "
                             f"target rank {rout}")
                    yield _prove(_equiv_claim(side, acc, pre, got, want), where, "z3")

    return _first_failure(cases(), "z3: code run symbolically, dims split on == 1")


# --- Squeeze: with axes, code run symbolically; without, modelled from the code ---------------

def squeeze_axes_symbolic(rel: Relation | None = None, max_rank: int = 4) -> Verdict:
    """Every set of axes (positive and negative spellings, one axis repeated in the other
    spelling, and an out-of-range axis) of ranks 1..max_rank: the relation accepts iff the
    squeezed dims are 1, and removes them (a repeated axis counts once — NumPy would reject
    it; the relation and the reference accept it)."""
    rel = rel or get_op("squeeze").relation

    def cases() -> Any:
        for r in range(1, max_rank + 1):
            axis_sets: list[tuple[int, ...]] = [(r,), (-r - 1,)]
            for k in range(1, r + 1):
                for chosen in itertools.combinations(range(r), k):
                    axis_sets.append(chosen)
                    axis_sets.append(tuple(a - r for a in chosen))
                    axis_sets.append((*chosen, chosen[0] - r))     # a repeated axis
            for axes in axis_sets:
                env = Env()
                dims = [env.var(f"d{i}") for i in range(r)]
                run = run_symbolic(rel, [dims], {"axis": axes})
                acc, got, integral = _accepts(env, run)
                zd = [env.z[f"d{i}"] for i in range(r)]
                if all(-r <= a < r for a in axes):
                    picked = {a % r for a in axes}
                    pre: Any = AND(*[zd[i] == 1 for i in picked])
                    want = [d for i, d in enumerate(zd) if i not in picked]
                else:
                    pre, want = False, []
                side = z3.And(env.nonneg(), integral)
                yield _prove(_equiv_claim(side, acc, pre, got, want),
                             f"Squeeze, rank {r}, axis={axes}", "z3")

    return _first_failure(cases(), "z3: code run symbolically")


def squeeze_all_model(dims: Sequence[Any]) -> tuple[Any, Any]:
    """Model of ``squeeze_axes(axis=None)`` + ``_squeeze`` (transform_relations): every dim
    equal to 1 is dropped, the others kept in order. Returns ``(length, array)`` (Z3)."""
    out = z3.K(z3.IntSort(), z3.IntVal(0))
    n: Any = z3.IntVal(0)
    for d in dims:
        keep = d != 1
        out = z3.If(keep, z3.Store(out, n, d), out)
        n = z3.If(keep, n + 1, n)
    return n, out


def squeeze_all_symbolic(max_rank: int = 4,
                         model: Callable[[Sequence[Any]], tuple[Any, Any]] = squeeze_all_model
                         ) -> Verdict:
    """``squeeze`` without axes, by its definition: the result is the input with exactly its
    dims equal to 1 deleted — an order-preserving map ``m`` from result positions onto the
    positions of the dims != 1, ``out[j] = x[m(j)]``. Proved: the model's result satisfies
    the definition (with the model's own map), and every (length, result, map) satisfying it
    equals the model's (uniqueness), for every rank up to ``max_rank``."""
    verdicts = []
    for r in range(max_rank + 1):
        xs = [z3.Int(f"d{i}") for i in range(r)]
        length, out = model(xs)
        nonneg = z3.And(*[x >= 0 for x in xs]) if xs else z3.BoolVal(True)

        def spec(n: Any, o: Any, m: Any, xs: list[z3.ArithRef] = xs) -> z3.BoolRef:
            cl = [n >= 0, n <= len(xs)]
            for j in range(len(xs)):
                inside = z3.IntVal(j) < n
                mj = z3.Select(m, j)
                cl.append(z3.Implies(inside, z3.And(mj >= 0, mj < len(xs))))
                cl.append(z3.Implies(inside, z3.Or(*[z3.And(mj == i, x != 1, z3.Select(o, j) == x)
                                                      for i, x in enumerate(xs)])))
                if j + 1 < len(xs):
                    cl.append(z3.Implies(z3.IntVal(j + 1) < n, mj < z3.Select(m, j + 1)))
            for i, x in enumerate(xs):
                cl.append(z3.Implies(x != 1, z3.Or(*[z3.And(z3.IntVal(j) < n,
                                                             z3.Select(m, j) == i)
                                                     for j in range(len(xs))])))
            return z3.And(*cl)

        # the model's own map: the positions of the kept dims, in order
        pos = z3.K(z3.IntSort(), z3.IntVal(0))
        k: Any = z3.IntVal(0)
        for i, x in enumerate(xs):
            pos = z3.If(x != 1, z3.Store(pos, k, i), pos)
            k = z3.If(x != 1, k + 1, k)
        exists = z3.Implies(nonneg, spec(length, out, pos))
        n2 = z3.Int("n")
        o2 = z3.Array("out", z3.IntSort(), z3.IntSort())
        m2 = z3.Array("m", z3.IntSort(), z3.IntSort())
        j = z3.Int("j")
        unique = z3.Implies(z3.And(nonneg, spec(n2, o2, m2)),
                            z3.And(n2 == length, z3.Implies(z3.And(j >= 0, j < n2),
                                                            z3.Select(o2, j) ==
                                                            z3.Select(out, j))))
        verdicts.append(_prove(z3.And(exists, unique), f"Squeeze without axes, rank {r}",
                               "z3"))
    return _first_failure(verdicts, "z3: modelled from the code")


# --- StridedSlice: modelled from the code, symbolic begin/end/stride --------------------------

def _imax(a: Any, b: Any) -> Any:
    return IF(a >= b, a, b)


def _imin(a: Any, b: Any) -> Any:
    return IF(a <= b, a, b)


def _ceil_div(x: Any, y: Any) -> Any:
    """ceil(x / y) for integers (Python ints or Z3 terms; y != 0)."""
    if isinstance(x, int) and isinstance(y, int):
        return -((-x) // y)
    zx, zy = _z(x), _z(y)
    return -z3.ToInt(z3.ToReal(-zx) / z3.ToReal(zy))


def _z(x: Any) -> Any:
    return z3.IntVal(x) if isinstance(x, int) else x


def canonicalize_index_model(i: Any, n: Any, s: Any) -> Any:
    """Model of ``canonicalize_index`` (transform_relations): negatives count from the end,
    then clamp to ``[0, n]`` (positive stride) or ``[-1, n - 1]`` (negative)."""
    neg = s < 0
    lo, hi = IF(neg, -1, 0), IF(neg, n - 1, n)
    v = IF(i < 0, i + n, i)
    return _imin(_imax(v, lo), hi)


def strided_slice_model(n: Any, b: Any | None, e: Any | None, s: Any, size_mode: bool
                        ) -> tuple[Any, Any]:
    """Model of ``slice_bounds`` + ``len(range(begin, end, stride))`` in ``_strided_slice``
    (transform_relations) for one axis: ``(accepted, extent)``; works on ints and Z3 terms."""
    if size_mode:
        s = 1
    bc = canonicalize_index_model(b if b is not None else IF(s > 0, 0, MAX_RANGE), n, s)
    if size_mode and e is not None:
        ec = IF(e >= 0, _imin(bc + e, n), canonicalize_index_model(MAX_RANGE, n, s))
    elif size_mode or e is None:
        ec = canonicalize_index_model(IF(s > 0, MAX_RANGE, 0), n, s)
    else:
        ec = canonicalize_index_model(e, n, s)
    ok = NOT(OR(AND(s > 0, bc > ec), AND(s < 0, ec > bc)))
    # Python's len(range(a, b, s)): max(0, ceil((b - a) / s))
    return ok, _imax(0, _ceil_div(ec - bc, s))


def strided_slice_spec(n: Any, b: Any | None, e: Any | None, s: Any, size_mode: bool
                       ) -> tuple[Any, Callable[[Any], Any]]:
    """The definition, one axis: Python's ``slice(b, e, s).indices(n)`` for the bounds (a
    negative bound counts from the end; then clipped to ``[0, n]`` for a positive step,
    ``[-1, n - 1]`` for a negative one; an omitted begin is ``0`` / ``n - 1``), TVM's
    conventions on top: an omitted end with a negative stride stops before index 0 (TVM's
    default end 0, exclusive, clipped like an explicit bound), begin past end (in the
    stride's direction) is a type error, and in ``size`` mode the stride is 1 and ``end``
    is a count (negative: to the end).
    The result is the number of indices ``start, start + s, ...`` strictly before ``stop``.
    """
    if size_mode:
        start = IF(b is None or b >= 0, _imin(b if b is not None else 0, n),
                   _imax((b if b is not None else 0) + n, 0))
        stop = n if e is None else IF(e >= 0, _imin(start + e, n), n)
        return True, lambda o: o == stop - start

    def bound(v: Any, default: Any) -> Any:
        if v is None:
            return default
        return IF(s > 0, IF(v < 0, _imax(v + n, 0), _imin(v, n)),
                  IF(v < 0, _imax(v + n, -1), _imin(v, n - 1)))

    start = bound(b, IF(s > 0, 0, n - 1))
    stop = bound(e, IF(s > 0, n, _imin(0, n - 1)))
    pre = IF(s > 0, start <= stop, stop <= start)

    def inside(k: Any) -> Any:
        return IF(s > 0, start + k * s < stop, start + k * s > stop)

    return pre, lambda o: AND(o >= 0, OR(o == 0, inside(o - 1)), NOT(inside(o)))


def strided_slice_symbolic(model: Callable[..., tuple[Any, Any]] = strided_slice_model
                           ) -> Verdict:
    """For symbolic extent ``0 <= n <= 2**63 - 1`` (an int64 extent: the code's "to the end"
    sentinel is int64 max, so a larger extent would be cut there), begin, end and stride
    ``!= 0`` (each bound given or omitted; ``end`` and ``size`` modes): the model accepts iff
    the definition does, and then its extent is the definition's count."""
    n, b, e, s = z3.Ints("n begin end stride")
    verdicts = []
    for size_mode in (False, True):
        for has_b, has_e in itertools.product((True, False), repeat=2):
            bb, ee = (b if has_b else None), (e if has_e else None)
            ok, ext = model(n, bb, ee, s, size_mode)
            pre, count = strided_slice_spec(n, bb, ee, s, size_mode)
            claim = z3.Implies(z3.And(n >= 0, n <= MAX_RANGE, s != 0),
                               z3.And(_b(ok) == _b(pre), z3.Implies(_b(pre), count(ext))))
            where = (f"StridedSlice ({'size' if size_mode else 'end'} mode, begin "
                     f"{'given' if has_b else 'omitted'}, end {'given' if has_e else 'omitted'})")
            verdicts.append(_prove(claim, where, "z3"))
    return _first_failure(verdicts, "z3: modelled from the code")


# --- Arange: the length, modelled from the code ------------------------------------------------

def arange_length_model(a: Any, b: Any, s: Any, integer: bool) -> Any:
    """Model of ``creation.arange_length``: integers ``max(0, -((a - b) // s))``, floats
    ``max(0, ceil((b - a) / s))`` (exact real arithmetic; the code's float64 rounding is not
    modelled)."""
    if integer:
        q = -z3.ToInt(z3.ToReal(a - b) / z3.ToReal(s))   # -((a - b) // s), floor division
    else:
        q = -z3.ToInt(-(b - a) / s)                      # ceil
    return _imax(0, q)


def arange_symbolic(model: Callable[[Any, Any, Any, bool], Any] = arange_length_model
                    ) -> Verdict:
    """For all start, stop and step != 0 (integers; and reals): the model's length is the
    number of ``start + k*step`` (k = 0, 1, ...) strictly before ``stop`` in the step's
    direction (the definition, with its sign cases), and within the int32 limit exactly when
    that count is."""
    verdicts = []
    for integer in (True, False):
        a, b, s = (z3.Ints if integer else z3.Reals)("start stop step")
        n = model(a, b, s, integer)

        def inside(k: Any, a: Any = a, b: Any = b, s: Any = s) -> Any:
            return z3.If(s > 0, a + k * s < b, a + k * s > b)

        count = z3.And(n >= 0, z3.Or(n == 0, inside(n - 1)), z3.Not(inside(n)))
        k = z3.Int("k")
        monotone = z3.Implies(z3.And(s != 0, k >= 0, inside(k + 1)), inside(k))
        verdicts.append(_prove(z3.And(z3.Implies(s != 0, count), monotone),
                               f"Arange length ({'integer' if integer else 'real'} bounds)",
                               "z3"))
    return _first_failure(verdicts, "z3: modelled from the code")


# --- the adjoint ops: code run symbolically with symbolic attributes --------------------------

def _window_attrs(env: Env, prefix: str = "") -> dict[str, Any]:
    return {"strides": (env.var("sh"), env.var("sw")),
            "dilation": (env.var("dh"), env.var("dw")),
            "padding": (env.var("pt"), env.var("pl"), env.var("pb"), env.var("pr"))}


def _attr_side(env: Env, positive: Sequence[str]) -> z3.BoolRef:
    return z3.And(env.nonneg(), *[env.z[k] >= 1 for k in positive])


def _window_guard(env: Env, size: str, k: str, lo: str, hi: str, d: str) -> z3.BoolRef:
    """``window_out_dim``'s concrete-only guard, modelled: the dilated window fits the padded
    extent (``num >= 0``)."""
    z = env.z
    return z[size] + z[lo] + z[hi] - (z[d] * (z[k] - 1) + 1) >= 0


def conv2d_backward_weight_symbolic(rel: Relation | None = None) -> Verdict:
    """Data ``(n, G*q, h, w)``, grad ``(gn, G*p, oh, ow)``, symbolic ``kernel_size``, strides,
    dilation, padding and ``groups = G`` (the code's ``groups``-divides-channels checks are
    concrete-only: channel counts are written as multiples of G, and the non-divisible case
    is the bounded check's). The relation accepts iff conv2d with data and the weight
    ``(G*p, q, kh, kw)`` is defined and yields exactly grad's shape (the adjoint), and
    returns that weight shape."""
    rel = rel or get_op("nn.conv2d_backward_weight").relation
    env = Env()
    g, q, p = env.var("G"), env.var("q"), env.var("p")
    data = [env.var("n"), g * q, env.var("h"), env.var("w")]
    grad = [env.var("gn"), g * p, env.var("oh"), env.var("ow")]
    attrs = _normalized("nn.conv2d_backward_weight", {"kernel_size": (1, 1)})
    attrs.update(_window_attrs(env), kernel_size=(env.var("kh"), env.var("kw")), groups=g)
    run = run_symbolic(rel, [grad, data], attrs)
    acc, got, integral = _accepts(env, run)
    z = env.z
    guards = z3.And(_window_guard(env, "h", "kh", "pt", "pb", "dh"),
                    _window_guard(env, "w", "kw", "pl", "pr", "dw"))
    zattrs = dict(attrs, strides=(z["sh"], z["sw"]), dilation=(z["dh"], z["dw"]),
                  padding=(z["pt"], z["pl"], z["pb"], z["pr"]), groups=z["G"],
                  out_layout="")
    zdata = [z["n"], z["G"] * z["q"], z["h"], z["w"]]
    weight = [z["G"] * z["p"], z["q"], z["kh"], z["kw"]]
    ok, (out,) = s_conv2d([zdata, weight], zattrs)
    zgrad = [z["gn"], z["G"] * z["p"], z["oh"], z["ow"]]
    match = AND(*[o(gd) if callable(o) else o == gd for o, gd in zip(out, zgrad, strict=True)])
    pre = AND(ok, match)
    side = z3.And(_attr_side(env, ("G", "kh", "kw", "sh", "sw", "dh", "dw")), integral)
    claim = _equiv_claim(side, z3.And(acc, guards), pre, got, weight)
    v = _prove(claim, "Conv2DBackwardWeight (symbolic attributes)", "z3")
    if v.status != PROVED:
        return v
    return Verdict(PROVED, method="z3: code run symbolically on symbolic attributes, "
                                  "window guard modelled from the code")


def pool2d_grad_symbolic(rel: Relation | None = None) -> Verdict:
    """Data of symbolic shape, out_grad of symbolic shape, symbolic ``pool_size``, strides,
    dilation and padding, each ``ceil_mode`` and layout (NCHW, NHWC, and NCHW pooled to an
    NHWC ``out_layout``): the relation accepts iff out_grad has exactly the shape pool2d
    gives the data (the adjoint), and returns the data's shape."""
    rel = rel or get_op("nn.max_pool2d_grad").relation
    verdicts = []
    for ceil, (layout, out_layout) in itertools.product(
            (False, True), (("NCHW", ""), ("NHWC", ""), ("NCHW", "NHWC"))):
        env = Env()
        data = [env.var(f"d{i}") for i in range(4)]
        grad = [env.var(f"g{i}") for i in range(4)]
        attrs = _normalized("nn.max_pool2d_grad", {"pool_size": (1, 1), "ceil_mode": ceil,
                                                   "layout": layout, "out_layout": out_layout})
        attrs.update(_window_attrs(env), pool_size=(env.var("kh"), env.var("kw")))
        run = run_symbolic(rel, [grad, data], attrs)
        acc, got, integral = _accepts(env, run)
        z = env.z
        h, w = (f"d{layout.index(c)}" for c in "HW")
        guards = z3.And(_window_guard(env, h, "kh", "pt", "pb", "dh"),
                        _window_guard(env, w, "kw", "pl", "pr", "dw"))
        zattrs = dict(attrs, pool_size=(z["kh"], z["kw"]), strides=(z["sh"], z["sw"]),
                      dilation=(z["dh"], z["dw"]),
                      padding=(z["pt"], z["pl"], z["pb"], z["pr"]))
        zdata = [z[f"d{i}"] for i in range(4)]
        zgrad = [z[f"g{i}"] for i in range(4)]
        pre, (want,) = s_pool2d_grad([zgrad, zdata], zattrs)
        side = z3.And(_attr_side(env, ("kh", "kw", "sh", "sw", "dh", "dw")), integral)
        verdicts.append(_prove(_equiv_claim(side, z3.And(acc, guards), pre, got, want),
                               f"Pool2DGrad (ceil_mode={ceil}, layout={layout}, "
                               f"out_layout={out_layout!r})", "z3"))
    return _first_failure(verdicts, "z3: code run symbolically on symbolic attributes, "
                                    "window guard modelled from the code")


# --- the bounded link between the models and the code -----------------------------------------

def _concrete_result(rel: Relation, shapes: Sequence[Sequence[int]], attrs: dict[str, Any]
                     ) -> list[tuple[Any, ...]] | None:
    try:
        got = rel(tuple(TensorType(tuple(s), "float32") for s in shapes), Attrs(attrs))
    except RelayError:
        return None
    return _shapes_of(got)


def _diff_strided_slice(rel: Relation) -> str | None:
    values: list[int | None] = [None, -7, -6, -5, -3, -2, -1, 0, 1, 2, 3, 5, 6, 7]
    for n, b, e, s, size_mode in itertools.product(range(6), values, values,
                                                   (-3, -2, -1, 1, 2, 3), (False, True)):
        if size_mode and s != 1:
            continue
        attrs = {"begin": () if b is None else (b,), "end": () if e is None else (e,),
                 "strides": (s,), "axes": None, "slice_mode": "size" if size_mode else "end"}
        got = _concrete_result(rel, [[n]], attrs)
        ok, ext = strided_slice_model(n, b, e, s, size_mode)
        want = [(ext,)] if ok else None
        if got != want:
            return (f"StridedSlice on extent {n} with begin={b}, end={e}, stride={s}"
                    f"{' (size mode)' if size_mode else ''}: the relation gives {got} but the "
                    f"model gives {want}")
    return None


def _diff_squeeze_all(rel: Relation) -> str | None:
    for r in range(5):
        for dims in itertools.product(range(4), repeat=r):
            got = _concrete_result(rel, [list(dims)], {"axis": None})
            want = [tuple(d for d in dims if d != 1)]
            if got != want:
                return (f"Squeeze without axes on {dims}: the relation gives {got} but the "
                        f"model gives {want}")
    # the reason for the model: the code declines symbolic dims
    if _concrete_result(rel, [[shape_var("n")]], {"axis": None}) is not None:
        return "Squeeze without axes accepted a symbolic dim (the model assumes it declines)"
    return None


def _diff_arange() -> str | None:
    from semantics.ops.creation import arange_length

    op = get_op("arange")
    ints = range(-6, 7)
    for a, b, s in itertools.product(ints, ints, (-3, -2, -1, 0, 1, 2, 3)):
        arrays = [np.array(v, "int32") for v in (a, b, s)]
        try:
            got: int | None = arange_length(*arrays)
        except RelayError:
            got = None
        want = None if s == 0 else max(0, -((a - b) // s))
        if got != want:
            return f"arange({a}, {b}, {s}): arange_length gives {got}, the model {want}"
        if got is not None:
            out = op.impl(*arrays, dtype="int32")
            if np.shape(out) != (got,):
                return (f"arange({a}, {b}, {s}): the reference produces shape "
                        f"{np.shape(out)}, the model ({got},)")
    floats = (-2.5, -1.0, 0.0, 0.5, 3.0, 4.25)
    for fa, fb, fs in itertools.product(floats, floats, (-1.5, -0.5, 0.25, 2.0)):
        arrays = [np.array(v, "float32") for v in (fa, fb, fs)]
        gotf = arange_length(*arrays)
        wantf = max(0, math.ceil((fb - fa) / fs))
        if gotf != wantf or len(np.arange(fa, fb, fs)) != wantf:
            return (f"arange({fa}, {fb}, {fs}): arange_length gives {gotf}, numpy "
                    f"{len(np.arange(fa, fb, fs))}, the model {wantf}")
    return None


def _diff_window_ops(rel_name: str) -> str | None:
    """Pool2DGrad / Conv2DBackwardWeight on a seeded sample of concrete attributes and dims:
    the code agrees with the definition (which the symbolic proof showed equal to the path
    the code takes on symbolic values, guards included)."""
    case = BY_NAME[rel_name]
    rng = random.Random(f"differential-{rel_name}")
    configs = []
    for _ in range(12):
        at: dict[str, Any] = {"strides": (rng.randint(1, 3), rng.randint(1, 2)),
                              "dilation": (rng.randint(1, 2), rng.randint(1, 2)),
                              "padding": tuple(rng.randint(0, 2) for _ in range(4))}
        if rel_name == "Pool2DGrad":
            at.update(pool_size=(rng.randint(1, 3), rng.randint(1, 3)),
                      ceil_mode=rng.random() < 0.5)
        else:
            at.update(kernel_size=(rng.randint(1, 3), rng.randint(1, 3)),
                      groups=rng.choice((1, 2)))
        configs.append(Config(at, (4, 4), symbolic=False))
    import dataclasses
    v = check_case(dataclasses.replace(case, configs=tuple(configs), bound=3,
                                       max_instances=40))
    return None if v.status == PROVED else v.counterexample or v.detail


def _diff_broadcast_to(rel: Relation) -> str | None:
    """The case split's premise (``d == 1`` is the only concrete branch): on every input of
    rank <= 2 and target of rank <= 3 with dims in 0..3 the code agrees with the definition."""
    for rin, rout in itertools.product(range(3), range(4)):
        for dims in itertools.product(range(4), repeat=rin):
            for target in itertools.product(range(4), repeat=rout):
                got = _concrete_result(rel, [list(dims)], {"shape": target})
                pre, want = _bcast_spec(list(dims), list(target))
                expect = [tuple(want)] if pre else None
                if got != expect:
                    return (f"BroadcastTo of {dims} to {target}: the relation gives {got}, the "
                            f"definition {expect}")
    return None


def _diff_squeeze(rel: Relation) -> str | None:
    """Squeeze with axes on dims 0..2 (the path the symbolic run took is the concrete one),
    and without axes against its model (dims 0..3, ranks <= 4)."""
    for r in range(1, 4):
        for dims in itertools.product(range(3), repeat=r):
            for k in range(1, r + 1):
                for axes in itertools.combinations(range(r), k):
                    got = _concrete_result(rel, [list(dims)], {"axis": axes})
                    expect = ([tuple(d for i, d in enumerate(dims) if i not in axes)]
                              if all(dims[a] == 1 for a in axes) else None)
                    if got != expect:
                        return (f"Squeeze of {dims} with axis={axes}: the relation gives "
                                f"{got}, the definition {expect}")
    return _diff_squeeze_all(rel)


DIFFERENTIAL: dict[str, Callable[[], str | None]] = {
    "Arange": _diff_arange,
    "StridedSlice": lambda: _diff_strided_slice(get_op("strided_slice").relation),
    "Squeeze": lambda: _diff_squeeze(get_op("squeeze").relation),
    "Conv2DBackwardWeight": lambda: _diff_window_ops("Conv2DBackwardWeight"),
    "Pool2DGrad": lambda: _diff_window_ops("Pool2DGrad"),
    "BroadcastTo": lambda: _diff_broadcast_to(get_op("broadcast_to").relation),
}


def differential(relation: str) -> Verdict:
    """The bounded link between a relation's model and its code (see the module docstring)."""
    why = DIFFERENTIAL[relation]()
    if why is None:
        return Verdict(PROVED, method="differential")
    return Verdict(REFUTED, why, "differential")


PROOFS: dict[str, Callable[[], Verdict]] = {
    "Arange": arange_symbolic,
    "BroadcastTo": broadcast_to_symbolic,
    "Squeeze": lambda: _all_of(squeeze_axes_symbolic(), squeeze_all_symbolic()),
    "StridedSlice": strided_slice_symbolic,
    "Conv2DBackwardWeight": conv2d_backward_weight_symbolic,
    "Pool2DGrad": pool2d_grad_symbolic,
}


def _all_of(*verdicts: Verdict) -> Verdict:
    for v in verdicts:
        if v.status != PROVED:
            return v
    return Verdict(PROVED, method=" + ".join(v.method for v in verdicts))


def check(relation: str) -> Verdict:
    """The symbolic proof of ``relation`` and its differential link to the code.

    Returns:
        ``proved`` (method text says how), or the first refutation / unknown.
    """
    v = PROOFS[relation]()
    if v.status != PROVED:
        return v
    d = differential(relation)
    if d.status != PROVED:
        return d
    return Verdict(PROVED, method=v.method + " + differential")


__all__ = ["DIFFERENTIAL", "PROOFS", "Recorder", "SymbolicRun", "UNKNOWN", "check",
           "differential", "run_symbolic"]
