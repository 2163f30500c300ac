"""Executor behaviour the differential tests do not pin down: limits (tail loops, deep
recursion, ``max_depth``), argument and result conversion, sharing, dynamic shapes, the
graph executor's memory plan and the AoT code's shape."""

from __future__ import annotations

import numpy as np
import pytest

from backends.tvm import build
from backends.tvm.exec.graph import plan_function
from backends.tvm.exec.vm import VMClosure
from interpreter import Closure, ConstructorValue, RefValue, evaluate
from semantics import RelayRuntimeError, RelayTypeError

ALL = ["vm", "aot"]

LOOP = """
def @loop(%i: int32, %acc: int32) -> int32 {
  if (%i == 0) { %acc } else { @loop(%i - 1, %acc + %i) }
}
def @down(%n: int32) -> int32 { if (%n == 0) { 0 } else { 1 + @down(%n - 1) } }
def @main(%n: int32) -> int32 {
  let %f = fn (%k: int32, %a: int32) -> int32 { if (%k == 0) { %a } else { %f(%k - 1, %a + 2) } };
  @loop(%n, 0) + %f(%n, 0)
}
"""


@pytest.mark.parametrize("executor", ALL)
def test_tail_loops_of_100000_iterations(executor):
    exe = build(LOOP, executor=executor)
    assert exe.run("loop", 100_000, 0) == np.int32(705082704)
    assert exe(100_000) == evaluate(LOOP, 100_000)


def test_vm_deep_non_tail_recursion_uses_no_python_stack():
    exe = build(LOOP, executor="vm")
    assert exe.run("down", 50_000) == 50_000
    with pytest.raises(RelayRuntimeError, match="stack exhausted"):
        build(LOOP, executor="vm", max_depth=1000).run("down", 5000)
    assert build(LOOP, executor="vm", max_depth=1001).run("down", 1000) == 1000


def test_aot_deep_recursion_is_a_runtime_error_not_a_crash():
    exe = build(LOOP, executor="aot")
    assert exe.run("down", 200) == 200
    with pytest.raises(RelayRuntimeError, match="stack exhausted"):
        exe.run("down", 100_000)
    with pytest.raises(RelayRuntimeError, match="stack exhausted"):
        build(LOOP, executor="aot", max_depth=10).run("down", 50)


@pytest.mark.parametrize("executor", ALL)
def test_arguments_and_results_convert_as_evaluate(executor):
    text = """
    def @main(%x: Tensor[(2), float32], %r: Ref[int32], %l: List[int32], %k: int64) {
      %r := !%r + 1;
      (%x, fn (%y: int32) { %y }, ref(%k), Cons(%k, Nil), @length(%l), %r)
    }
    """
    exe = build(text, executor=executor)
    cell = RefValue(np.int32(4))
    lst = ConstructorValue("Cons", (1, ConstructorValue("Nil", ())))
    out = exe([1.5, 2], cell, lst, 7)
    assert out[0].dtype == np.float32 and list(out[0]) == [1.5, 2]
    assert isinstance(out[1], Closure)
    assert isinstance(out[2], RefValue) and out[2].value.dtype == np.int64
    assert out[3] == ConstructorValue("Cons", (np.int64(7), ConstructorValue("Nil", ())))
    assert out[4] == 1
    assert out[5] is cell and cell.value == 5
    with pytest.raises(RelayRuntimeError, match="wrong number of arguments: @main expects 4"):
        exe([1.5, 2], cell, lst)
    with pytest.raises(RelayRuntimeError, match="%x"):
        exe([1.5, 2, 3], cell, lst, 7)
    with pytest.raises(RelayRuntimeError, match="no global @nope"):
        exe.run("nope")


def test_vm_closures_are_opaque_closures():
    exe = build("def @main() { fn (%x: int32) { %x } }")
    assert isinstance(exe(), VMClosure) and isinstance(exe(), Closure)


@pytest.mark.parametrize("executor", ALL)
def test_a_shared_effect_happens_once_per_activation(executor):
    # %0 is graph-shared: both branches and the tuple after the `if` use it.
    text = """
    def @main(%c: bool) {
      let %r = ref(0);
      %0 = (%r := !%r + 1);
      %1 = if (%c) { %0 } else { () };
      (%1, %0, !%r)
    }
    """
    exe = build(text, executor=executor, opt_level=0)
    for c in (True, False):
        assert exe(c)[2] == evaluate(text, c)[2]


@pytest.mark.parametrize("executor", ALL)
def test_match_failures_and_division_by_zero_are_runtime_errors(executor):
    text = """
    def @main(%o: Option[int32], %d: int32) -> int32 {
      match? (%o) { Some(%x) => %x / %d }
    }
    """
    exe = build(text, executor=executor)
    assert exe(ConstructorValue("Some", (7,)), 2) == 3
    with pytest.raises(RelayRuntimeError, match="division by zero"):
        exe(ConstructorValue("Some", (7,)), 0)
    with pytest.raises(RelayRuntimeError, match="non-exhaustive match"):
        exe(ConstructorValue("None", ()), 1)


@pytest.mark.parametrize("executor", ["vm", "aot", "graph"])
def test_dynamic_shapes_get_a_kernel_per_signature(executor):
    text = "def @main(%x: Tensor[(?, 2), float32]) { exp(%x) * 2f }"
    exe = build(text, executor=executor)
    for n in (1, 3, 1):
        x = np.arange(2 * n, dtype="float32").reshape(n, 2)
        np.testing.assert_allclose(exe(x), np.exp(x) * 2, rtol=1e-6)


DATAFLOW = """
def @main(%x: Tensor[(64, 64), float32]) -> Tensor[(64, 64), float32] {
  let %a = exp(%x);
  let %b = nn.relu(%a);
  let %c = tanh(%b);
  let %d = sigmoid(%c);
  let %e = negative(%d);
  %e
}
"""


