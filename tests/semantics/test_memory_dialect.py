"""Relay's memory dialect as TVM prints it (issue #33 item 9): ``memory.alloc_storage``,
``memory.alloc_tensor``, ``memory.kill``, ``vm.reshape_tensor``, ``vm.shape_of`` and the
``Storage`` type parse, print, type-check, evaluate in the oracle, and on the TVM backend
either run or are refused naming the operator."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import interpreter
import typechecker
from interpreter.values import values_equal
from semantics import alpha_equal, pretty
from semantics.errors import RelayRuntimeError, RelayTypeError
from semantics.ops.memory import StorageValue, is_storage_type, storage_type
from semantics.parser import parse, parse_type

SHAPE = 'shape_of(zeros(shape=[{dims}], dtype="float32"), dtype="int64")'


def _shape(*dims: int) -> str:
    return SHAPE.format(dims=", ".join(map(str, dims)))


ALLOC = f'''def @main(%size: int64, %align: int64, %offset: int64) {{
  let %s: Storage[] = memory.alloc_storage(%size, {_shape(2)}, %align, dtype="float32");
  let %t = memory.alloc_tensor(%s, %offset, {_shape(2, 3)}, const_shape=[2, 3]);
  let %_ = memory.kill(%s);
  %t
}}'''


# --- the Storage type --------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["Storage[]", "Storage"])
def test_storage_type_parses_both_spellings_and_prints_back(text):
    t = parse_type(text)
    assert is_storage_type(t)
    assert alpha_equal(parse_type(pretty(t)), t)
    assert alpha_equal(t, storage_type())


def test_storage_parameter_round_trips_and_type_checks():
    mod = parse("def @main(%s: Storage[]) { memory.kill(%s) }")
    again = parse(pretty(mod))
    assert alpha_equal(again["main"], mod["main"])
    typechecker.check(mod)
    assert pretty(typechecker.infer(mod)["main"].checked_type) == "fn (Storage) -> ()"


def test_storage_is_not_a_tensor_for_the_checker():
    text = "def @main(%s: Storage[]) {\n  %s + 1f\n}"
    with pytest.raises(RelayTypeError) as info:
        typechecker.check(parse(text))
    assert info.value.span is not None and info.value.span.line == 2


def test_alloc_program_round_trips_alpha_equal():
    mod = parse(ALLOC)
    assert alpha_equal(parse(pretty(mod))["main"], mod["main"])


# --- type errors, with spans -------------------------------------------------------------------

@pytest.mark.parametrize("call, why", [
    (f"memory.alloc_storage(1, {_shape(2)}, 64i64)", "size must be an int64 scalar"),
    (f"memory.alloc_storage(1i64, {_shape(2)}, 64)", "alignment must be an int64 scalar"),
    (f"memory.alloc_tensor(1i64, 0i64, {_shape(2)}, const_shape=[2])",
     "the first argument must be a Storage"),
    (f"memory.alloc_tensor(%s, 0i64, {_shape(2)})", "give const_shape or assert_shape"),
    (f"memory.alloc_tensor(%s, 0i64, {_shape(2)}, const_shape=[2, 2])",
     "the shape tensor has 1 elements"),
    (f"memory.alloc_tensor(%s, 0.5f, {_shape(2)}, assert_shape=[2])",
     "offset must be an integer scalar"),
    ("memory.alloc_tensor(%s, 0i64, zeros(shape=[2], dtype=\"float32\"), assert_shape=[2])",
     "shape must be a 1-d integer tensor"),
    (f"vm.reshape_tensor(zeros(shape=[2, 3], dtype=\"float32\"), {_shape(2)}, "
     f"newshape=[5])", "cannot reshape 6 elements"),
    (f"vm.reshape_tensor(zeros(shape=[6], dtype=\"float32\"), {_shape(1)}, newshape=[2, 3])",
     "the shape tensor has 1 elements"),
])
def test_ill_typed_calls_name_the_relation_and_point_at_the_call(call, why):
    text = f"def @main(%s: Storage[]) {{\n  {call}\n}}"
    with pytest.raises(RelayTypeError, match=why) as info:
        typechecker.check(parse(text))
    span = info.value.span
    assert span is not None and span.line == 2


def test_alloc_tensor_needs_its_attribute_kinds():
    with pytest.raises(RelayTypeError, match="const_shape"):
        typechecker.check(parse(f"def @main(%s: Storage[]) {{ memory.alloc_tensor(%s, 0i64, "
                                f"{_shape(2)}, const_shape=\"x\") }}"))


# --- the oracle ----------------------------------------------------------------------------------

def test_alloc_storage_gives_a_zero_filled_region():
    mod = parse(f"def @main(%n: int64) {{ memory.alloc_storage(%n, {_shape(1)}, 16i64) }}")
    v = interpreter.evaluate(mod, np.int64(40))
    assert isinstance(v, StorageValue) and v.size == 40 and v.alignment == 16
    assert not v.data.any()
    assert values_equal(v, interpreter.evaluate(mod, np.int64(40)))


@given(st.integers(0, 64), st.sampled_from([1, 2, 4, 8, 64]))
def test_alloc_tensor_views_the_storage_when_it_fits(extra, align):
    mod = parse(ALLOC)
    size = 24 + extra
    for offset in (0, extra):
        got = interpreter.evaluate(mod, np.int64(size), np.int64(align), np.int64(offset))
        assert got.dtype == np.float32 and got.shape == (2, 3)
        np.testing.assert_array_equal(got, np.zeros((2, 3), np.float32))
    with pytest.raises(RelayRuntimeError, match="does not fit a storage"):
        interpreter.evaluate(mod, np.int64(size), np.int64(align), np.int64(extra + 1))


@pytest.mark.parametrize("size, align, offset, why", [
    (-1, 8, 0, "negative size"),
    (64, 0, 0, "not a positive power of two"),
    (64, 12, 0, "not a positive power of two"),
    (64, 8, -4, "does not fit"),
])
def test_bad_sizes_alignments_and_offsets_are_runtime_errors(size, align, offset, why):
    with pytest.raises(RelayRuntimeError, match=why):
        interpreter.evaluate(parse(ALLOC), np.int64(size), np.int64(align), np.int64(offset))


def test_alloc_tensor_checks_the_run_time_shape():
    text = (f"def @main() {{ let %s = memory.alloc_storage(64i64, {_shape(1)}, 8i64); "
            f"memory.alloc_tensor(%s, 0i64, {_shape(3, 2)}, assert_shape=[2, 3]) }}")
    with pytest.raises(RelayRuntimeError, match="holds \\[3, 2\\]"):
        interpreter.evaluate(parse(text))


@pytest.mark.parametrize("arg, type_text", [
    ("%x", "Tensor[(2), int32]"), ("(%x, %x)", "(Tensor[(2), int32], Tensor[(2), int32])"),
    ("fn () { %x }", "fn () -> Tensor[(2), int32]"), ("%l", "List[int32]")])
def test_kill_of_any_value_is_unit(arg, type_text):
    mod = parse(f"def @main(%x: Tensor[(2), int32]) {{ let %l: List[int32] = Nil; "
                f"memory.kill({arg}) }}")
    assert pretty(typechecker.infer(mod)["main"].checked_type) == "fn (Tensor[(2), int32]) -> ()"
    assert interpreter.evaluate(mod, np.zeros(2, np.int32)) == ()


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_reshape_tensor_and_shape_of_agree_with_numpy(dims, data):
    n = int(np.prod(dims))
    new = data.draw(st.sampled_from([[n], [1, n], [n, 1], list(reversed(dims))]))
    dims_text = ", ".join(map(str, dims))
    text = (f"def @main(%x: Tensor[({dims_text}), int32]) {{ (vm.shape_of(%x), "
            f"vm.reshape_tensor(%x, {_shape(*new)}, newshape={new})) }}")
    x = np.arange(n, dtype=np.int32).reshape(dims)
    shape, reshaped = interpreter.evaluate(parse(text), x)
    assert shape.dtype == np.int64 and list(shape) == dims
    np.testing.assert_array_equal(reshaped, x.reshape(new))


def test_reshape_tensor_checks_the_shape_tensor_at_run_time():
    text = ("def @main(%x: Tensor[(6), float32], %s: Tensor[(2), int64]) { "
            "vm.reshape_tensor(%x, %s, newshape=[2, 3]) }")
    x = np.zeros(6, np.float32)
    assert interpreter.evaluate(parse(text), x, np.int64([2, 3])).shape == (2, 3)
    with pytest.raises(RelayRuntimeError, match="holds \\[3, 2\\], newshape is \\[2, 3\\]"):
        interpreter.evaluate(parse(text), x, np.int64([3, 2]))


def test_reshape_tensor_gradient_is_the_reshape_back():
    import ad

    f = parse("def @main(%x: Tensor[(2, 3), float32], %s: Tensor[(2), int64]) { "
              "sum(vm.reshape_tensor(%x, %s, newshape=[3, 2]) * 2f) }")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    value, (grad, _) = interpreter.evaluate(ad.grad(f["main"]), x, np.int64([3, 2]))
    assert float(value) == 30.0
    np.testing.assert_array_equal(grad, np.full((2, 3), 2.0, np.float32))


# --- the TVM backend ---------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["memory.alloc_storage", "memory.alloc_tensor"])
def test_tvm_backend_refuses_explicit_allocation_naming_the_op(op):
    from backends.tvm import build

    text = ALLOC if op == "memory.alloc_storage" else (
        f"def @main(%s: Storage[]) {{\n  memory.alloc_tensor(%s, 0i64, {_shape(1)}, "
        f"const_shape=[1])\n}}")
    with pytest.raises(RelayTypeError, match=f"does not run operator {op}") as info:
        build(text, compile_kernels=False)
    span = info.value.span
    assert span is not None
    assert text.splitlines()[span.line - 1][span.column - 1:].startswith(op)


@pytest.mark.parametrize("executor", ["vm", "graph", "aot"])
def test_tvm_backend_runs_kill_as_unit(executor):
    """TVM's ManifestLifetimes output (``let %_ = memory.kill(%x); ...``) runs: the backend
    frees memory itself, so the kill is dropped and its argument still evaluated."""
    from backends.tvm import build

    text = ("def @main(%x: Tensor[(2), float32]) {\n  let %y = %x + %x;\n"
            "  let %_0 = memory.kill(%x);\n  (%y, memory.kill(%y))\n}")
    x = np.array([1.5, -2.0], np.float32)
    got = build(text, executor=executor)(x)
    want = interpreter.evaluate(parse(text), x)
    assert values_equal(got, want) and got[1] == ()


@pytest.mark.parametrize("executor", ["vm", "graph", "aot"])
def test_tvm_backend_runs_reshape_tensor_and_shape_of_as_the_oracle(executor):
    from backends.tvm import build

    text = ("def @main(%x: Tensor[(2, 3), float32], %s: Tensor[(2), int64]) { "
            "(vm.shape_of(%x), vm.reshape_tensor(%x, %s, newshape=[3, 2])) }")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    exe = build(text, executor=executor)
    got = exe(x, np.int64([3, 2]))
    want = interpreter.evaluate(parse(text), x, np.int64([3, 2]))
    assert values_equal(got, want)
    with pytest.raises(RelayRuntimeError, match="newshape is \\[3, 2\\]"):
        exe(x, np.int64([2, 3]))


# --- the registry's habits ---------------------------------------------------------------------

MEMORY_OPS = ["memory.alloc_storage", "memory.alloc_tensor", "memory.kill", "vm.reshape_tensor",
              "vm.shape_of"]


def test_the_family_holds_exactly_these_operators():
    from semantics import ops

    assert sorted(n for n in ops.list_ops() if ops.get(n).family == "memory") == MEMORY_OPS


@pytest.mark.parametrize("name", MEMORY_OPS)
def test_operator_is_complete(name):
    import ad  # noqa: F401  (registers the rules)
    import backends.tvm.lower  # noqa: F401  (registers the lowerings)
    from conformance.strategies.ops import INVALID_CALLS, VALID_CALLS, covered_ops
    from semantics import ops
    from semantics.ops import GRADIENTS, LOWERINGS, TANGENTS, OpPattern, Relation

    op = ops.get(name)
    assert op.doc and "\n" not in op.doc and op.doc.endswith(".")
    assert isinstance(op.relation, Relation) and op.relation.name
    assert op.pattern is OpPattern.OPAQUE            # as TVM registers them
    assert name in covered_ops() and name in VALID_CALLS and name in INVALID_CALLS
    for table in (GRADIENTS, TANGENTS):
        assert table.has(name) or table.reason(name)
    assert LOWERINGS.has(name, "llvm") or LOWERINGS.reason(name, "llvm")


@pytest.mark.parametrize("name", MEMORY_OPS)
@given(data=st.data())
def test_reference_result_has_the_inferred_type(name, data):
    from conformance.strategies.ops import op_call
    from semantics import ops
    from semantics.ops.reference import value_type

    arg_types, attrs, values = data.draw(op_call(name))
    op = ops.get(name)
    out = op.relation(arg_types, op.normalize_attrs(attrs))
    got = op.reference(*values, **attrs)
    if isinstance(got, StorageValue):
        assert is_storage_type(out) and got.size == int(values[0])
    else:
        assert alpha_equal(value_type(got), out)


@pytest.mark.parametrize("name", MEMORY_OPS)
@given(data=st.data())
def test_invalid_calls_are_type_errors(name, data):
    from conformance.strategies.ops import INVALID_CALLS
    from semantics import ops

    arg_types, attrs = data.draw(INVALID_CALLS[name]())
    op = ops.get(name)
    with pytest.raises(RelayTypeError):
        op.relation(tuple(arg_types), op.normalize_attrs(attrs))


# --- passes and the partial evaluator ----------------------------------------------------------

PASSES_PROGRAM = f'''def @main(%o: int64) {{
  let %s = memory.alloc_storage(64i64, {_shape(2)}, 8i64);
  let %t = memory.alloc_tensor(%s, 0i64, {_shape(2, 3)}, const_shape=[2, 3]);
  let %_ = memory.kill(%t);
  let %u = memory.alloc_tensor(%s, %o, {_shape(2)}, const_shape=[2]);
  (%t, %u, memory.kill(1f), vm.reshape_tensor(%t, {_shape(6)}, newshape=[6]))
}}'''


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_optimize_keeps_the_value_of_a_memory_dialect_program(level):
    """FuseOps wraps alloc_storage in a primitive function typed ``-> Storage``: the module
    need not define Storage for that to kind-check (it is the prelude's)."""
    import passes

    mod = parse(PASSES_PROGRAM)
    assert "Storage" not in mod.types
    want = interpreter.evaluate(mod, np.int64(8))
    got = interpreter.evaluate(passes.optimize(mod, level), np.int64(8))
    assert values_equal(got, want)


def test_partial_evaluation_keeps_allocation_dynamic_and_the_value():
    import pe

    mod = parse(PASSES_PROGRAM)
    residual = pe.partial_evaluate(mod)
    assert "memory.alloc_storage" in pretty(residual)
    assert values_equal(interpreter.evaluate(residual, np.int64(8)),
                        interpreter.evaluate(mod, np.int64(8)))


def test_a_storage_is_an_argument_of_a_storage_parameter_and_nothing_else_is():
    from semantics import ops

    mod = parse(f"def @main(%s: Storage[]) {{ memory.alloc_tensor(%s, 4i64, {_shape(2)}, "
                f"const_shape=[2], dtype=\"int16\") }}")
    storage = ops.get("memory.alloc_storage").impl(np.int64(8), np.zeros(1, np.int64),
                                                   np.int64(8))
    got = interpreter.evaluate(mod, storage)
    assert got.dtype == np.int16 and got.shape == (2,)
    with pytest.raises(RelayRuntimeError, match="argument %s: expected Storage"):
        interpreter.evaluate(mod, np.zeros(8, np.uint8))
