"""The oracle against idiomatic numpy: time per workload, same computation, same run.

Each workload is written twice from one description:

* as a Relay program (text built here; weights are parameters, passed as numpy
  arrays) run by ``interpreter.evaluate`` (unchecked: it is type-checked once,
  before timing, so only evaluation is timed);
* as the same computation in idiomatic numpy, written directly (same dtypes:
  float32 networks, int32 scalars): convolutions by im2col + matmul (depthwise
  ones as a sum of shifted slices), max pooling as a running max, the LSTM and
  TreeLSTM as plain Python loops/recursion over numpy calls.

The two outputs must agree (``np.testing.assert_allclose``) before anything is
timed. Workloads:

* ResNet-18 (batch 1, 3×224×224; conv2d + ``nn.batch_norm`` + relu, max pool,
  global average pool, dense);
* MobileNet v1 (batch 1, 224×224; depthwise convolutions via ``groups``);
* an LSTM cell looped over 35 steps (a recursive closure matching on a ``List``
  of inputs);
* a child-sum TreeLSTM over a ``Tree`` (``Rose``) of 40 nodes, hidden 64;
* an MLP 784-512-10 at batch 1;
* scalar programs (``fib``, a tail-recursive counting loop): rule applications
  per second (rules counted with ``trace`` in a separate run) and against the same
  recursion/loop in plain Python on numpy 0-d ``int32`` values.

For each: the median time of ``--runs`` runs of the oracle and of numpy, run
alternately, their ratio and, for the oracle, the share of its time spent inside operator
implementations (``OpDef.impl``, measured in a separate instrumented run). That
share is what the operator references cost; the rest is the interpreter's own
(rule dispatch, environments, argument conversion).

Times are the process's CPU time (``time.process_time``, all threads: fair to both
sides, which use the same BLAS, and much less disturbed by other processes on a busy
machine than wall time); ``--wall`` measures wall-clock time instead.
Runs per workload: as many as fit about 3 s of oracle time (0.6 s with ``--quick``),
at least 3 (1 with ``--quick``); the whole bench takes one to two and a half minutes
of wall time on a 2-core machine (most of it the two CNNs), ``--quick`` 20-40 seconds.

To compare two trees (e.g. before/after), run the same file against each, back to
back: ``PYTHONPATH=<tree> python <copy of this file>`` (the file puts its own tree's
parent first on ``sys.path``, so run a copy placed outside the tree for the other one).

Usage: ``python bench/oracle.py [--runs N] [--quick] [--only NAME ...]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from interpreter import ConstructorValue, evaluate  # noqa: E402
from semantics import ops, parse  # noqa: E402

F32 = np.float32


# --- the Relay side: a program text builder --------------------------------------------------

def shape_text(shape: tuple[int, ...]) -> str:
    if len(shape) == 1:
        return f"({shape[0]})"
    return "(" + ", ".join(str(d) for d in shape) + ")"


def ints(values: Any) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


@dataclass
class RelayNet:
    """Builds the body of ``@main`` in graph form (``%k = op(...);``), weights as parameters."""

    params: list[tuple[str, tuple[int, ...], np.ndarray]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    count: int = 0

    def param(self, array: np.ndarray) -> str:
        name = f"%p{len(self.params)}"
        self.params.append((name, array.shape, array))
        return name

    def let(self, expr: str) -> str:
        name = f"%{self.count}"
        self.count += 1
        self.lines.append(f"  {name} = {expr};")
        return name

    def program(self, out: str, out_shape: tuple[int, ...]) -> str:
        ps = ", ".join(f"{n}: Tensor[{shape_text(s)}, float32]" for n, s, _ in self.params)
        body = "\n".join(self.lines)
        return (f"def @main({ps}) -> Tensor[{shape_text(out_shape)}, float32] {{\n"
                f"{body}\n  {out}\n}}\n")


class RelayOps:
    """The layers as Relay calls (each returns the name of the new binding)."""

    def __init__(self) -> None:
        self.net = RelayNet()

    def input(self, x: np.ndarray) -> str:
        return self.net.param(x)

    def conv(self, x: str, w: np.ndarray, stride: int, pad: int, groups: int = 1) -> str:
        o, _, kh, kw = w.shape
        return self.net.let(
            f"nn.conv2d({x}, {self.net.param(w)}, strides={ints([stride, stride])}, "
            f"padding={ints([pad] * 4)}, groups={groups}, channels={o}, "
            f"kernel_size={ints([kh, kw])})")

    def bn(self, x: str, gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray,
           var: np.ndarray) -> str:
        p = self.net.param
        t = self.net.let(f"nn.batch_norm({x}, {p(gamma)}, {p(beta)}, {p(mean)}, {p(var)}, "
                         f"epsilon=1e-05f)")
        return self.net.let(f"{t}.0")

    def relu(self, x: str) -> str:
        return self.net.let(f"nn.relu({x})")

    def add(self, x: str, y: str) -> str:
        return self.net.let(f"add({x}, {y})")

    def max_pool(self, x: str, size: int, stride: int, pad: int) -> str:
        return self.net.let(f"nn.max_pool2d({x}, pool_size={ints([size, size])}, "
                            f"strides={ints([stride, stride])}, padding={ints([pad] * 4)})")

    def global_avg_pool(self, x: str) -> str:
        return self.net.let(f"nn.batch_flatten(nn.global_avg_pool2d({x}))")

    def dense(self, x: str, w: np.ndarray, b: np.ndarray) -> str:
        d = self.net.let(f"nn.dense({x}, {self.net.param(w)}, units={w.shape[0]})")
        return self.net.let(f"nn.bias_add({d}, {self.net.param(b)})")


class NumpyOps:
    """The same layers in idiomatic numpy (computed on the spot)."""

    def input(self, x: np.ndarray) -> np.ndarray:
        return x

    def conv(self, x: np.ndarray, w: np.ndarray, stride: int, pad: int,
             groups: int = 1) -> np.ndarray:
        n, c, h, wd = x.shape
        o, ci, kh, kw = w.shape
        oh = (h + 2 * pad - kh) // stride + 1
        ow = (wd + 2 * pad - kw) // stride + 1
        if pad:
            x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        if groups == 1:
            if kh == kw == 1:
                cols = x[:, :, ::stride, ::stride].transpose(1, 0, 2, 3).reshape(c, -1)
            else:
                win = sliding_window_view(x, (kh, kw), axis=(2, 3))
                win = win[:, :, ::stride, ::stride]          # n, c, oh, ow, kh, kw
                cols = win.transpose(1, 4, 5, 0, 2, 3).reshape(c * kh * kw, -1)
            out = w.reshape(o, -1) @ cols                     # o, n*oh*ow
            return out.reshape(o, n, oh, ow).transpose(1, 0, 2, 3)
        assert groups == c == o and ci == 1, "only depthwise grouped convolutions"
        out = np.zeros((n, o, oh, ow), dtype=x.dtype)
        for i in range(kh):
            for j in range(kw):
                sl = x[:, :, i:i + stride * (oh - 1) + 1:stride,
                       j:j + stride * (ow - 1) + 1:stride]
                out += sl * w[:, 0, i, j][None, :, None, None]
        return out

    def bn(self, x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, mean: np.ndarray,
           var: np.ndarray) -> np.ndarray:
        k = (gamma / np.sqrt(var + F32(1e-5)))[None, :, None, None]
        return (x - mean[None, :, None, None]) * k + beta[None, :, None, None]

    def relu(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(x, F32(0))

    def add(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return x + y

    def max_pool(self, x: np.ndarray, size: int, stride: int, pad: int) -> np.ndarray:
        n, c, h, w = x.shape
        oh = (h + 2 * pad - size) // stride + 1
        ow = (w + 2 * pad - size) // stride + 1
        xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
        out = None
        for i in range(size):
            for j in range(size):
                sl = xp[:, :, i:i + stride * (oh - 1) + 1:stride,
                        j:j + stride * (ow - 1) + 1:stride]
                out = sl.copy() if out is None else np.maximum(out, sl, out=out)
        assert out is not None
        return out

    def global_avg_pool(self, x: np.ndarray) -> np.ndarray:
        return x.mean(axis=(2, 3))

    def dense(self, x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
        return x @ w.T + b


# --- the networks, written once for both sides ------------------------------------------------

class Weights:
    """Deterministic He-initialized float32 weights (drawn in a fixed order).

    The arrays drawn are remembered per seed, so building a network again (the numpy
    side, on every run) reuses them instead of drawing new ones.
    """

    _drawn: dict[int, list[Any]] = {}

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.seen = self._drawn.setdefault(seed, [])
        self.k = 0

    def _take(self, make: Callable[[], Any]) -> Any:
        if self.k == len(self.seen):
            self.seen.append(make())
        self.k += 1
        return self.seen[self.k - 1]

    def conv(self, o: int, i: int, k: int) -> np.ndarray:
        scale = np.sqrt(2.0 / (i * k * k))
        return self._take(
            lambda: (self.rng.standard_normal((o, i, k, k)) * scale).astype(F32))

    def bn(self, c: int) -> tuple[np.ndarray, ...]:
        r = self.rng
        return self._take(lambda: (
            (1 + 0.1 * r.standard_normal(c)).astype(F32), (0.1 * r.standard_normal(c)).astype(F32),
            (0.1 * r.standard_normal(c)).astype(F32), (1 + 0.1 * r.random(c)).astype(F32)))

    def dense(self, o: int, i: int) -> tuple[np.ndarray, np.ndarray]:
        return self._take(lambda: ((self.rng.standard_normal((o, i)) / np.sqrt(i)).astype(F32),
                                   (0.1 * self.rng.standard_normal(o)).astype(F32)))

    def input(self, *shape: int) -> np.ndarray:
        return self._take(lambda: self.rng.standard_normal(shape).astype(F32))


def resnet18(b: Any, res: int = 224) -> Any:
    w = Weights(18)
    x = b.input(w.input(1, 3, res, res))
    x = b.relu(b.bn(b.conv(x, w.conv(64, 3, 7), 2, 3), *w.bn(64)))
    x = b.max_pool(x, 3, 2, 1)
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for block in range(2):
            s = stride if block == 0 else 1
            y = b.relu(b.bn(b.conv(x, w.conv(cout, cin, 3), s, 1), *w.bn(cout)))
            y = b.bn(b.conv(y, w.conv(cout, cout, 3), 1, 1), *w.bn(cout))
            if s != 1 or cin != cout:
                x = b.bn(b.conv(x, w.conv(cout, cin, 1), s, 0), *w.bn(cout))
            x = b.relu(b.add(x, y))
            cin = cout
    return b.dense(b.global_avg_pool(x), *w.dense(1000, 512))


MOBILENET_BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1),
                    (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))


def mobilenet(b: Any, res: int = 224) -> Any:
    w = Weights(1)
    x = b.input(w.input(1, 3, res, res))
    x = b.relu(b.bn(b.conv(x, w.conv(32, 3, 3), 2, 1), *w.bn(32)))
    cin = 32
    for cout, stride in MOBILENET_BLOCKS:
        x = b.relu(b.bn(b.conv(x, w.conv(cin, 1, 3), stride, 1, groups=cin), *w.bn(cin)))
        x = b.relu(b.bn(b.conv(x, w.conv(cout, cin, 1), 1, 0), *w.bn(cout)))
        cin = cout
    return b.dense(b.global_avg_pool(x), *w.dense(1000, 1024))


def mlp(b: Any) -> Any:
    w = Weights(7)
    x = b.input(w.input(1, 784))
    h = b.relu(b.dense(x, *w.dense(512, 784)))
    return b.dense(h, *w.dense(10, 512))


@dataclass
class Workload:
    name: str
    oracle: Callable[[], Any]       # one evaluation
    numpy: Callable[[], Any]        # the same computation in numpy
    rules: Callable[[], int] | None = None   # rule applications of one evaluation
    tol: float = 1e-4


def network(name: str, build: Callable[[Any], Any], tol: float) -> Workload:
    rb = RelayOps()
    out = build(rb)
    shape = (1, 10) if build is mlp else (1, 1000)
    mod = parse(rb.net.program(out, shape))
    args = [a for _, _, a in rb.net.params]
    evaluate(mod, *args)  # type-checks it once
    return Workload(name, lambda: evaluate(mod, *args, check=False),
                    lambda: build(NumpyOps()), tol=tol)


# --- LSTM ------------------------------------------------------------------------------------

LSTM = """
def @main(%xs: List[Tensor[(1, {H}), float32]], %h0: Tensor[(1, {H}), float32],
          %c0: Tensor[(1, {H}), float32], %wi: Tensor[({G}, {H}), float32],
          %wh: Tensor[({G}, {H}), float32], %b: Tensor[({G}), float32])
          -> Tensor[(1, {H}), float32] {{
  let %loop = fn (%in: List[Tensor[(1, {H}), float32]], %h: Tensor[(1, {H}), float32],
                  %c: Tensor[(1, {H}), float32])
                  -> (Tensor[(1, {H}), float32], Tensor[(1, {H}), float32]) {{
    match (%in) {{
      Nil => (%h, %c),
      Cons(%x, %rest) => {{
        let %gates = nn.bias_add(add(nn.dense(%x, %wi, units={G}), nn.dense(%h, %wh, units={G})),
                                 %b);
        let %s = split(%gates, indices_or_sections=4, axis=1);
        let %c2 = add(multiply(sigmoid(%s.1), %c), multiply(sigmoid(%s.0), tanh(%s.2)));
        let %h2 = multiply(sigmoid(%s.3), tanh(%c2));
        %loop(%rest, %h2, %c2)
      }},
    }}
  }};
  %loop(%xs, %h0, %c0).0
}}
"""


def sigmoid(x: np.ndarray) -> np.ndarray:
    return F32(1) / (F32(1) + np.exp(-x))


def lstm(steps: int = 35, hidden: int = 128) -> Workload:
    w = Weights(35)
    g = 4 * hidden
    xs_np = [w.input(1, hidden) for _ in range(steps)]
    h0, c0 = w.input(1, hidden), w.input(1, hidden)
    wi, b = w.dense(g, hidden)
    wh, _ = w.dense(g, hidden)
    xs: Any = ConstructorValue("Nil")
    for x in reversed(xs_np):
        xs = ConstructorValue("Cons", (x, xs))
    mod = parse(LSTM.format(H=hidden, G=g))
    args = (xs, h0, c0, wi, wh, b)
    evaluate(mod, *args)

    def direct() -> np.ndarray:
        h, c = h0, c0
        for x in xs_np:
            gates = x @ wi.T + h @ wh.T + b
            i, f, u, o = np.split(gates, 4, axis=1)
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(u)
            h = sigmoid(o) * np.tanh(c)
        return h

    return Workload(f"LSTM ({steps} steps, hidden {hidden})",
                    lambda: evaluate(mod, *args, check=False), direct, tol=1e-4)


# --- child-sum TreeLSTM ----------------------------------------------------------------------

TREE_LSTM = """
def @main(%tree: Tree[Tensor[(1, {H}), float32]], %wiou: Tensor[({H3}, {H}), float32],
          %uiou: Tensor[({H3}, {H}), float32], %biou: Tensor[({H3}), float32],
          %wf: Tensor[({H}, {H}), float32], %uf: Tensor[({H}, {H}), float32],
          %bf: Tensor[({H}), float32]) -> Tensor[(1, {H}), float32] {{
  let %node = fn (%t: Tree[Tensor[(1, {H}), float32]])
                 -> (Tensor[(1, {H}), float32], Tensor[(1, {H}), float32]) {{
    match (%t) {{
      Rose(%x, %kids) => {{
        let %states = @map(%node, %kids);
        let %hsum = @foldl(fn (%acc: Tensor[(1, {H}), float32],
                               %s: (Tensor[(1, {H}), float32], Tensor[(1, {H}), float32])) {{
                             add(%acc, %s.0)
                           }}, zeros(shape=[1, {H}], dtype="float32"), %states);
        let %iou = nn.bias_add(add(nn.dense(%x, %wiou, units={H3}),
                                   nn.dense(%hsum, %uiou, units={H3})), %biou);
        let %parts = split(%iou, indices_or_sections=3, axis=1);
        let %fx = nn.bias_add(nn.dense(%x, %wf, units={H}), %bf);
        let %fc = @foldl(fn (%acc: Tensor[(1, {H}), float32],
                             %s: (Tensor[(1, {H}), float32], Tensor[(1, {H}), float32])) {{
                           add(%acc, multiply(sigmoid(add(%fx, nn.dense(%s.0, %uf, units={H}))),
                                              %s.1))
                         }}, zeros(shape=[1, {H}], dtype="float32"), %states);
        let %c = add(multiply(sigmoid(%parts.0), tanh(%parts.2)), %fc);
        (multiply(sigmoid(%parts.1), tanh(%c)), %c)
      }},
    }}
  }};
  %node(%tree).0
}}
"""


def tree_lstm(nodes: int = 40, hidden: int = 64) -> Workload:
    w = Weights(40)
    h3 = 3 * hidden
    # A random tree: node k > 0 hangs under a node chosen among the earlier ones.
    parent = [-1] + [int(w.rng.integers(0, k)) for k in range(1, nodes)]
    feats = [w.input(1, hidden) for _ in range(nodes)]
    kids: list[list[int]] = [[] for _ in range(nodes)]
    for k in range(1, nodes):
        kids[parent[k]].append(k)
    wiou, biou = w.dense(h3, hidden)
    uiou, _ = w.dense(h3, hidden)
    wf, bf = w.dense(hidden, hidden)
    uf, _ = w.dense(hidden, hidden)

    def to_value(k: int) -> ConstructorValue:
        # Built bottom-up (node numbers only grow downwards), no recursion needed.
        built: dict[int, ConstructorValue] = {}
        for j in range(nodes - 1, -1, -1):
            lst: Any = ConstructorValue("Nil")
            for c in reversed(kids[j]):
                lst = ConstructorValue("Cons", (built[c], lst))
            built[j] = ConstructorValue("Rose", (feats[j], lst))
        return built[k]

    tree = to_value(0)
    mod = parse(TREE_LSTM.format(H=hidden, H3=h3))
    args = (tree, wiou, uiou, biou, wf, uf, bf)
    evaluate(mod, *args)

    def direct() -> np.ndarray:
        states: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for j in range(nodes - 1, -1, -1):
            x = feats[j]
            hsum = np.zeros((1, hidden), F32)
            for c in kids[j]:
                hsum = hsum + states[c][0]
            iou = x @ wiou.T + hsum @ uiou.T + biou
            i, o, u = np.split(iou, 3, axis=1)
            fx = x @ wf.T + bf
            fc = np.zeros((1, hidden), F32)
            for c in kids[j]:
                hc, cc = states[c]
                fc = fc + sigmoid(fx + hc @ uf.T) * cc
            cell = sigmoid(i) * np.tanh(u) + fc
            states[j] = (sigmoid(o) * np.tanh(cell), cell)
        return states[0][0]

    return Workload(f"TreeLSTM ({nodes} nodes, hidden {hidden})",
                    lambda: evaluate(mod, *args, check=False), direct, tol=1e-4)


# --- scalar programs -------------------------------------------------------------------------

SCALARS = """
def @fib(%n: int32) -> int32 {
  if (%n < 2) { %n } else { @fib(%n - 1) + @fib(%n - 2) }
}
def @count(%i: int32, %n: int32, %acc: int32) -> int32 {
  if (%i < %n) { @count(%i + 1, %n, %acc + %i) } else { %acc }
}
"""


def fib_numpy(n: np.ndarray) -> np.ndarray:
    # The same recursion on 0-d int32 arrays (what the oracle computes with).
    one, two = np.int32(1), np.int32(2)
    stack: list[np.ndarray] = [n]
    total = np.asarray(np.int32(0))
    while stack:
        k = stack.pop()
        if k < two:
            total = np.asarray(total + k)
        else:
            stack.append(np.asarray(k - one))
            stack.append(np.asarray(k - two))
    return total


def count_numpy(n: np.ndarray) -> np.ndarray:
    i, acc, one = np.asarray(np.int32(0)), np.asarray(np.int32(0)), np.int32(1)
    while i < n:
        acc = np.asarray(acc + i)
        i = np.asarray(i + one)
    return acc


def count_rules(mod: Any, args: tuple[Any, ...], entry: str) -> int:
    n = 0

    def trace(name: str, node: Any) -> None:
        nonlocal n
        n += 1

    evaluate(mod, *args, entry=entry, check=False, trace=trace)
    return n


def scalars(quick: bool) -> list[Workload]:
    mod = parse(SCALARS)
    k = 15 if quick else 18
    steps = 10_000 if quick else 30_000
    fib_args = (np.int32(k),)
    count_args = (np.int32(0), np.int32(steps), np.int32(0))
    evaluate(mod, *fib_args, entry="fib")
    return [
        Workload(f"fib({k})", lambda: evaluate(mod, *fib_args, entry="fib", check=False),
                 lambda: fib_numpy(np.asarray(np.int32(k))),
                 rules=lambda: count_rules(mod, fib_args, "fib"), tol=0),
        Workload(f"counting loop ({steps:,} steps)",
                 lambda: evaluate(mod, *count_args, entry="count", check=False),
                 lambda: count_numpy(np.asarray(np.int32(steps))),
                 rules=lambda: count_rules(mod, count_args, "count"), tol=0),
    ]


# --- measuring -------------------------------------------------------------------------------

CLOCK = time.process_time


def median_times(a: Callable[[], Any], b: Callable[[], Any], runs: int) -> tuple[float, float]:
    """Median times (``CLOCK``) of ``a`` and of ``b``, run alternately (so that a busy
    machine slows both alike)."""
    ta, tb = [], []
    clock = CLOCK
    for _ in range(runs):
        start = clock()
        a()
        ta.append(clock() - start)
        start = clock()
        b()
        tb.append(clock() - start)
    return statistics.median(ta), statistics.median(tb)


@contextmanager
def timed_operators() -> Iterator[list[float]]:
    """Wrap every operator implementation with a timer; yields the accumulated seconds."""
    total = [0.0]
    saved = {}
    clock = CLOCK

    def timed(impl: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **attrs: Any) -> Any:
            start = clock()
            try:
                return impl(*args, **attrs)
            finally:
                total[0] += clock() - start
        return run

    for name in ops.list_ops():
        opdef = ops.get(name)
        saved[name] = opdef.impl
        object.__setattr__(opdef, "impl", timed(opdef.impl))
    try:
        yield total
    finally:
        for name, impl in saved.items():
            object.__setattr__(ops.get(name), "impl", impl)


def operator_share(fn: Callable[[], Any], runs: int) -> float:
    with timed_operators() as total:
        start = CLOCK()
        for _ in range(runs):
            fn()
        elapsed = CLOCK() - start
    return total[0] / elapsed if elapsed else 0.0


def check_agree(w: Workload) -> float:
    """Check that the oracle and numpy agree; return the time of that oracle run."""
    start = CLOCK()
    got = w.oracle()
    single = CLOCK() - start
    want = w.numpy()
    if w.tol:
        np.testing.assert_allclose(got, want, rtol=w.tol, atol=w.tol, err_msg=w.name)
    else:
        np.testing.assert_array_equal(got, want, err_msg=w.name)
        assert np.asarray(got).dtype == np.asarray(want).dtype, w.name
    return single


def build(quick: bool, only: list[str] | None) -> list[Workload]:
    makers: list[tuple[str, Callable[[], list[Workload]]]] = [
        ("resnet", lambda: [network("ResNet-18 (1×3×224×224)", resnet18, 2e-3)]),
        ("mobilenet", lambda: [network("MobileNet v1 (1×3×224×224)", mobilenet, 2e-3)]),
        ("lstm", lambda: [lstm()]),
        ("treelstm", lambda: [tree_lstm()]),
        ("mlp", lambda: [network("MLP 784-512-10, batch 1", mlp, 1e-4)]),
        ("scalar", lambda: scalars(quick)),
    ]
    out: list[Workload] = []
    for key, make in makers:
        if only is None or key in only:
            out.extend(make())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=None, help="runs per measurement (median)")
    parser.add_argument("--quick", action="store_true", help="about 20 seconds")
    parser.add_argument("--only", nargs="*", default=None,
                        help="resnet mobilenet lstm treelstm mlp scalar")
    parser.add_argument("--wall", action="store_true",
                        help="wall-clock time instead of the process's CPU time")
    args = parser.parse_args()
    global CLOCK
    if args.wall:
        CLOCK = time.perf_counter
    quick = args.quick
    started = time.perf_counter()
    print(f"{'workload':<34} {'oracle ms':>10} {'numpy ms':>10} {'× numpy':>8} "
          f"{'ops share':>9} {'rules/s':>10}")
    for w in build(quick, args.only):
        single = check_agree(w)  # (also the warm-up run)
        # Runs: as many as fit a time budget per workload (at least 3, or 1 with --quick;
        # at most 25); tiny workloads are looped so that one timed run lasts about 10 ms.
        inner = max(1, min(100, int(0.01 / max(single, 1e-6))))
        budget = 0.6 if quick else 3.0
        runs = args.runs or max(1 if quick else 3, min(25, int(budget / (single * inner))))

        def many(fn: Callable[[], Any], inner: int = inner) -> Callable[[], None]:
            def run() -> None:
                for _ in range(inner):
                    fn()
            return run

        t_oracle, t_numpy = median_times(many(w.oracle), many(w.numpy), runs)
        t_oracle /= inner
        t_numpy /= inner
        share = operator_share(many(w.oracle), 1)
        rate = f"{w.rules() / t_oracle:>10,.0f}" if w.rules is not None else f"{'':>10}"
        print(f"{w.name:<34} {t_oracle * 1e3:>10.3f} {t_numpy * 1e3:>10.3f} "
              f"{t_oracle / t_numpy:>8.2f} {share:>9.0%} {rate}", flush=True)
    print(f"(total {time.perf_counter() - started:.0f} s; medians; 'ops share' = time inside "
          f"operator implementations / oracle time)")


if __name__ == "__main__":
    main()
