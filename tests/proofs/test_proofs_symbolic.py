"""proofs.relations_symbolic and the symbolic-extent rewrites: the six relations proved over
symbolic dims and attributes, deliberately wrong relations/models refuted with readable
counterexamples, the models agreeing with the code on drawn concrete values."""

from __future__ import annotations

import numpy as np
import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

import proofs
from proofs import relations_symbolic as RS
from proofs import rewrites
from proofs.core import PROVED, REFUTED
from semantics import ops
from semantics.expr import Attrs
from semantics.ops.registry import Relation
from semantics.shapes import shape_var
from semantics.types import TensorType

SIX = ("Arange", "BroadcastTo", "Squeeze", "StridedSlice", "Conv2DBackwardWeight", "Pool2DGrad")


@pytest.mark.parametrize("name", SIX)
def test_the_six_relations_are_proved_symbolically_not_only_bounded(name):
    (ob,) = proofs.run(only=f"relation.{name}")
    assert ob.status == PROVED, ob.counterexample
    assert ob.method.startswith("z3"), ob.method          # a symbolic proof leads the method
    assert "differential" in ob.method                    # and the bounded link to the code


def test_every_symbolic_proof_has_its_differential_link():
    assert set(RS.PROOFS) == set(SIX) == set(RS.DIFFERENTIAL)


def test_recorder_turns_requirements_into_equations():
    n, m = shape_var("n"), shape_var("m")
    run = RS.run_symbolic(ops.get("broadcast_to").relation, [[n]], {"shape": (m,)})
    assert run.result == [(m,)]
    assert run.required == [(n, m)]
    rejected = RS.run_symbolic(ops.get("squeeze").relation, [[n]], {"axis": (3,)})
    assert rejected.result is None and "out of range" in rejected.error


# --- deliberately wrong relations, run symbolically, are refuted ---

def _wrapping(name: str, fn) -> Relation:
    return Relation(name, fn)


def test_broadcast_to_that_forgets_the_size_one_rule_is_refuted():
    def exact(arg_types, attrs, solver):
        (t,) = arg_types
        shape = tuple(attrs["shape"])
        if len(t.shape) > len(shape):
            return None
        for d, s in zip(t.shape, shape[len(shape) - len(t.shape):]):
            solver.require_equal(d, s, "axis")          # no exception for a 1
        return TensorType(shape, t.dtype)

    v = RS.broadcast_to_symbolic(_wrapping("BroadcastTo", exact))
    assert v.status == REFUTED
    assert v.counterexample.startswith("BroadcastTo, input rank 1 (dims ['1']), target rank 1")
    assert "t0 = " in v.counterexample


def test_squeeze_that_does_not_check_the_axis_is_one_is_refuted():
    real = ops.get("squeeze").relation

    def lax(arg_types, attrs, solver):
        (t,) = arg_types
        if not all(-t.ndim <= a < t.ndim for a in attrs["axis"]):
            return real(arg_types, attrs, solver)           # the range check is kept
        gone = {a % t.ndim for a in attrs["axis"]}
        return TensorType(tuple(d for i, d in enumerate(t.shape) if i not in gone), t.dtype)

    v = RS.squeeze_axes_symbolic(_wrapping("Squeeze", lax), max_rank=2)
    assert v.status == REFUTED
    assert v.counterexample.startswith("Squeeze, rank 1, axis=(0,): d0 = ")
    assert not v.counterexample.endswith("d0 = 1")


def test_pool2d_grad_that_ignores_ceil_mode_is_refuted():
    real = ops.get("nn.max_pool2d_grad").relation

    def no_ceil(arg_types, attrs, solver):
        return real(arg_types, Attrs({**dict(attrs), "ceil_mode": False}), solver)

    v = RS.pool2d_grad_symbolic(_wrapping("Pool2DGrad", no_ceil))
    assert v.status == REFUTED
    assert v.counterexample.startswith("Pool2DGrad (ceil_mode=True")
    assert "sh = " in v.counterexample


def test_conv2d_backward_weight_that_ignores_dilation_is_refuted():
    real = ops.get("nn.conv2d_backward_weight").relation

    def no_dilation(arg_types, attrs, solver):
        return real(arg_types, Attrs({**dict(attrs), "dilation": (1, 1)}), solver)

    v = RS.conv2d_backward_weight_symbolic(_wrapping("Conv2DBackwardWeight", no_dilation))
    assert v.status == REFUTED
    assert v.counterexample.startswith("Conv2DBackwardWeight (symbolic attributes): ")
    assert "dh = " in v.counterexample or "dw = " in v.counterexample


# --- deliberately wrong models are refuted; a wrong relation fails the differential link ---

