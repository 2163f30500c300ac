"""Where a TreeLSTM node's time goes on the VM (issue 35, item 3: "TreeLSTM's per-node
overhead in the VM measured and cut").

One build of ``tree_lstm`` (the VM at ``-O3``) and its documented 30-node input, then, in one
process, each part timed alone as the minimum over many short blocks (a short block is
rarely preempted, so the minimum is the uncontended cost even on a loaded machine):

* **convert**: the argument conversion of a call (the Python tree to Relay values);
* **VM alone**: ``VM.call`` with every kernel instruction's callable replaced by one that
  returns the result the real kernel gave (the dispatch, frames, matches, closures, tuples);
* **kernel calls**: each kernel instruction's callable (as the VM calls it: the adapters, the
  output pool, the DLPack twins) on its recorded arguments, summed over the node's kernels;
* **compiled alone**: each compiled function called directly with TVM tensors (its work and
  TVM's own call), so *kernel calls − compiled alone* is the Python call path;

per node (the parts divided by the tree's 30 nodes). Then ours (``exe(tree)``) and PyTorch
eager (``bench.paper.torch_eager``, output checked against ours) timed by
``bench.protocol.time_in_blocks``: median [min–max] and the load.

Usage: ``python bench/vm_overhead.py [--blocks N] [--runs N]``. It reads no private state of
another version's VM beyond ``Code.instrs``, so the same file measures an older checkout
(``PYTHONPATH=<checkout> python bench/vm_overhead.py``) for a before → after.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(_HERE.parent))

import numpy as np  # noqa: E402

from bench.protocol import machine_line, time_in_blocks  # noqa: E402  (before the backend)


def best(f: Callable[[], Any], n: int = 3, blocks: int = 300) -> float:
    """Microseconds a call of ``f``: the minimum over ``blocks`` blocks of ``n`` calls."""
    out = float("inf")
    for _ in range(blocks):
        start = time.perf_counter()
        for _ in range(n):
            f()
        out = min(out, (time.perf_counter() - start) / n)
    return out * 1e6


def _kernel_sites(closures: Any) -> list[tuple[Any, int]]:
    """``(code, index)`` of every kernel instruction reachable from the global closures."""
    from backends.tvm.exec import vm

    sites: list[tuple[Any, int]] = []
    seen: set[int] = set()
    todo = [c.code for c in closures.values()]
    while todo:
        code = todo.pop()
        if id(code) in seen:
            continue
        seen.add(id(code))
        for i, ins in enumerate(code.instrs):
            if ins[0] <= vm.KERNEL:
                sites.append((code, i))
            for x in ins[1:]:
                if isinstance(x, vm.Code):
                    todo.append(x)
                elif isinstance(x, vm.VMClosure):
                    todo.append(x.code)
    return sites


def _compiled_alone(k: Any, args: tuple[Any, ...]) -> Callable[[], Any] | None:
    """The compiled function of kernel ``k`` called with TVM tensors (None: not a compiled
    kernel reachable through ``kernel``/closure cells)."""
    from backends.tvm.kernel.runtime import Kernel, _dlpack_twin
    from backends.tvm.kernel_table import flatten_tuples

    kernel = k
    for _ in range(3):
        if isinstance(kernel, Kernel):
            break
        inner = getattr(kernel, "kernel", None)
        if inner is None and getattr(kernel, "__closure__", None):
            inner = next((c.cell_contents for c in kernel.__closure__
                          if isinstance(c.cell_contents, Kernel)), None)
        kernel = inner
    if not isinstance(kernel, Kernel) or kernel._fast_consts is None:
        return None
    tensors = [_dlpack_twin(np.array(a, order="C")) for a in flatten_tuples(args)]
    outs = [_dlpack_twin(np.empty(s, d)) for d, s in kernel._out_sig]
    fn, consts = kernel._fn, kernel._fast_consts
    return lambda: fn(*tensors, *consts, *outs)


def _call(k: Any, args: tuple[Any, ...]) -> Callable[[], Any]:
    return lambda: k(*args)


def split_costs(exe: Any, tree: Any) -> dict[str, float]:
    """The per-run parts (module docstring), in microseconds."""
    name, values = exe._arguments("main", (tree,))
    runner = exe._runner
    out = {"convert": best(lambda: exe._arguments("main", (tree,)), n=5),
           "vm.run": best(lambda: runner.run(name, values))}
    sites = _kernel_sites(runner.closures)
    saved = {(id(code), i): code.instrs[i] for code, i in sites}
    seen: dict[int, tuple[Any, tuple[Any, ...], Any]] = {}
    try:
        for code, i in sites:
            ins = code.instrs[i]

            def record(*a: Any, k: Any = ins[2]) -> Any:
                r = k(*a)
                seen.setdefault(id(k), (k, a, r))
                return r
            code.instrs[i] = (ins[0], ins[1], record, *ins[3:])
        runner.run(name, values)
        for code, i in sites:
            ins = saved[id(code), i]
            result = seen[id(ins[2])][2]
            code.instrs[i] = (ins[0], ins[1], lambda *a, r=result: r, *ins[3:])
        out["VM alone"] = best(lambda: runner.run(name, values))
    finally:
        for code, i in sites:
            code.instrs[i] = saved[id(code), i]
    out["kernel calls"] = sum(best(_call(k, a), n=20) for k, a, _ in seen.values())
    alone = [_compiled_alone(k, a) for k, a, _ in seen.values()]
    out["compiled alone"] = sum(best(f, n=20) for f in alone if f is not None)
    out["kernels"] = len(seen)
    return out


def main(argv: list[str] | None = None) -> int:
    import models
    from backends.tvm import build
    from bench.paper import _as_array, torch_eager
    from bench.report import format_load, load_average

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--blocks", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args(argv)
    load0 = load_average()
    mod, params = models.get("tree_lstm")
    exe = build(mod, params=params, executor="vm")
    (tree,) = models.example_inputs("tree_lstm")
    want = _as_array(exe(tree))
    nodes = models.TREE_NODES
    parts = split_costs(exe, tree)
    systems: dict[str, Callable[[], Any]] = {"ours (VM)": lambda: exe(tree)}
    notes = []
    try:
        run, convert = torch_eager("tree_lstm")
        peer_in = convert((tree,))
        if np.allclose(_as_array(run(*peer_in)), want, rtol=1e-3, atol=1e-4):
            systems["PyTorch eager"] = lambda: run(*peer_in)
        else:
            notes.append("PyTorch's output differs from ours: not timed")
    except Exception as e:  # noqa: BLE001 - a missing peer is reported, not fatal
        notes.append(f"PyTorch: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
    measured = time_in_blocks(systems, blocks=args.blocks, runs=args.runs)
    print(machine_line() + "\n")
    print(f"TreeLSTM, {nodes} nodes, {int(parts['kernels'])} kernels a node; per node, µs "
          f"(minimum over short blocks):")
    for key in ("convert", "vm.run", "VM alone", "kernel calls", "compiled alone"):
        per_run = key in ("convert", "vm.run", "VM alone")   # the others: per node already
        print(f"  {key:15s} {parts[key] / (nodes if per_run else 1):7.1f}")
    outside = parts["convert"] / nodes + parts["VM alone"] / nodes + \
        parts["kernel calls"] - parts["compiled alone"]
    print(f"  outside the compiled functions (convert + VM alone + call path): {outside:.1f}")
    t = measured.timings
    for label, timing in t.items():
        print(f"{label}: {timing.ms()} ms")
    if len(t) == 2:
        ours, peer = t["ours (VM)"], t["PyTorch eager"]
        print(f"PyTorch eager / ours (medians): {peer.median / ours.median:.2f}")
    print(measured.describe())
    print(f"load average at start {format_load(load0)}; TVM_NUM_THREADS="
          f"{os.environ.get('TVM_NUM_THREADS')}")
    for n in notes:
        print("* " + n)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
