"""The checker behind relation-soundness obligations (one :class:`RelationCase` per relation).

A case states, *from the operator's definition* and without calling the relation's code, a
**specification**: for argument shapes ``s`` (lists of integer dims) and attributes, a
precondition ``pre(s)`` — the operator is defined on these shapes — and the result shapes
(``expected``: a list of shapes, one per result tensor; a dim may be :data:`ANY` when the
operator's result extent is only known at run time) or a relational postcondition.

The checker discharges two claims per attribute configuration:

1. **Symbolic (Z3)** — the registered relation is run on *shape variables* (SymPy symbols,
   one per input dim); its result dims are translated to Z3 and
   ``forall dims >= 0. pre(dims) -> result == expected`` is proved. Where the relation
   does not resolve symbolic dims (it answers ``?`` or asks for static dims), this part is
   skipped for that configuration and says so in the obligation's method.
2. **Bounded (exhaustive or sampled)** — on concrete dims in ``0..bound`` the relation
   accepts exactly when ``pre`` holds, its result equals ``expected``, and the operator's
   numpy reference implementation, run on arrays of those shapes, produces those shapes.

Counterexamples name the shapes, attributes, what the relation said and what the
specification says.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import z3

from proofs.core import PROVED, REFUTED, UNKNOWN, Verdict
from proofs.symbolic import as_int, to_z3
from semantics.errors import RelayError
from semantics.ops import get as get_op
from semantics.ops.registry import Relation
from semantics.shapes import ANY, is_any, shape_var
from semantics.types import TensorType, TupleType, Type

Dims = list[Any]           # z3 ArithRef or int per dim
Shapes = list[Dims]
Post = Callable[[Shapes], Any]
Spec = Callable[[Shapes, dict[str, Any]], tuple[Any, "Shapes | Post"]]


@dataclass(frozen=True)
class Config:
    """One attribute configuration: attributes, argument ranks, flags."""

    attrs: dict[str, Any]
    ranks: tuple[int, ...]
    symbolic: bool = True
    dtypes: tuple[str, ...] | None = None
    ties: tuple[tuple[int, int, int, int], ...] = ()


@dataclass(frozen=True)
class RelationCase:
    """The soundness obligation of one registered relation.

    ``op`` is an operator using the relation (its reference implementation is the
    cross-check); ``tuple_input`` passes the tensors as one tuple argument (concatenate,
    stack); ``fixed`` maps ``(arg, axis)`` to a dim value held fixed in the bounded part
    (e.g. a scalar's empty shape needs none; a layout's block needs 4).
    """

    relation: str
    op: str
    spec: Spec
    configs: tuple[Config, ...]
    tuple_input: bool = False
    bound: int = 3
    max_instances: int = 160
    reference: bool = True
    ref_inputs: Callable[[list[tuple[int, ...]], tuple[str, ...]], list[Any]] | None = None
    ref_when: Callable[[list[list[int]], dict[str, Any]], bool] | None = None
    note: str = ""


def AND(*xs: Any) -> Any:
    """Conjunction of Python or Z3 booleans (Python when all are Python)."""
    if all(isinstance(x, bool) for x in xs):
        return all(xs)
    return z3.And(*[z3.BoolVal(x) if isinstance(x, bool) else x for x in xs])


def OR(*xs: Any) -> Any:
    """Disjunction of Python or Z3 booleans."""
    if all(isinstance(x, bool) for x in xs):
        return any(xs)
    return z3.Or(*[z3.BoolVal(x) if isinstance(x, bool) else x for x in xs])


def NOT(x: Any) -> Any:
    return (not x) if isinstance(x, bool) else z3.Not(x)


def IMPLIES(a: Any, b: Any) -> Any:
    return OR(NOT(a), b)


def IF(c: Any, a: Any, b: Any) -> Any:
    """``a if c else b`` for Python or Z3 values."""
    if isinstance(c, bool):
        return a if c else b
    return z3.If(c, a, b)


def EQ(a: Any, b: Any) -> Any:
    return a == b


def PROD(xs: Sequence[Any]) -> Any:
    out: Any = 1
    for x in xs:
        out = out * x
    return out


def _truth(x: Any) -> bool:
    if isinstance(x, bool):
        return x
    r = z3.simplify(x)
    if z3.is_true(r):
        return True
    if z3.is_false(r):
        return False
    s = z3.Solver()
    s.add(z3.Not(x))
    return s.check() == z3.unsat


def _result_shapes(t: Type | None) -> list[tuple[Any, ...]] | None:
    if isinstance(t, TensorType):
        return [tuple(t.shape)]
    if isinstance(t, TupleType):
        out = []
        for f in t.fields:
            if not isinstance(f, TensorType):
                return None
            out.append(tuple(f.shape))
        return out
    return None


def _arg_types(case: RelationCase, cfg: Config, shapes: Sequence[Sequence[Any]]) -> tuple[Type,
                                                                                          ...]:
    dtypes = cfg.dtypes or ("float32",) * len(shapes)
    ts = tuple(TensorType(tuple(s), d) for s, d in zip(shapes, dtypes, strict=True))
    if case.tuple_input:
        return (TupleType(ts),)
    return ts


def _fmt_shapes(shapes: Sequence[Sequence[Any]]) -> str:
    return ", ".join("(" + ", ".join(str(d) for d in s) + ")" for s in shapes)


def _fmt_attrs(attrs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in attrs.items()) or "defaults"


def _compare(expected: Shapes | Post, got: list[tuple[Any, ...]]) -> Any:
    """The claim that ``got`` meets the specification (Python bool or Z3 formula)."""
    if callable(expected):
        return expected([list(s) for s in got])
    if len(expected) != len(got):
        return False
    parts: list[Any] = []
    for e, g in zip(expected, got, strict=True):
        if len(e) != len(g):
            return False
        for ed, gd in zip(e, g, strict=True):
            if callable(ed) and gd is not ANY:
                parts.append(ed(gd))
            elif ed is ANY or gd is ANY or callable(ed):
                parts.append(ed is ANY and gd is ANY)
            else:
                parts.append(ed == gd)
    return AND(*parts) if parts else True


def check_case(case: RelationCase, relation: Relation | None = None) -> Verdict:
    """Discharge ``case`` against the registered relation (or against ``relation``).

    Returns:
        ``proved`` when both parts hold for every configuration; ``refuted`` with the
        first counterexample otherwise; ``unknown`` when Z3 gives up.
    """
    op = get_op(case.op)
    rel = relation or op.relation
    methods: set[str] = set()
    symbolic_done = 0
    for cfg in case.configs:
        attrs = dict(op.normalize_attrs(cfg.attrs)) if _attrs_ok(op, cfg.attrs) else None
        if attrs is None:
            return Verdict(UNKNOWN, "", "error", f"bad attributes in case: {cfg.attrs}")
        if cfg.symbolic:
            v = _symbolic(case, cfg, rel, attrs)
            if v.status != PROVED:
                return v
            symbolic_done += v.method == "z3"
        v = _bounded(case, cfg, rel, op, attrs, relation is None)
        if v.status != PROVED:
            return v
        methods.add(v.method)
    parts = [f"z3 {symbolic_done}/{len(case.configs)} configs"] if symbolic_done else []
    return Verdict(PROVED, method=" + ".join(parts + sorted(methods)))


def _attrs_ok(op: Any, attrs: dict[str, Any]) -> bool:
    try:
        op.normalize_attrs(attrs)
        return True
    except RelayError:
        return False


def _symbolic(case: RelationCase, cfg: Config, rel: Relation, attrs: dict[str, Any]) -> Verdict:
    names = [[f"a{i}_{j}" for j in range(r)] for i, r in enumerate(cfg.ranks)]
    for a, i, b, j in cfg.ties:     # the symbolic instance shares these dims
        names[b][j] = names[a][i]
    sym = [[shape_var(n) for n in row] for row in names]
    env = {n: z3.Int(n) for row in names for n in row}
    zdims: Shapes = [[env[n] for n in row] for row in names]
    nonneg = AND(*[v >= 0 for v in env.values()]) if env else True
    pre, expected = case.spec(zdims, attrs)
    try:
        got_t = rel(_arg_types(case, cfg, sym), _attrs_obj(attrs))
    except RelayError:
        return Verdict(PROVED, method="declined")   # symbolic typing declined: bounded only
    got = _result_shapes(got_t)
    if got is None:
        return Verdict(REFUTED, f"relation {rel.name} on symbolic shapes "
                                f"{_fmt_shapes(sym)} with {_fmt_attrs(cfg.attrs)} gave {got_t}",
                       "z3")
    if any(is_any(d) for s in got for d in s):
        return Verdict(PROVED, method="declined")   # ? results: decided at run time only
    zgot: list[tuple[Any, ...]] = []
    integral: list[Any] = []
    for s in got:
        row = []
        for d in s:
            t, ok = as_int(to_z3(d, env))
            row.append(t)
            integral.append(ok)
        zgot.append(tuple(row))
    claim = IMPLIES(AND(nonneg, pre), AND(*integral, _compare(expected, zgot)))
    if isinstance(claim, bool):
        return Verdict(PROVED if claim else REFUTED,
                       "" if claim else f"{rel.name}: result rank/arity differs from the "
                                        f"specification for {_fmt_attrs(cfg.attrs)}", "z3")
    s = z3.Solver()
    s.set("timeout", 20000)
    s.add(z3.Not(claim))
    r = s.check()
    if r == z3.unsat:
        return Verdict(PROVED, method="z3")
    if r == z3.unknown:
        return Verdict(UNKNOWN, "", "z3", f"solver: {s.reason_unknown()}")
    m = s.model()
    conc = [[m.eval(v, model_completion=True).as_long() for v in row] for row in zdims]
    said = [[m.eval(d, model_completion=True) for d in r] for r in zgot]
    return Verdict(REFUTED, f"{rel.name} with {_fmt_attrs(cfg.attrs)}: for input shapes "
                            f"{_fmt_shapes(conc)} the relation gives {_fmt_shapes(said)}"
                            f" but the operator's definition gives "
                            f"{_describe_expected(case, conc, attrs)}", "z3")


def _describe_expected(case: RelationCase, conc: Shapes, attrs: dict[str, Any]) -> str:
    """The specification's result for concrete shapes, as text."""
    pre, expected = case.spec([list(r) for r in conc], attrs)
    if not _truth(pre):
        return "no result (the operator is not defined there)"
    if callable(expected):
        return "a different shape (postcondition violated)"
    return _fmt_shapes([[_concrete(d) for d in row] for row in expected])


