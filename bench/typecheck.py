"""Type-checking speed on a synthetic ResNet-50-sized module (concrete and symbolic batch).

The module is a chain of residual bottleneck blocks as in ResNet-50
(conv 1x1 -> batch_norm -> relu -> conv 3x3 -> batch_norm -> relu -> conv 1x1
-> batch_norm -> add(residual) -> relu), with every weight a parameter of
``@main`` as TVM's frontends produce them, and a stride-2 downsampling block
every few blocks. With the default 300 blocks it has about 3,000 operator
calls (plus the ``.0`` projections out of ``batch_norm``'s tuple).

It is checked three times: with a concrete input (``Tensor[(1, 256, 56, 56),
...]``), with a symbolic batch ``n`` (every activation's first dimension is
``n``), and with symbolic batch, height and width ``(n, 256, h, w)``, where
the stride-2 blocks push ``h`` and ``w`` through the convolution formula
(``floor((h - 1)/2) + 1``) and the residual ``add``s must prove such
expressions equal (SymPy, then Z3). The table shows the time of ``check``
and of ``infer`` (which also builds the annotated program), best of
``--repeat`` runs, and the ratio of each ``check`` time to the concrete one.

Run: ``python bench/typecheck.py [--blocks 300] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from semantics.expr import Attrs, Call, Function, Op, TupleGetItem, Var
from semantics.module import IRModule
from semantics.shapes import shape_var
from semantics.types import TensorType

F32 = "float32"


def _op(name: str) -> Op:
    return Op(name)


def resnet_like(blocks: int, batch: Any, height: Any = 56, width_: Any = 56) -> IRModule:
    """A module with ``@main`` of ``blocks`` bottleneck blocks (about 10 operator calls each)."""
    params: list[Var] = []
    counter = [0]

    def param(shape: tuple[Any, ...]) -> Var:
        counter[0] += 1
        v = Var(f"p{counter[0]}", TensorType(shape, F32))
        params.append(v)
        return v

    def conv(x: Any, cin: int, cout: int, k: int, stride: int = 1) -> Call:
        w = param((cout, cin, k, k))
        pad = k // 2
        attrs = Attrs({"strides": (stride, stride), "padding": (pad, pad), "channels": cout,
                       "kernel_size": (k, k)})
        return Call(_op("nn.conv2d"), (x, w), attrs)

    def bn(x: Any, c: int) -> TupleGetItem:
        args = (x, param((c,)), param((c,)), param((c,)), param((c,)))
        return TupleGetItem(Call(_op("nn.batch_norm"), args, Attrs({"epsilon": 1e-5})), 0)

    def relu(x: Any) -> Call:
        return Call(_op("nn.relu"), (x,))

    width = 256
    data = Var("data", TensorType((batch, width, height, width_), F32))
    params.append(data)
    x: Any = data
    for i in range(blocks):
        stride = 2 if i % 50 == 49 else 1
        y = relu(bn(conv(x, width, 64, 1), 64))
        y = relu(bn(conv(y, 64, 64, 3, stride), 64))
        y = bn(conv(y, 64, width, 1), width)
        shortcut = x if stride == 1 else bn(conv(x, width, width, 1, stride), width)
        x = relu(Call(_op("add"), (y, shortcut)))
    main = Function(tuple(params), x)
    return IRModule({"main": main})


def count_calls(mod: IRModule) -> int:
    from semantics.visitor import post_order

    return sum(1 for n in post_order(mod["main"]) if isinstance(n, Call))


def best_time(fn: Any, inputs: list[Any]) -> float:
    """The shortest time of ``fn(x)`` over ``inputs`` (fresh modules: results are cached)."""
    best = float("inf")
    for x in inputs:
        start = time.perf_counter()
        fn(x)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> None:
    from semantics.printer import pretty
    from typechecker import check, infer
    from typechecker.program import module_typing

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    check(resnet_like(2, 1))  # warm-up: imports, operator registry
    rows = []
    n, h, w = shape_var("n"), shape_var("h"), shape_var("w")
    for label, dims in (("concrete batch 1", (1, 56, 56)), ("symbolic batch n", (n, 56, 56)),
                        ("symbolic n, h, w", (n, h, w))):
        # a fresh module per run: results are cached per module object
        mods = [resnet_like(args.blocks, *dims) for _ in range(2 * args.repeat)]
        calls = count_calls(mods[0])
        t_check = best_time(check, mods[:args.repeat])
        t_infer = best_time(infer, mods[args.repeat:])
        ret = module_typing(mods[0]).schemes["main"].ret_type  # type: ignore[attr-defined]
        rows.append((label, calls, t_check, t_infer, pretty(ret)))

    print(f"{'module':<18} {'calls':>6} {'check (s)':>10} {'infer (s)':>10} {'ratio':>6}"
          "  result type")
    for label, calls, tc, ti, ret in rows:
        ratio = tc / rows[0][2]
        print(f"{label:<18} {calls:>6} {tc:>10.3f} {ti:>10.3f} {ratio:>6.2f}  {ret}")
    print("ratio: check time relative to the concrete module")


if __name__ == "__main__":
    main()
