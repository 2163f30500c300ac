"""proofs/: every obligation proved; every relation covered; wrong relations, rewrites and
typing rules refuted with readable counterexamples; ``relay prove``."""

from __future__ import annotations

import dataclasses

import pytest
import sympy
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

import proofs
from proofs import relations, rewrites, soundness
from proofs.core import PROVED, REFUTED
from proofs.relcheck import Config, RelationCase, check_case
from proofs.runner import registered
from proofs.symbolic import as_int, to_z3
from relay.cli import main
from semantics import ops
from semantics.ops.registry import Relation
from semantics.shapes import shape_var
from semantics.types import TensorType

# The relations this suite covers. An operator family that registers a new relation adds a
# RelationCase to proofs.relations.CASES and its name here.
KNOWN_RELATIONS = frozenset({
    "Arange", "ArgReduce", "BatchFlatten", "BatchMatmul", "BatchNorm", "BiasAdd", "Broadcast",
    "BroadcastBitwise", "BroadcastCompare", "BroadcastShift", "BroadcastTo", "BroadcastToLike",
    "Cast", "Clip", "CollapseSumLike",
    "Concatenate", "Conv2D", "Conv2DBackwardWeight", "Conv2DTranspose", "Conv2DWinograd",
    "Conv2DWinogradWeightTransform", "Dense", "Dropout",
    "ExpandDims", "Full", "FullLike", "GlobalPool2D", "Identity", "InitOp", "LayoutTransform",
    "LRN", "Pad", "Pool2D", "Pool2DGrad", "Pool2DPick", "Reduce", "Repeat", "Reshape",
    "ReshapeLike",
    "Reverse", "ShapeOf", "SimulatedQuantize", "Softmax", "Split", "Squeeze", "Stack",
    "StridedSlice", "Take",
    "Tile", "Transpose", "Variance", "Where",
    "AllocStorage", "AllocTensor", "Kill", "ReshapeTensor",   # proofs/relations_memory.py
})

NAMES = sorted(registered())


# --- every obligation is proved ---

@pytest.mark.parametrize("name", NAMES)
def test_obligation_is_proved(name):
    (ob,) = proofs.run(only=name)
    assert ob.name == name
    assert ob.status == PROVED, (ob.counterexample, ob.detail)
    assert ob.counterexample == ""


def test_completeness_every_registered_relation_has_an_obligation():
    in_registry = {ops.get(n).relation.name for n in ops.list_ops()}
    assert relations.COVERED == KNOWN_RELATIONS
    missing = in_registry - relations.COVERED
    assert not missing, f"relations without a soundness obligation: {sorted(missing)}"
    for rel in in_registry:
        assert f"relation.{rel}" in registered()


def test_every_class_is_present_and_run_selects_by_prefix():
    classes = {n.split(".")[0] for n in NAMES}
    assert classes == {"quantize", "relation", "rewrite", "soundness"}
    picked = proofs.run(only="rewrite.fold_scale_axis")
    assert picked and all(o.name.startswith("rewrite.fold_scale_axis.") for o in picked)
    assert all(isinstance(o, proofs.Obligation) and o.seconds >= 0 for o in picked)
    with pytest.raises(KeyError):
        proofs.run(only="no.such.obligation")


# --- deliberately wrong relations are refuted ---

def _variant(name: str, fn) -> Relation:
    return Relation(name, fn)


def test_wrong_conv2d_relation_forgetting_dilation_is_refuted_by_z3():
    real = ops.get("nn.conv2d").relation

    def forgets_dilation(arg_types, attrs, solver):
        return real(arg_types, attrs.with_updates(dilation=(1, 1))
                    if hasattr(attrs, "with_updates") else
                    type(attrs)({**dict(attrs), "dilation": (1, 1)}), solver)

    v = check_case(relations.BY_NAME["Conv2D"], _variant("Conv2D", forgets_dilation))
    assert v.status == REFUTED
    assert "Conv2D with strides=(2, 1)" in v.counterexample
    assert "the relation gives" in v.counterexample
    assert "operator's definition gives" in v.counterexample


def test_wrong_broadcast_relation_accepting_mismatched_dims_is_refuted():
    def sloppy(arg_types, attrs, solver):
        a, b = arg_types
        n = max(a.ndim, b.ndim)
        sa = (1,) * (n - a.ndim) + tuple(a.shape)
        sb = (1,) * (n - b.ndim) + tuple(b.shape)
        return TensorType(tuple(max(x, y) for x, y in zip(sa, sb)), a.dtype)

    v = check_case(relations.BY_NAME["Broadcast"], _variant("Broadcast", sloppy))
    assert v.status == REFUTED
    assert "accepts" in v.counterexample and "not defined" in v.counterexample