def _concrete(d: Any) -> Any:
    if callable(d):
        for v in range(0, 256):
            if _truth(d(v)):
                return v
        return "(none below 256)"
    if d is ANY or isinstance(d, int):
        return d
    return z3.simplify(d)


def _attrs_obj(attrs: dict[str, Any]) -> Any:
    from semantics.expr import Attrs
    return Attrs(attrs)


def _instances(case: RelationCase, cfg: Config) -> list[list[list[int]]]:
    total = sum(cfg.ranks)
    values = range(case.bound + 1)
    count = len(values) ** total
    if count <= case.max_instances:
        flat = list(itertools.product(values, repeat=total))
    else:
        rng = random.Random(f"{case.relation}{cfg.attrs}{cfg.ranks}")
        flat = [tuple(rng.choice(values) for _ in range(total)) for _ in range(case.max_instances)]
    out = []
    for f in flat:
        shapes, k = [], 0
        for r in cfg.ranks:
            shapes.append(list(f[k:k + r]))
            k += r
        out.append(shapes)
    return out


def _bounded(case: RelationCase, cfg: Config, rel: Relation, op: Any, attrs: dict[str, Any],
             with_reference: bool) -> Verdict:
    total = sum(cfg.ranks)
    exhaustive = (case.bound + 1) ** total <= case.max_instances
    method = "bounded-exhaustive" if exhaustive else "bounded-sampled"
    dtypes = cfg.dtypes or ("float32",) * len(cfg.ranks)
    ref_runs = 0
    for shapes in _instances(case, cfg):
        pre, expected = case.spec([list(s) for s in shapes], attrs)
        defined = _truth(pre)
        try:
            got_t = rel(_arg_types(case, cfg, shapes), _attrs_obj(attrs))
            error = ""
        except RelayError as exc:
            got_t, error = None, str(exc)
        where = f"{rel.name} with {_fmt_attrs(cfg.attrs)} on shapes {_fmt_shapes(shapes)}"
        if got_t is None and defined:
            return Verdict(REFUTED, f"{where}: the relation rejects ({error}) but the operator "
                                    "is defined there", method)
        if got_t is None:
            continue
        got = _result_shapes(got_t)
        if not defined:
            return Verdict(REFUTED, f"{where}: the relation accepts (giving {got_t}) but the "
                                    "operator is not defined there", method)
        if got is None or not _truth(_compare(expected, got)):
            return Verdict(REFUTED, f"{where}: the relation gives "
                                    f"{_fmt_shapes(got) if got else got_t} but the operator's "
                                    f"definition gives "
                                    f"{_describe_expected(case, shapes, attrs)}", method)
        if with_reference and case.reference and ref_runs < 24 and got is not None \
                and not any(is_any(d) for s in got for d in s) \
                and (case.ref_when is None or case.ref_when(shapes, attrs)):
            ref_runs += 1
            v = _reference_check(case, op, shapes, dtypes, attrs, got, where)
            if v is not None:
                return v
    return Verdict(PROVED, method=method)