def test_strided_slice_model_clamping_negative_strides_like_positive_ones_is_refuted():
    def wrong_clamp(i, n, s):
        v = RS.IF(i < 0, i + n, i)
        return RS._imin(RS._imax(v, 0), n)

    def model(n, b, e, s, size_mode):
        saved = RS.canonicalize_index_model
        RS.canonicalize_index_model = wrong_clamp
        try:
            return RS.strided_slice_model(n, b, e, s, size_mode)
        finally:
            RS.canonicalize_index_model = saved

    v = RS.strided_slice_symbolic(model)
    assert v.status == REFUTED
    assert v.counterexample.startswith("StridedSlice (end mode")
    assert "stride = -" in v.counterexample


def test_strided_slice_relation_off_by_one_fails_the_differential_link():
    real = ops.get("strided_slice").relation

    def off_by_one(arg_types, attrs, solver):
        t = real(arg_types, attrs, solver)
        return TensorType(tuple(d + 1 if d == 3 else d for d in t.shape), t.dtype)

    why = RS._diff_strided_slice(_wrapping("StridedSlice", off_by_one))
    assert why is not None and "the relation gives [(4,)] but the model gives [(3,)]" in why


def test_arange_model_with_floor_instead_of_ceil_is_refuted():
    def floor_model(a, b, s, integer):
        q = z3.ToInt(z3.ToReal(b - a) / z3.ToReal(s)) if integer else z3.ToInt((b - a) / s)
        return z3.If(q > 0, q, 0)

    v = RS.arange_symbolic(floor_model)
    assert v.status == REFUTED
    assert v.counterexample.startswith("Arange length (integer bounds): ")
    assert "step = " in v.counterexample


def test_squeeze_model_dropping_zeros_too_is_refuted():
    def drops_zeros(dims):
        out = z3.K(z3.IntSort(), z3.IntVal(0))
        n = z3.IntVal(0)
        for d in dims:
            keep = z3.And(d != 1, d != 0)
            out = z3.If(keep, z3.Store(out, n, d), out)
            n = z3.If(keep, n + 1, n)
        return n, out

    v = RS.squeeze_all_symbolic(max_rank=2, model=drops_zeros)
    assert v.status == REFUTED and v.counterexample.startswith("Squeeze without axes, rank 1")


# --- the models agree with the code on drawn values (the bounded link, as properties) ---

@settings(max_examples=300, deadline=None)
@given(st.integers(0, 40), st.one_of(st.none(), st.integers(-50, 50)),
       st.one_of(st.none(), st.integers(-50, 50)),
       st.integers(-7, 7).filter(lambda s: s != 0), st.booleans())
def test_strided_slice_model_matches_the_relation(n, b, e, s, size_mode):
    attrs = {"begin": () if b is None else (b,), "end": () if e is None else (e,),
             "strides": (s,), "axes": None, "slice_mode": "size" if size_mode else "end"}
    got = RS._concrete_result(ops.get("strided_slice").relation, [[n]], attrs)
    ok, ext = RS.strided_slice_model(n, b, e, s, size_mode)
    assert got == ([(ext,)] if ok else None)
    if ok and not size_mode and b is not None and e is not None:
        assert ext == len(range(n)[b:e:s])           # Python's own slicing agrees


@settings(max_examples=300, deadline=None)
@given(st.integers(-1000, 1000), st.integers(-1000, 1000),
       st.integers(-50, 50).filter(lambda s: s != 0))