def test_wrong_pool_relation_ignoring_ceil_mode_is_refuted():
    real = ops.get("nn.max_pool2d").relation

    def no_ceil(arg_types, attrs, solver):
        return real(arg_types, type(attrs)({**dict(attrs), "ceil_mode": False}), solver)

    v = check_case(relations.BY_NAME["Pool2D"], _variant("Pool2D", no_ceil))
    assert v.status == REFUTED
    assert "ceil_mode=True" in v.counterexample


def test_wrong_split_relation_not_checking_divisibility_is_refuted():
    real = ops.get("split").relation

    def lax(arg_types, attrs, solver):
        (t,) = arg_types
        if isinstance(attrs["indices_or_sections"], int) and all(isinstance(d, int)
                                                                  for d in t.shape):
            axis = attrs["axis"] % t.ndim
            k = attrs["indices_or_sections"]
            shape = list(t.shape)
            shape[axis] = shape[axis] // k
            from semantics.types import TupleType
            return TupleType(tuple(TensorType(tuple(shape), t.dtype) for _ in range(k)))
        return real(arg_types, attrs, solver)

    v = check_case(relations.BY_NAME["Split"], _variant("Split", lax))
    assert v.status == REFUTED and "not defined" in v.counterexample


# --- deliberately wrong rewrites are refuted ---

@pytest.mark.parametrize("wrong, expect", [
    (lambda: rewrites.fold_through_relu(wrong=True), "s = -"),
    (lambda: rewrites.fold_backward_bias(wrong=True), "b = "),
    (lambda: rewrites.fold_forward_conv(wrong=True), "og = "),
    (lambda: rewrites.canon_bias_add(wrong=True), "a = 0"),
    (lambda: rewrites.simplify_batch_norm(wrong=True), "mean = "),
    (lambda: rewrites.combine_split(wrong=True), "offsets: N = "),
    (lambda: rewrites.blocked_bijection(4, wrong=True), "Ctotal = "),
    (lambda: rewrites.fold_if(wrong=True), "c = "),
])
def test_wrong_rewrite_is_refuted_with_a_counterexample(wrong, expect):
    v = wrong()
    assert v.status == REFUTED
    assert expect in v.counterexample, v.counterexample


def test_every_rewrite_obligation_names_a_rule_of_its_pass():
    import importlib

    assert set(rewrites.PASS_RULES) == set(rewrites.REWRITES)
    for name, rule in rewrites.PASS_RULES.items():
        module = importlib.import_module("passes." + name.split(".")[0])
        assert rule in (module.__doc__ or ""), (name, rule)


def test_relu_counterexample_is_a_real_counterexample():
    v = rewrites.fold_through_relu(wrong=True)
    values = dict(part.split(" = ") for part in v.counterexample.split(", "))
    y, s = float(sympy.Rational(values["y"])), float(sympy.Rational(values["s"]))
    assert max(y, 0) * s != max(y * s, 0)


# --- deliberately wrong typing rule is refuted ---

def test_type_if_without_equal_branches_breaks_preservation():
    v = soundness._induction("preservation", broken="If")
    assert v.status == REFUTED
    assert v.counterexample.startswith("preservation fails for If(...)")
    assert soundness._induction("progress").status == PROVED


def test_bounded_soundness_check_reports_the_failing_program(monkeypatch, no_shrinking):
    import conformance.harness as harness

    monkeypatch.setattr(harness, "value_has_type", lambda value, ty, module=None: False)
    v = soundness.bounded_check(count=3)
    assert v.status == REFUTED
    assert v.counterexample.startswith("preservation: value ")
    assert "def @main" in v.counterexample


# --- the SymPy -> Z3 translation ---

@settings(max_examples=200)
@given(st.integers(0, 40), st.integers(0, 40), st.integers(1, 6), st.integers(-5, 5))
def test_translation_agrees_with_sympy(a, b, k, c):
    n, m = shape_var("n"), shape_var("m")
    env = {"n": z3.Int("n"), "m": z3.Int("m")}
    exprs = [sympy.floor((n + c) / k) + 1, sympy.floor((n - m) / k), sympy.Mod(n + m, k),
             n * m + c, sympy.ceiling(n / k), sympy.Max(n, m) - sympy.Min(n, m + c)]
    for e in exprs:
        want = e.subs({n: a, m: b})
        term, integral = as_int(to_z3(e, env))
        s = z3.Solver()
        s.add(env["n"] == a, env["m"] == b)
        assert s.check() == z3.sat
        model = s.model()
        assert z3.is_true(model.eval(integral, model_completion=True))
        assert model.eval(term, model_completion=True).as_long() == int(want), e


