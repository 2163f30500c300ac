"""Benchmark of the TVM backend's build and executors (issue 14 "What must be shown").

Usage::

    python bench/backend.py [--iterations N] [--quick]

Prints four tables:

1. **Compile time** per model (``--models``, default the vision models resnet18,
   mobilenet, vgg16, dqn), cold (an empty kernel cache directory: every kernel is
   compiled by TVM, ``--jobs`` at a time) and warm (a new process on the same directory;
   a new cache object on it in this process: every kernel is loaded from disk; and the
   same cache object again: memory hits), with the warm build's parts (memo key, memo
   load, executor) and the pass pipeline the memo saves. ``--tables 1`` prints this table
   only. Without a ``models`` package: a ResNet-style block written here (conv/bias/relu
   twice, a residual add, pooling, a dense head). Targets (issue 14): cold ≤ 10 s, warm
   ≤ 1 s.
2. **Graph executor memory**: the planned intermediate storage (``exe.peak_memory``)
   against the sum of all intermediate tensors (``exe.intermediate_bytes``).
3. **VM overhead per instruction** on a scalar loop of ``N`` iterations (default
   100,000): instructions executed (counted), total time per instruction with compiled
   kernels and with the numpy fallback, and the VM's own share — total time minus the
   time measured inside the kernels, per instruction. Target: ≤ 5 µs.
4. **Kernel call path**: the cost of one call of a compiled scalar ``int32`` add through
   ``Kernel.__call__``'s fast lane and its careful lane, against TVM's compiled function
   called directly with numpy arrays (DLPack conversion per call) and with TVM tensors.

Timings are wall clock on a shared machine; compare rows of one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

RESNET_BLOCK = """
def @main(%data: Tensor[(1, 16, 32, 32), float32],
          %w1: Tensor[(16, 16, 3, 3), float32], %b1: Tensor[(16), float32],
          %w2: Tensor[(16, 16, 3, 3), float32], %b2: Tensor[(16), float32],
          %w3: Tensor[(32, 16, 3, 3), float32], %b3: Tensor[(32), float32],
          %fc: Tensor[(10, 32), float32], %fcb: Tensor[(10), float32]) -> Tensor[(1, 10), float32] {
  let %c1 = nn.relu(nn.bias_add(nn.conv2d(%data, %w1, padding=[1, 1]), %b1));
  let %c2 = nn.bias_add(nn.conv2d(%c1, %w2, padding=[1, 1]), %b2);
  let %r = nn.relu(%c2 + %data);
  let %c3 = nn.relu(nn.bias_add(nn.conv2d(%r, %w3, strides=[2, 2], padding=[1, 1]), %b3));
  let %p = nn.max_pool2d(%c3, pool_size=[2, 2], strides=[2, 2]);
  let %g = nn.batch_flatten(nn.global_avg_pool2d(%p));
  nn.softmax(nn.bias_add(nn.dense(%g, %fc), %fcb))
}
"""

LOOP = """
def @loop(%i: int32, %acc: int32) -> int32 {
  if (%i == 0) { %acc } else { @loop(%i - 1, %acc + %i) }
}
def @main(%n: int32) -> int32 { @loop(%n, 0) }
"""


def model(name: str = "resnet18") -> tuple[Any, dict[str, np.ndarray], list[np.ndarray], str]:
    """A benchmark model: ``(module, params, inputs, name)``."""
    try:
        import models  # type: ignore[import-not-found]

        mod, params = models.get(name)
        main = mod["main"]
        data = main.params[0].type_annotation
        shape = tuple(int(d) for d in data.shape)
        return mod, params, [np.random.default_rng(0).standard_normal(shape).astype(
            data.dtype)], name
    except ImportError:
        from semantics import parse

        mod = parse(RESNET_BLOCK)
        rng = np.random.default_rng(0)
        params = {p.name_hint: (rng.standard_normal(tuple(int(d) for d in
                                                          p.type_annotation.shape)) * 0.1
                                ).astype("float32")
                  for p in mod["main"].params[1:]}
        data = rng.standard_normal((1, 16, 32, 32)).astype("float32")
        return mod, params, [data], "resnet-block (inline)"


_WARM_PROCESS = """
import sys, time
sys.path.insert(0, {root!r})
import models
from backends.tvm import build
from backends.tvm.kernel.cache import KernelCache
import tvm  # noqa: F401 - imported before the clock starts, as by a program that builds
mod, params = models.get({name!r})
t = time.perf_counter()
build(mod, params=params, executor="graph", cache=KernelCache({directory!r}), jobs={jobs!r})
print(time.perf_counter() - t)
"""


def warm_in_new_process(name: str, directory: str, jobs: int | None) -> float | None:
    """The build time of model ``name`` in a new Python process on the cache ``directory``
    (TVM imported before the clock starts), or None when it cannot run."""
    import subprocess

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    code = _WARM_PROCESS.format(root=root, name=name, directory=directory, jobs=jobs)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    try:
        return float(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def compile_times(mod: Any, params: dict[str, np.ndarray], inputs: list[np.ndarray],
                  jobs: int | None = None, name: str | None = None
                  ) -> list[tuple[str, float, str]]:
    """Table 1 rows for one model: cold, warm (new process, disk hits, memory hits), and the
    warm build's parts.

    * cold: an empty cache directory, every kernel compiled (``jobs`` at a time); the
      first cold build of the process also imports TVM (about 2–4 s, torch included);
    * warm (new process): a new Python process builds the model on the same directory
      (what a program pays on its next start, imports aside); run for models of
      ``models`` only (``name``);
    * warm (disk hits): a new cache object on the same directory in this process — nothing
      compiles, every kernel is loaded from disk;
    * warm (memory hits): the same cache object again;
    * the warm build's parts: the memo key (the hash of the params' bytes), loading the
      memo (the fused module, its weights mapped from the cache's blobs), the executor with
      its kernels (libraries loaded, constants mapped, graph planned); and, for comparison,
      the pass pipeline the memo saves (``prepare``: bind params, optimize, fuse, infer).
    """
    from backends.tvm import build
    from backends.tvm.build import KernelTable, PrepareMemo, memo_key, prepare
    from backends.tvm.exec.executable import Executable
    from backends.tvm.kernel.cache import KernelCache

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cold_cache = KernelCache(tmp)
        t = time.perf_counter()
        exe = build(mod, params=params, executor="graph", cache=cold_cache, jobs=jobs)
        rows.append(("cold (empty cache)", time.perf_counter() - t,
                     f"{len(cold_cache)} distinct kernels compiled, "
                     f"{len(exe.fallbacks)} fallbacks"))
        cold_cache.flush()
        if name is not None:
            seconds = warm_in_new_process(name, tmp, jobs)
            if seconds is not None:
                rows.append(("warm (new process)", seconds, "build() in a new process"))
        warm_cache = KernelCache(tmp)
        t = time.perf_counter()
        exe = build(mod, params=params, executor="graph", cache=warm_cache, jobs=jobs)
        rows.append(("warm (disk hits)", time.perf_counter() - t,
                     f"{warm_cache.hits_disk} disk hits, {warm_cache.misses} misses"))
        t = time.perf_counter()
        exe = build(mod, params=params, executor="graph", cache=warm_cache, jobs=jobs)
        rows.append(("warm (memory hits)", time.perf_counter() - t,
                     f"{warm_cache.hits_memory} memory hits"))
        t = time.perf_counter()
        memo_key(mod, params, 3)
        weights = sum(np.asarray(a).nbytes for a in params.values()) / 1e6
        rows.append(("  of which: memo key", time.perf_counter() - t,
                     f"module text + SHA-256 of {weights:.0f} MB of params"))
        memo = PrepareMemo(mod, params, 3, KernelCache(tmp))
        t = time.perf_counter()
        fused = memo.load()
        rows.append(("  of which: memo load", time.perf_counter() - t,
                     "the fused module (weights: views of the blobs' maps)"))
        if fused is None:
            fused = prepare(mod, params, 3)
        t = time.perf_counter()
        cache = KernelCache(tmp)
        KernelTable("llvm", cache).precompile(fused, jobs, memo.kernel_keys)  # seeds the keys
        Executable.from_fused(fused, executor="graph", target="llvm", opt_level=3, cache=cache)
        rows.append(("  of which: executor", time.perf_counter() - t,
                     "kernels loaded from disk + graph planning"))
        t = time.perf_counter()
        prepare(mod, params, 3)
        rows.append(("passes (memo saves)", time.perf_counter() - t,
                     "bind_params + optimize -O3 + fuse + infer (no kernels)"))
        t = time.perf_counter()
        exe(*inputs)
        rows.append(("one inference (graph)", time.perf_counter() - t, ""))
    return rows


def memory(mod: Any, params: dict[str, np.ndarray]) -> list[tuple[str, int, int]]:
    from backends.tvm import build

    rows = []
    for level in (0, 3):
        exe = build(mod, params=params, executor="graph", opt_level=level,
                    compile_kernels=False)
        rows.append((f"-O{level}", exe.peak_memory, exe.intermediate_bytes))
    return rows


class _CountingList(list[Any]):
    """An instruction list that counts the instructions fetched (the counting run only)."""

    fetched = 0

    def __getitem__(self, i: Any) -> Any:
        _CountingList.fetched += 1
        return super().__getitem__(i)


def _codes(exe: Any) -> list[Any]:
    from backends.tvm.exec.vm import Code

    seen: dict[int, Any] = {}
    work = [c.code for c in exe._runner.closures.values()]
    while work:
        code = work.pop()
        if id(code) in seen:
            continue
        seen[id(code)] = code
        for ins in code.instrs:
            work.extend(x for x in ins if isinstance(x, Code))
    return list(seen.values())


def _kernels_of(code: Any) -> list[tuple[int, int]]:
    from backends.tvm.exec.vm import KERNEL, KERNEL1, KERNEL2

    return [(i, 2) for i, ins in enumerate(code.instrs) if ins[0] in (KERNEL, KERNEL1, KERNEL2)]


def vm_overhead(n: int) -> list[tuple[str, int, float, float, float]]:
    from backends.tvm import build

    rows: list[tuple[str, int, float, float, float]] = []
    for label, compiled in (("compiled kernels", True), ("numpy fallback", False)):
        exe = build(LOOP, executor="vm", compile_kernels=compiled)
        exe(10)  # warm up (kernel slots, verdicts)
        codes = _codes(exe)
        # 1. instructions executed
        saved = [c.instrs for c in codes]
        for c in codes:
            c.instrs = _CountingList(c.instrs)
        _CountingList.fetched = 0
        exe(n)
        count = _CountingList.fetched
        for c, instrs in zip(codes, saved):
            c.instrs = instrs
        # 2. total time
        t = time.perf_counter()
        exe(n)
        total = time.perf_counter() - t
        # 3. time inside the kernels (a separate run with timing wrappers)
        inside = [0.0]

        def timed(k: Any, inside: list[float] = inside) -> Any:
            clock = time.perf_counter

            def run(*args: Any) -> Any:
                t0 = clock()
                r = k(*args)
                inside[0] += clock() - t0
                return r
            return run

        for c in codes:
            for i, _ in _kernels_of(c):
                ins = c.instrs[i]
                c.instrs[i] = (ins[0], ins[1], timed(ins[2]), *ins[3:])
        exe(n)
        for c, instrs in zip(codes, saved):
            c.instrs = instrs
        us = 1e6 / count
        rows.append((label, count, total * us, inside[0] * us, max(total - inside[0], 0) * us))
    return rows


def kernel_call_cost(n: int = 20_000) -> list[tuple[str, float]]:
    """Microseconds per call of a scalar kernel by each path (see table 4; the best of ten
    blocks of ``n / 10`` calls)."""
    import tvm

    from backends.tvm.kernel.cache import KernelCache
    from backends.tvm.kernel.compile import compile_function
    from semantics import parse_expr

    # The kernel itself (the VM runs a scalar integer add by a host rule, not a kernel).
    fn_add = parse_expr("fn (%a: int32, %b: int32, Primitive=1) -> int32 { add(%a, %b) }")
    kernel = compile_function(fn_add, [p.type_annotation for p in fn_add.params],
                              cache=KernelCache(disk=False))
    a, b = np.array(3, np.int32), np.array(4, np.int32)
    out = np.empty((), np.int32)
    ta, tb, tout = (tvm.runtime.empty((), "int32") for _ in range(3))
    ta.copyfrom(a)
    tb.copyfrom(b)
    fn = kernel._fn
    paths = [("Kernel.__call__ (fast lane)", lambda: kernel(a, b)),
             ("Kernel careful lane", lambda: kernel._careful((a, b), None)),
             ("TVM function, numpy arrays", lambda: fn(a, b, out)),
             ("TVM function, TVM tensors", lambda: fn(ta, tb, tout))]
    rows = []
    block = max(1, n // 10)
    for label, call in paths:
        call()
        best = float("inf")
        for _ in range(10):      # the best of ten blocks: the machine is shared
            t = time.perf_counter()
            for _ in range(block):
                call()
            best = min(best, (time.perf_counter() - t) / block)
        rows.append((label, best * 1e6))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="10,000 loop iterations")
    parser.add_argument("--models", default="resnet18,mobilenet,vgg16,dqn",
                        help="table 1: comma-separated model names (default the vision models)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="table 1: kernels compiled at a time (default $RELAY_TVM_JOBS "
                             "or 1)")
    parser.add_argument("--tables", default="1,2,3,4",
                        help="comma-separated table numbers to print (default all)")
    args = parser.parse_args()
    tables = {t.strip() for t in args.tables.split(",")}
    n = 10_000 if args.quick else args.iterations
    if "1" in tables:
        for model_name in args.models.split(","):
            mod, params, inputs, name = model(model_name.strip())
            print(f"== compile time: {name} (graph executor, -O3) ==")
            print(f"{'build':<24}{'seconds':>10}  notes")
            known = name if name == model_name.strip() else None
            for label, seconds, note in compile_times(mod, params, inputs, args.jobs, known):
                print(f"{label:<24}{seconds:>10.3f}  {note}")
            print()
    mod, params, inputs, name = model()

    if "2" in tables:
        print(f"\n== graph executor memory: {name} ==")
        print(f"{'level':<8}{'peak (planned) bytes':>22}{'sum of intermediates':>22}"
              f"{'ratio':>8}")
        for label, peak, size in memory(mod, params):
            ratio = peak / size if size else 0.0
            print(f"{label:<8}{peak:>22,}{size:>22,}{ratio:>8.2f}")

    if "3" in tables:
        print(f"\n== VM overhead: scalar loop of {n:,} iterations ==")
        print(f"{'kernels':<18}{'instructions':>14}{'µs/instr total':>16}{'µs in kernels':>15}"
              f"{'µs VM overhead':>16}")
        for label, count, total, inside, overhead in vm_overhead(n):
            print(f"{label:<18}{count:>14,}{total:>16.3f}{inside:>15.3f}{overhead:>16.3f}")

    if "4" in tables:
        print("\n== kernel call path: a scalar int32 add ==")
        print(f"{'path':<30}{'µs per call':>12}")
        for label, us in kernel_call_cost():
            print(f"{label:<30}{us:>12.3f}")

if __name__ == "__main__":
    main()
