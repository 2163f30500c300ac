"""The executors' fast paths keep the semantics (issues 14 and 16 §3).

* deep non-tail recursion (docs/architecture.md#robustness: up to ``max_depth`` works, deeper is a
  ``RelayRuntimeError``) in the VM and the AoT code, whose trampolined code takes over when
  Python's stack runs out (and runs programs with reference writes from the start);
* the AoT's trampolined code agrees with the oracle on generated programs;
* fused groups with tuple parameters are compiled, not run by the numpy fallback;
* the kernels' fast call lane is the one taken by the executors, and the careful lane still
  checks and copies what the fast lane cannot take;
* a kernel's result that escapes (into an ADT, a reference, a closure, a tuple) is never
  overwritten by a later call of the same kernel.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("tvm", reason="the TVM backend needs apache-tvm (extra `tvm`)")

from backends.tvm import build  # noqa: E402
from backends.tvm.exec.aot import AotRunner  # noqa: E402
from backends.tvm.exec.vm import (  # noqa: E402
    KERNEL,
    KERNEL1,
    KERNEL2,
    P_BIND,
    P_CTOR,
    P_TUPLE,
    P_WILD,
    Code,
    is_primitive_function,
    pattern_plan,
)
from backends.tvm.kernel.runtime import Kernel
from backends.tvm.kernel_table import FlatArgs  # noqa: E402
from conformance import ProgramConfig, assert_equivalent  # noqa: E402
from interpreter import ConstructorValue, RefValue, evaluate  # noqa: E402
from semantics import RelayRuntimeError, RelayTypeError, parse  # noqa: E402
from semantics.types import TupleType  # noqa: E402
from semantics.visitor import post_order  # noqa: E402

EXECUTORS = ["vm", "aot"]

DEEP = """
def @down(%n: int32) -> int32 { if (%n == 0) { 0 } else { 1 + @down(%n - 1) } }
def @even(%n: int32) -> bool { if (%n == 0) { True } else { @odd(%n - 1) } }
def @odd(%n: int32) -> bool { if (%n == 0) { False } else { @even(%n - 1) } }
def @closure_down(%n: int32) -> int32 {
  let %f = fn (%k: int32) -> int32 { if (%k == 0) { 0 } else { 2 + %f(%k - 1) } };
  %f(%n)
}
def @apply(%g: fn (int32) -> int32, %x: int32) -> int32 { %g(%x) }
def @higher_down(%n: int32) -> int32 {
  if (%n == 0) { 0 } else { 1 + @apply(@higher_down, %n - 1) }
}
def @count(%r: Ref[int32], %n: int32) -> int32 {
  if (%n == 0) { !%r } else { %r := !%r + 1; let %v = @count(%r, %n - 1); %v }
}
def @main(%n: int32) -> int32 { @down(%n) }
"""


@pytest.fixture(scope="module", params=EXECUTORS)
def deep(request, kernel_cache):
    return build(DEEP, executor=request.param, cache=kernel_cache)


def test_non_tail_recursion_20000_deep(deep):
    assert deep.run("down", 20_000) == 20_000
    assert deep.run("closure_down", 20_000) == 40_000
    assert deep.run("higher_down", 10_000) == 10_000


def test_mutual_tail_recursion_of_100000_calls(deep):
    assert bool(deep.run("even", 100_000)) is True
    assert bool(deep.run("odd", 100_001)) is True


def test_recursion_with_reference_writes_20000_deep(deep):
    cell = RefValue(np.int32(5))
    assert deep.run("count", cell, 20_000) == 20_005
    assert cell.value == 20_005


@pytest.mark.parametrize("executor", EXECUTORS)
def test_max_depth_is_exact_and_deeper_is_a_runtime_error(executor, kernel_cache):
    exe = build(DEEP, executor=executor, cache=kernel_cache, max_depth=20_000)
    assert exe.run("down", 19_999) == 19_999          # 20,000 nested activations
    with pytest.raises(RelayRuntimeError, match="stack exhausted"):
        exe.run("down", 20_000)
    with pytest.raises(RelayRuntimeError, match="stack exhausted"):
        exe.run("closure_down", 25_000)
    with pytest.raises(RelayRuntimeError, match="stack exhausted"):
        exe.run("count", RefValue(np.int32(0)), 25_000)
    assert bool(exe.run("even", 100_000)) is True     # tail calls do not count
    small = build(DEEP, executor=executor, cache=kernel_cache, max_depth=50)
    assert small.run("down", 49) == 49
    with pytest.raises(RelayRuntimeError, match="more than 50 nested calls"):
        small.run("down", 50)


def test_aot_restarts_pure_programs_and_trampolines_effects_at_once(kernel_cache):
    exe = build(DEEP, executor="aot", cache=kernel_cache)
    runner = exe._runner
    assert isinstance(runner, AotRunner)
    assert runner.pure is False                      # @count writes a reference
    pure = build(DEEP.replace("%r := !%r + 1; ", ""), executor="aot", cache=kernel_cache)
    assert pure._runner.pure is True
    assert pure.run("down", 100) == 100 and pure._runner.restarts == 0
    assert pure.run("down", 20_000) == 20_000 and pure._runner.restarts == 1


def test_graph_executor_rejects_recursion_with_advice(kernel_cache):
    with pytest.raises(RelayTypeError, match="vm"):
        build(DEEP, executor="graph", cache=kernel_cache)


def _trampolined(mod):
    exe = build(mod, executor="aot")
    exe._runner.pure = False          # every run takes the trampolined code
    return exe


def test_trampolined_aot_code_agrees_with_the_oracle():
    config = ProgramConfig(max_depth=3, effects=1, finite_extremes=False).with_features(
        "let", "if", "tuple", "closure", "higher_order", "global", "adt", "match", "ref", "op",
        "recursion", "let_rec", "sharing")
    assert_equivalent(_trampolined, config=config, max_examples=20, name="tvm-aot-trampolined")


# --- tuple parameters ---------------------------------------------------------------------

TUPLE_PARAMS = """
def @main(%xs: List[(Tensor[(2, 5), float32], Tensor[(2, 5), float32], Tensor[(2, 5), float32])],
          %h: Tensor[(2, 5), float32]) -> Tensor[(2, 5), float32] {
  @foldl(fn (%acc: Tensor[(2, 5), float32],
             %s: (Tensor[(2, 5), float32], Tensor[(2, 5), float32], Tensor[(2, 5), float32])) {
    add(multiply(sigmoid(%s.0), tanh(%s.2)), multiply(%acc, %s.1))
  }, %h, %xs)
}
"""


@pytest.mark.parametrize("executor", EXECUTORS)
def test_groups_with_tuple_parameters_are_compiled(executor, kernel_cache):
    exe = build(TUPLE_PARAMS, executor=executor, cache=kernel_cache)
    groups = [n for fn in exe.module.functions.values() for n in post_order(fn)
              if is_primitive_function(n)]
    tupled = [g for g in groups if any(isinstance(p.checked_type, TupleType) for p in g.params)]
    assert tupled, "the test program must make a fused group with a tuple parameter"
    assert exe.fallbacks == []
    kernels = [exe.kernels.kernel_for(g) for g in tupled]
    assert all(isinstance(k, FlatArgs) for k in kernels)
    rng = np.random.default_rng(3)
    items = [tuple(rng.standard_normal((2, 5), dtype=np.float32) for _ in range(3))
             for _ in range(4)]
    xs = ConstructorValue("Nil", ())
    for item in reversed(items):
        xs = ConstructorValue("Cons", (item, xs))
    h = rng.standard_normal((2, 5), dtype=np.float32)
    np.testing.assert_allclose(exe(xs, h), evaluate(TUPLE_PARAMS, xs, h), rtol=1e-5, atol=1e-6)


# --- the kernel call lanes ----------------------------------------------------------------

def _vm_kernels(exe) -> list[Kernel]:
    seen: dict[int, Code] = {}
    work = [c.code for c in exe._runner.closures.values()]
    found = []
    while work:
        code = work.pop()
        if id(code) in seen:
            continue
        seen[id(code)] = code
        for ins in code.instrs:
            work.extend(x for x in ins if isinstance(x, Code))
            if ins[0] in (KERNEL, KERNEL1, KERNEL2):
                k = ins[2]
                k = k.kernel if isinstance(k, FlatArgs) else k
                if isinstance(k, Kernel):
                    found.append(k)
    return found


LOOP = """
def @loop(%n: int32, %x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  if (%n == 0) { %x } else { @loop(%n - 1, add(multiply(%x, 0.5f), 1f)) }
}
def @down(%n: int32, %x: Tensor[(4), float32]) -> Tensor[(4), float32] {
  if (%n == 0) { %x } else { add(@down(%n - 1, %x), 1f) }
}
def @main(%n: int32, %x: Tensor[(4), float32]) -> Tensor[(4), float32] { @loop(%n, %x) }
"""


def test_executors_call_kernels_through_the_fast_lane(kernel_cache):
    # (the scalar counters run as host arithmetic, backends.tvm.lower.scalar: no kernel)
    exe = build(LOOP, executor="vm", cache=kernel_cache)
    kernels = _vm_kernels(exe)
    assert kernels
    before = [k.careful_calls for k in kernels]
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(exe.run("loop", 300, x), evaluate(LOOP, 300, x, entry="loop"))
    np.testing.assert_array_equal(exe.run("down", 300, x), evaluate(LOOP, 300, x, entry="down"))
    assert [k.careful_calls for k in kernels] == before


def test_the_careful_lane_checks_and_copies(kernel_cache):
    text = """
    def @main(%a: Tensor[(3, 4), float32], %b: Tensor[(3, 4), float32]) -> Tensor[(3, 4), float32] {
      add(multiply(%a, %b), %b)
    }"""
    exe = build(text, executor="vm", cache=kernel_cache)
    (k,) = _vm_kernels(exe)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.full((3, 4), 2, np.float32)
    want = a * b + b
    np.testing.assert_array_equal(k(a, b), want)
    calls = k.careful_calls
    readonly = a.copy()
    readonly.flags.writeable = False
    np.testing.assert_array_equal(k(readonly, b), want)                         # copied
    np.testing.assert_array_equal(k(np.ascontiguousarray(a.T).T, b), want)      # not C order
    wide = np.zeros((3, 8), np.float32)
    wide[:, ::2] = a
    np.testing.assert_array_equal(k(wide[:, ::2], b), want)                     # strided
    assert k.careful_calls == calls + 3
    with pytest.raises(ValueError, match="argument 0 must be float32"):
        k(a.astype(np.float64), b)
    with pytest.raises(ValueError, match="argument 1 must be float32"):
        k(a, b.reshape(4, 3))
    with pytest.raises(ValueError, match="takes 2 arrays"):
        k(a)
    out = np.empty((3, 4), np.float32)
    assert k(a, b, out=[out]) is out
    np.testing.assert_array_equal(out, want)


def test_pattern_plan_is_pre_order_with_access_paths():
    mod = parse("""
    def @main(%l: List[(int32, List[int32])]) -> int32 {
      match (%l) { Cons((%a, Cons(_, %rest)), Nil) => %a, _ => 0 }
    }""")
    clause = mod["main"].body.clauses[0]
    plan = pattern_plan(clause.lhs)
    assert [(kind, path) for kind, path, _ in plan] == [
        (P_CTOR, ()), (P_TUPLE, (0,)), (P_BIND, (0, 0)), (P_CTOR, (0, 1)), (P_WILD, (0, 1, 0)),
        (P_BIND, (0, 1, 1)), (P_CTOR, (1,))]
    assert plan[0][2] == ("Cons", 2) and plan[-1][2] == ("Nil", 0)
    assert plan[2][2].name_hint == "a"


# --- escaping results ---------------------------------------------------------------------

ESCAPE = """
def @keep(%n: int32, %x: Tensor[(4), float32], %acc: List[Tensor[(4), float32]],
          %r: Ref[Tensor[(4), float32]], %fs: List[fn () -> Tensor[(4), float32]])
    -> (List[Tensor[(4), float32]], List[fn () -> Tensor[(4), float32]], Tensor[(4), float32]) {
  if (%n == 0) {
    (%acc, %fs, !%r)
  } else {
    let %y = add(multiply(%x, 2f), 1f);
    let %z = (%y, %y);
    %r := %z.1;
    @keep(%n - 1, %y, Cons(%y, %acc), %r, Cons(fn () { %z.0 }, %fs))
  }
}
def @main(%n: int32, %x: Tensor[(4), float32]) {
  let %r = ref(%x);
  let %out = @keep(%n, %x, Nil, %r, Nil);
  (%out.0, @map(fn (%f: fn () -> Tensor[(4), float32]) { %f() }, %out.1), %out.2, !%r)
}
"""


def _items(v):
    out = []
    while v.name == "Cons":
        out.append(v.fields[0])
        v = v.fields[1]
    return out


@pytest.fixture(scope="module")
def escape_builds(kernel_cache):
    return {ex: build(ESCAPE, executor=ex, cache=kernel_cache) for ex in EXECUTORS}


@settings(max_examples=15, deadline=None)
@given(n=st.integers(0, 12),
       x=st.lists(st.floats(-4, 4, width=32), min_size=4, max_size=4))
def test_escaping_kernel_results_are_never_overwritten(escape_builds, n, x):
    x = np.asarray(x, np.float32)
    want = evaluate(ESCAPE, n, x)
    for executor, exe in escape_builds.items():
        got = exe(n, x)
        for g, w in ((got[0], want[0]), (got[1], want[1])):
            assert len(_items(g)) == len(_items(w)) == n, executor
            for a, b in zip(_items(g), _items(w)):
                np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(got[2], want[2])
        np.testing.assert_array_equal(got[3], want[3])
        # distinct steps hold distinct arrays: no buffer was shared between calls
        arrays = _items(got[0])
        assert len({id(a) for a in arrays}) == len(arrays)


FOREIGN = """
def @walk(%g: fn (int32) -> int32, %n: int32) -> int32 {
  if (%n == 0) { 0 } else { let %x = %g(%n); %x - %n + 1 + @walk(%g, %n - 1) }
}
def @own(%n: int32) -> int32 { @walk(fn (%k: int32) -> int32 { %k }, %n) }
"""


def test_aot_does_not_repeat_a_run_that_called_an_outside_closure(kernel_cache):
    exe = build(FOREIGN, executor="aot", cache=kernel_cache)
    assert exe.run("own", 20_000) == 20_000                    # its own closure: restarted
    outside = evaluate("def @main() -> fn (int32) -> int32 { fn (%k: int32) -> int32 { %k } }")
    assert exe.run("walk", outside, 50) == 50
    with pytest.raises(RelayRuntimeError, match="cannot be repeated"):
        exe.run("walk", outside, 20_000)
    assert build(FOREIGN, executor="vm", cache=kernel_cache).run("walk", outside, 20_000) \
        == 20_000