def test_arange_model_matches_numpy(a, b, s):
    from semantics.ops.creation import arange_length

    n = arange_length(np.array(a, "int64"), np.array(b, "int64"), np.array(s, "int64"))
    assert n == len(np.arange(a, b, s)) == max(0, -((a - b) // s))


# --- rewrites over symbolic extents ---

def test_sum_identity_refutes_a_wrong_summand_with_the_point():
    x = rewrites.tensor("x", 1)
    v = z3.Real("v")
    verdict = rewrites.sum_identity(lambda k: x(k) * v, lambda k: x(k), where="scaled sum")
    assert verdict.status == REFUTED
    assert verdict.counterexample.startswith("scaled sum: summand k: ")
    assert "v = " in verdict.counterexample


def test_symbolic_block_layout_transform_with_an_offset_is_refuted():
    v = rewrites.blocked_bijection(None, wrong=True)
    assert v.status == REFUTED and "b = " in v.counterexample


@pytest.mark.parametrize("name", ["fold_scale_axis.backward_conv2d",
                                  "fold_scale_axis.forward_conv2d",
                                  "fold_scale_axis.forward_relu_conv2d",
                                  "fold_scale_axis.backward_dense",
                                  "fold_scale_axis.forward_dense",
                                  "combine_parallel_conv2d.split"])
def test_reduction_rewrites_are_proved_by_induction_over_the_extent(name):
    (ob,) = proofs.run(only=f"rewrite.{name}")
    assert ob.status == PROVED and ob.method == "z3-induction"


# --- type soundness with binders: deliberately wrong rules are refuted ---

def test_match_without_equal_clause_types_breaks_preservation():
    from proofs import soundness_binders as SB

    v = SB.preservation(broken="match")
    assert v.status == REFUTED
    assert v.counterexample.startswith("preservation fails for Match(...) with Match_0 = In")


def test_substitution_that_forgets_to_shift_is_refuted_at_a_variable():
    from proofs import soundness_binders as SB

    v = SB.substitution(broken="subst")
    assert v.status == REFUTED
    assert v.counterexample.startswith("substitution fails for Var(...) with Var_0 = ")


def test_binder_soundness_obligations_are_registered_and_proved():
    picked = proofs.run(only="soundness.binders")
    assert {o.name.split(".")[-1] for o in picked} == {
        "lookup_append", "lookup_remove", "weakening", "substitution", "progress",
        "preservation"}
    assert all(o.status == PROVED and o.method == "z3-induction" for o in picked)


def test_fix_without_the_body_type_premise_breaks_preservation():
    from proofs import soundness_binders as SB

    v = SB.preservation(broken="fix")
    assert v.status == REFUTED
    assert v.counterexample.startswith("preservation fails for Fix(...) with Fix_0 = ")


# --- the symbolic path equals the concrete path (drawn attributes, wider than the grid) ---

def _substituted(run, values):
    """The symbolic run's acceptance and result at concrete values of its variables."""
    import sympy

    subs = {shape_var(k): v for k, v in values.items()}

    def num(d):
        return int(sympy.sympify(d).subs(subs)) if not isinstance(d, int) else d
    accepted = all(num(a) == num(b) for a, b in run.required)
    return accepted, [tuple(num(d) for d in s) for s in run.result]


_POOL_RUNS: dict = {}


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.integers(1, 4),
       st.integers(1, 3), st.integers(1, 3), st.lists(st.integers(0, 3), min_size=4,
                                                         max_size=4),
       st.integers(0, 12), st.integers(0, 12), st.booleans(), st.integers(-1, 1))
def test_pool2d_grad_symbolic_path_is_the_concrete_path(kh, kw, sh, sw, dh, dw, pads, h, w,
                                                        ceil, nudge):
    rel = ops.get("nn.max_pool2d_grad").relation
    names = {"kh": kh, "kw": kw, "sh": sh, "sw": sw, "dh": dh, "dw": dw, "pt": pads[0],
             "pl": pads[1], "pb": pads[2], "pr": pads[3], "d0": 1, "d1": 2, "d2": h, "d3": w}
    attrs = dict(ops.get("nn.max_pool2d_grad").normalize_attrs(
        {"pool_size": (kh, kw), "strides": (sh, sw), "dilation": (dh, dw), "padding": pads,
         "ceil_mode": ceil}))
    sym_attrs = dict(attrs, pool_size=(shape_var("kh"), shape_var("kw")),
                     strides=(shape_var("sh"), shape_var("sw")),
                     dilation=(shape_var("dh"), shape_var("dw")),
                     padding=tuple(shape_var(p) for p in ("pt", "pl", "pb", "pr")))
    data = [shape_var(f"d{i}") for i in range(4)]
    # the grad shape: pool2d's answer (from the concrete Pool2D relation), nudged
    fits = all(ext + lo + hi - (d * (k - 1) + 1) >= 0 for ext, k, d, lo, hi in
               ((h, kh, dh, pads[0], pads[2]), (w, kw, dw, pads[1], pads[3])))
    pooled = ops.get("nn.max_pool2d").relation(
        (TensorType((1, 2, h, w), "float32"),), Attrs(dict(
            ops.get("nn.max_pool2d").normalize_attrs({
                "pool_size": (kh, kw), "strides": (sh, sw), "dilation": (dh, dw),
                "padding": pads, "ceil_mode": ceil})))) if fits else None
    gh, gw = (pooled.shape[2], pooled.shape[3]) if pooled is not None else (1, 1)
    grad = [1, 2, max(0, gh + nudge), gw]
    names.update({f"g{i}": g for i, g in enumerate(grad)})
    if ceil not in _POOL_RUNS:                    # the symbolic run depends on ceil_mode only
        _POOL_RUNS[ceil] = RS.run_symbolic(rel, [[shape_var(f"g{i}") for i in range(4)], data],
                                           sym_attrs)
    accepted, result = _substituted(_POOL_RUNS[ceil], names)
    accepted = accepted and fits                  # the guard the symbolic path cannot take
    concrete = RS._concrete_result(rel, [grad, [1, 2, h, w]], attrs)
    assert (concrete is not None) == accepted
    if accepted:
        assert concrete == result