def _reference_check(case: RelationCase, op: Any, shapes: list[list[int]], dtypes: tuple[str, ...],
                     attrs: dict[str, Any], got: list[tuple[Any, ...]], where: str
                     ) -> Verdict | None:
    if case.ref_inputs is not None:
        arrays = case.ref_inputs([tuple(s) for s in shapes], dtypes)
    else:
        arrays = [np.zeros(tuple(s), dtype=d) for s, d in zip(shapes, dtypes, strict=True)]
    if case.tuple_input:
        arrays = [tuple(arrays)]
    try:
        out = op.impl(*arrays, **attrs)
    except Exception as exc:   # the reference failing where the relation accepts is a finding
        return Verdict(REFUTED, f"{where}: the relation accepts but the reference "
                                f"implementation of {op.name} raises {type(exc).__name__}: "
                                f"{exc}", "reference")
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    ref_shapes = [tuple(np.shape(o)) for o in outs]
    if [tuple(int(d) for d in s) for s in got] != ref_shapes:
        return Verdict(REFUTED, f"{where}: the relation gives {_fmt_shapes(got)} but the "
                                f"reference implementation of {op.name} produces "
                                f"{_fmt_shapes(ref_shapes)}", "reference")
    return None


__all__ = ["AND", "ANY", "Config", "EQ", "IF", "IMPLIES", "NOT", "OR", "PROD", "RelationCase",
           "check_case", "PROVED", "REFUTED", "UNKNOWN"]