# --- relation obligations over drawn attribute configurations ---

@settings(max_examples=25, deadline=None)
@given(st.tuples(st.integers(1, 3), st.integers(1, 3)), st.tuples(st.integers(1, 3),
                                                                     st.integers(1, 3)),
       st.lists(st.integers(0, 2), min_size=4, max_size=4),
       st.tuples(st.integers(1, 2), st.integers(1, 2)), st.booleans())
def test_pool2d_relation_is_sound_for_drawn_attributes(pool, strides, padding, dilation, ceil):
    attrs = {"pool_size": pool, "strides": strides, "padding": tuple(padding),
             "dilation": dilation, "ceil_mode": ceil}
    case = dataclasses.replace(relations.BY_NAME["Pool2D"], configs=(Config(attrs, (4,)),),
                               max_instances=40)
    v = check_case(case)
    assert v.status == PROVED, v.counterexample


@settings(max_examples=25, deadline=None)
@given(st.integers(-6, 6), st.integers(-6, 6), st.sampled_from([1, 2, 3, -1, -2]))
def test_strided_slice_relation_is_sound_for_drawn_bounds(begin, end, stride):
    case = dataclasses.replace(relations.BY_NAME["StridedSlice"],
                               configs=(Config({"begin": (begin,), "end": (end,),
                                                "strides": (stride,)}, (1,)),))
    v = check_case(case)
    assert v.status == PROVED, v.counterexample


@settings(max_examples=20, deadline=None)
@given(st.tuples(st.integers(1, 3), st.integers(1, 3)),
       st.lists(st.integers(0, 2), min_size=4, max_size=4),
       st.tuples(st.integers(1, 3), st.integers(1, 3)))
def test_conv2d_relation_is_sound_for_drawn_attributes(strides, padding, dilation):
    attrs = {"strides": strides, "padding": tuple(padding), "dilation": dilation}
    case = dataclasses.replace(relations.BY_NAME["Conv2D"],
                               configs=(Config(attrs, (4, 4), ties=((0, 1, 1, 1),)),),
                               max_instances=40)
    v = check_case(case)
    assert v.status == PROVED, v.counterexample
    assert v.method.startswith("z3 1/1")


def test_a_case_can_be_added_in_a_few_lines():
    case = RelationCase("Identity", "exp", relations.same(), (Config({}, (3,)),))
    assert check_case(case).status == PROVED


# --- relay prove ---

def test_relay_prove_prints_each_obligation(capsys):
    assert main(["prove", "--only", "rewrite.fold_scale_axis"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("proved") and "rewrite.fold_scale_axis." in out[0]
    assert out[-1].startswith("7 obligations: 7 proved, 0 refuted, 0 unknown in ")


def test_relay_prove_unknown_name_is_a_usage_error(capsys):
    assert main(["prove", "--only", "nothing.like.this"]) == 2
    assert "no obligation named" in capsys.readouterr().err


def test_relay_prove_list(capsys):
    assert main(["prove", "--list", "--only", "soundness"]) == 0
    out = capsys.readouterr().out
    assert "soundness.core.progress:" in out and "bounded model check" in out


def test_relay_prove_reports_a_refuted_obligation(capsys, monkeypatch):
    from proofs import core

    monkeypatch.setitem(core._REGISTRY, "rewrite.zz_wrong_relu",
                        core.ObligationDef("rewrite.zz_wrong_relu", "relu without s > 0",
                                           lambda: rewrites.fold_through_relu(wrong=True)))
    assert main(["prove", "--only", "rewrite.zz_wrong_relu"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("refuted") and "counterexample: s = -" in out


def test_a_wrong_memory_relation_is_refuted(monkeypatch):
    """The bounded check of the memory dialect is not vacuous: a ReshapeTensor that forgets
    the element count is refuted with the call."""
    from proofs import relations_memory
    from semantics.ops import registry

    def sloppy(arg_types, attrs, solver):
        return TensorType(tuple(attrs["newshape"]), arg_types[0].dtype)

    op = ops.get("vm.reshape_tensor")
    monkeypatch.setitem(registry._REGISTRY, op.name,
                        dataclasses.replace(op, relation=Relation("ReshapeTensor", sloppy)))
    verdict = relations_memory.CHECKS["ReshapeTensor"][1]()
    assert verdict.status == REFUTED
    assert "vm.reshape_tensor(" in verdict.counterexample
