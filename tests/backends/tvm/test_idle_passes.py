"""The TIR passes ``tvm.compile`` skips for our kernels (``IDLE_TIR_PASSES``, issue 35):

* they are skipped (the pass context of a kernel's compilation disables them), and only
  them: the caller's own disabled passes and configuration stay;
* the machine code is the same text with and without them, on kernels drawn around the
  vector width's tails (an elementwise chain, a padded pool, a dense);
* a caller's pass instrument (``PassTimingInstrument``) still sees the passes a kernel ran.
"""

from __future__ import annotations

import tempfile
from typing import Any

import tvm
from hypothesis import given, settings
from hypothesis import strategies as st
from tvm.ir.instrument import PassTimingInstrument

import typechecker
from backends.tvm.kernel.cache import KernelCache
from backends.tvm.kernel.compile import IDLE_TIR_PASSES, _skip_idle_passes, compile_function
from backends.tvm.target import Target
from passes import fuse_ops
from semantics.expr import Function
from semantics.module import IRModule
from semantics.parser import parse
from semantics.types import Type
from semantics.visitor import post_order


def _kernel(text: str) -> tuple[Function, list[Type]]:
    """The one primitive function of ``text``'s ``main`` after fusion, and its parameter types."""
    mod = typechecker.infer(fuse_ops(typechecker.infer(parse(text)), fuse_opt_level=2))
    assert isinstance(mod, IRModule)
    fn = next(n for n in post_order(mod.functions["main"])
              if isinstance(n, Function) and n.attrs and n.attrs.get("Primitive"))
    types = [p.checked_type for p in fn.params]
    assert all(t is not None for t in types)
    return fn, [t for t in types if t is not None]


def test_the_idle_passes_are_disabled_and_the_callers_settings_kept() -> None:
    with tvm.transform.PassContext(opt_level=3, disabled_pass=["tirx.UnrollLoop"],
                                   config={"tirx.disable_cse_tir": True}):
        with _skip_idle_passes():
            cur = tvm.transform.PassContext.current()
            assert set(cur.disabled_pass) == {"tirx.UnrollLoop", *IDLE_TIR_PASSES}
            assert cur.opt_level == 3 and bool(cur.config["tirx.disable_cse_tir"])


def _asm_both_ways(text: str) -> tuple[str, str]:
    fn, types = _kernel(text)
    captured: list[tuple[Any, Any]] = []
    orig = tvm.compile

    def capture(mod: Any, target: Any = None, **kw: Any) -> Any:
        captured.append((mod, target))
        return orig(mod, target=target, **kw)

    tvm.compile = capture
    try:
        compile_function(fn, types, cache=KernelCache(tempfile.mkdtemp()))
    finally:
        tvm.compile = orig
    (mod, target), = captured

    def asm(disabled: list[str]) -> str:
        with tvm.transform.PassContext(disabled_pass=disabled):
            lib = orig(mod, target=target)
        return (lib.mod if hasattr(lib, "mod") else lib).inspect_source("asm")
    return asm([]), asm(list(IDLE_TIR_PASSES))


_L = Target.host().lanes
tails = st.sampled_from([_L - 1, _L + 1, 2 * _L + 1, 3])


@settings(max_examples=4, deadline=None)
@given(n=tails, k=tails, kind=st.sampled_from(["chain", "pool", "dense"]))
def test_the_machine_code_is_the_same_without_them(n: int, k: int, kind: str) -> None:
    body = {
        "chain": (f"%x: Tensor[({n}, {k}), float32]", "nn.relu(multiply(add(%x, %x), %x))"),
        "pool": (f"%x: Tensor[(1, 2, {n}, {k}), float32]",
                 "nn.max_pool2d(%x, pool_size=[3, 3], padding=[1, 1])"),
        "dense": (f"%x: Tensor[({n}, {k}), float32], %w: Tensor[({k + 2}, {k}), float32]",
                  "nn.relu(nn.dense(%x, %w))"),
    }[kind]
    with_all, without = _asm_both_ways(f"def @main({body[0]}) {{ {body[1]} }}")
    assert with_all == without


def test_a_callers_pass_instrument_sees_the_kernels_passes() -> None:
    fn, types = _kernel("def @main(%x: Tensor[(4, 9), float32]) { nn.relu(add(%x, %x)) }")
    timing = PassTimingInstrument()
    with tvm.transform.PassContext(instruments=[timing]):
        compile_function(fn, types, cache=KernelCache(tempfile.mkdtemp()))
        profile = timing.render()
    assert "tirx.FlattenBuffer" in profile