def test_graph_memory_plan_reuses_buffers():
    exe = build(DATAFLOW, executor="graph", opt_level=0)
    tensor = 64 * 64 * 4
    assert exe.intermediate_bytes == 4 * tensor
    assert exe.peak_memory == 2 * tensor  # a chain needs two buffers, ping-pong
    x = np.linspace(-2, 2, 64 * 64, dtype="float32").reshape(64, 64)
    first = exe(x)
    np.testing.assert_allclose(first, evaluate(DATAFLOW, x), rtol=1e-6)
    second = exe(-x)
    np.testing.assert_allclose(first, evaluate(DATAFLOW, x), rtol=1e-6)   # not overwritten
    np.testing.assert_allclose(second, evaluate(DATAFLOW, -x), rtol=1e-6)


def test_graph_plan_never_lets_a_kernel_write_over_its_input():
    exe = build(DATAFLOW, executor="graph", opt_level=0)
    plan = plan_function("main", exe.module["main"], exe.kernels)
    for _, args, ids in plan.steps:
        inputs = {plan.storage.get(a) for a in ([args] if isinstance(args, int) else args)}
        assert not inputs & {plan.storage.get(i) for i in ids if i in plan.storage}


@pytest.mark.parametrize("text, what", [
    ("def @main(%x: int32) { if (%x > 0) { 1 } else { 2 } }", "If"),
    ("def @main(%x: int32) { fn (%y: int32) { %y + %x } }", "closure"),
    ("def @main() { ref(1) }", "RefCreate"),
    ("def @f(%x: int32) { %x } def @main(%x: int32) { @f(%x) }", "@f"),
    ("def @main(%l: List[int32]) { %l }", "not a tensor"),
])
def test_graph_executor_rejects_what_is_not_dataflow(text, what):
    with pytest.raises(RelayTypeError, match="executor=\"vm\"") as err:
        build(text, executor="graph", opt_level=0)
    assert what in err.value.message


def test_aot_compiles_match_to_branches_and_calls_kernels_directly():
    text = """
    def @main(%l: List[float32]) -> float32 {
      match (%l) { Cons(%h, Nil) => exp(%h), Cons(%h, Cons(%g, _)) => %h * %g, Nil => 0f }
    }
    """
    exe = build(text, executor="aot")
    src = exe.source
    assert "if type(v" in src and ".name == 'Cons'" in src and "elif" in src
    assert "K[0](" in src
    one = ConstructorValue("Cons", (1.0, ConstructorValue("Nil", ())))
    assert exe(one) == evaluate(text, one)


def test_bad_options_are_type_errors():
    with pytest.raises(RelayTypeError, match="unknown executor"):
        build("def @main() { 1 }", executor="jit")
    with pytest.raises(RelayTypeError, match="opt_level"):
        build("def @main() { 1 }", opt_level=5)


@pytest.mark.parametrize("executor", ALL)
def test_a_shared_node_whose_value_is_a_parameter_still_runs_its_effects(executor):
    # %0's value is the parameter %p, but evaluating it writes the reference: the
    # "already evaluated?" test must not mistake the parameter's register for %0's.
    text = """
    def @main(%c: bool, %p: int32) {
      let %r = ref(0);
      %0 = (let %u = (%r := !%r + 1); %p);
      %1 = if (%c) { %0 } else { 5 };
      (%1, %0, !%r)
    }
    """
    exe = build(text, executor=executor, opt_level=0)
    for c in (True, False):
        got, want = exe(c, 3), evaluate(text, c, 3)
        assert [int(x) for x in got] == [int(x) for x in want]


def test_aot_refuses_programs_nested_beyond_pythons_parser():
    body = "0"
    for i in range(150):
        body = f"if (%x > {i}) {{ {i} }} else {{ {body} }}"
    text = "def @main(%x: int32) -> int32 { " + body + " }"
    # Kernels are not the point here (150 comparisons with as many constants: 150 kernels to
    # compile): the numpy fallback runs the groups, the executors' code is the same.
    assert build(text, executor="vm", compile_kernels=False)(3) == 2
    with pytest.raises(RelayTypeError, match="nested too deeply"):
        build(text, executor="aot", compile_kernels=False)


def test_a_20000_deep_let_chain_compiles_and_runs():
    n = 20_000
    lets = "".join(f"let %x{i + 1} = %x{i} + 1; " for i in range(n))
    text = "def @main(%x0: int32) -> int32 { " + lets + f"%x{n} }}"
    # Kernels are not the point here (20,000 of them): the numpy fallback runs the groups.
    assert build(text, executor="vm", opt_level=0, compile_kernels=False)(1) == n + 1


@pytest.mark.parametrize("executor", ALL)
def test_tail_loops_of_100000_iterations_after_anf(executor):
    """Issue 33: to_anf keeps tail calls in tail position, so the compiled executors still
    run the loops in constant space after it."""
    import passes
    from semantics import parse

    exe = build(passes.to_anf(parse(LOOP)), executor=executor)
    assert exe.run("loop", 100_000, 0) == np.int32(705082704)
    assert exe(100_000) == evaluate(LOOP, 100_000)


@pytest.mark.parametrize("executor", ALL)
def test_a_failing_operator_called_as_a_value_reports_the_call_site(executor):
    text = """
def @main(%x: int32, %y: int32) -> int32 {
  let %f = if (%x > 0) { divide } else { add };
  %f(%x, %y)
}
"""
    exe = build(text, executor=executor)
    assert exe(7, 2) == 3
    with pytest.raises(RelayRuntimeError, match="division by zero") as err:
        exe(7, 0)
    assert err.value.span is not None and err.value.span.line == 4
