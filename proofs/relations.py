"""Relation soundness: one obligation ``relation.<Name>`` per type relation in the registry
(registered by :mod:`proofs.relation_obligations`).

Each specification below is written from the operator's definition (TVM's documented
semantics, NumPy's for the elementwise/broadcast family), not from the relation's code:
window counts are characterised as "the number of window positions that fit", broadcasting
dimension by dimension, reshape by element count and its special codes, and so on. The
checker (:mod:`proofs.relcheck`) proves each against the registered relation symbolically
with Z3 and checks acceptance exactly (and the numpy reference) on a bounded domain.

:data:`COVERED` names every relation with an obligation; the completeness test compares it
with the registry. Adding a relation is one :class:`RelationCase` entry in :data:`CASES`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from proofs import relations_memory
from proofs.relations_winograd import WINOGRAD_CASES
from proofs.relcheck import AND, ANY, IF, OR, PROD, Config, RelationCase, Shapes

# --- specification helpers (Python ints or Z3 terms alike) -----------------------------------


def bcast_dims(a: Sequence[Any], b: Sequence[Any]) -> tuple[Any, list[Any]]:
    """NumPy broadcasting of two shapes: (defined, result shape)."""
    n = max(len(a), len(b))
    a2 = [1] * (n - len(a)) + list(a)
    b2 = [1] * (n - len(b)) + list(b)
    ok = AND(*[OR(x == y, x == 1, y == 1) for x, y in zip(a2, b2, strict=True)]) if n else True
    return ok, [IF(x == 1, y, x) for x, y in zip(a2, b2, strict=True)]


def into(small: Sequence[Any], big: Sequence[Any]) -> Any:
    """``small`` broadcasts to exactly ``big`` (right-aligned, each dim equal or 1)."""
    if len(small) > len(big):
        return False
    tail = big[len(big) - len(small):]
    return AND(*[OR(x == y, x == 1) for x, y in zip(small, tail, strict=True)]) \
        if small else True


def window(size: Any, k: Any, lo: int, hi: int, s: int, d: int, ceil: bool = False
           ) -> tuple[Any, Callable[[Any], Any]]:
    """A strided, dilated window over a padded axis: (defined, predicate on the count).

    Positions ``0, s, 2s, ...``; a window covers ``d*(k-1)+1`` padded elements. The count is
    the number of positions whose window fits (floor mode), or — ceil mode — one more
    position whenever the last fitting one leaves elements uncovered.
    """
    extent = size + lo + hi
    span = d * (k - 1) + 1
    defined = AND(k >= 1, span <= extent)
    if not ceil:
        return defined, lambda o: AND(o >= 1, (o - 1) * s + span <= extent,
                                      o * s + span > extent)
    return defined, lambda o: AND(o >= 1, (o - 1) * s >= extent - span,
                                  (o - 2) * s < extent - span)


def pair(v: Any) -> tuple[int, int]:
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return (v[0], v[0]) if len(v) == 1 else (v[0], v[1])


def pads(v: Sequence[int]) -> tuple[int, int, int, int]:
    v = list(v)
    if len(v) == 1:
        return v[0], v[0], v[0], v[0]
    if len(v) == 2:
        return v[0], v[1], v[0], v[1]
    return v[0], v[1], v[2], v[3]


def axes_of(axis: Any, ndim: int, exclude: bool = False) -> set[int] | None:
    """Reduction axes (None: out of range)."""
    if axis is None:
        chosen = set(range(ndim))
    else:
        chosen = set()
        for a in axis:
            if not -ndim <= a < ndim:
                return None
            chosen.add(a % ndim)
    return set(range(ndim)) - chosen if exclude and axis is not None else chosen


def reduce_spec(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x = s[0]
    axes = axes_of(at.get("axis"), len(x), at.get("exclude", False))
    if axes is None:
        return False, [[]]
    keep = at.get("keepdims", False)
    return True, [[1 if i in axes else d for i, d in enumerate(x) if keep or i not in axes]]


def same(i: int = 0) -> Callable[[Shapes, dict[str, Any]], tuple[Any, Shapes]]:
    return lambda s, at: (True, [list(s[i])])


def norm(axis: int, ndim: int) -> int | None:
    return axis % ndim if ndim and -ndim <= axis < ndim else None


# --- specifications ----------------------------------------------------------------------------

def s_broadcast(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    ok, out = bcast_dims(s[0], s[1])
    return ok, [out]


def s_where(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    ok1, ab = bcast_dims(s[1], s[2])
    ok2, out = bcast_dims(s[0], ab)
    return AND(ok1, ok2), [out]


def s_variance(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x, m = s
    if len(x) == 0 or len(m) != len(x):
        return False, [[]]
    pre, out = reduce_spec([x], at)
    return AND(pre, into(m, x)), out


def s_full(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    return len(s[0]) == 0, [list(at["shape"])]


def s_full_like(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    return len(s[1]) == 0, [list(s[0])]


def s_arange(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    return all(len(x) == 0 for x in s), [[ANY]]


def s_broadcast_to(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    return into(s[0], list(at["shape"])), [list(at["shape"])]


def s_broadcast_to_like(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    return into(s[0], s[1]), [list(s[1])]


def s_collapse_sum_like(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    return into(s[1], s[0]), [list(s[1])]


def s_concatenate(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    r = len(s[0])
    ax = norm(at["axis"], r)
    if ax is None or any(len(x) != r for x in s):
        return False, [[]]
    ok = AND(*[x[i] == s[0][i] for x in s for i in range(r) if i != ax])
    out = list(s[0])
    out[ax] = sum((x[ax] for x in s[1:]), s[0][ax])
    return ok, [out]


def s_stack(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    r = len(s[0])
    ax = norm(at["axis"], r + 1)
    if ax is None or any(len(x) != r for x in s):
        return False, [[]]
    ok = AND(*[x[i] == s[0][i] for x in s for i in range(r)])
    return ok, [[*s[0][:ax], len(s), *s[0][ax:]]]


def s_expand_dims(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x = s[0]
    ax = norm(at["axis"], len(x) + 1)
    if ax is None:
        return False, [[]]
    return True, [[*x[:ax], *([1] * at["num_newaxis"]), *x[ax:]]]


def s_squeeze(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x = s[0]
    if at["axis"] is None:
        # every dim equal to 1 goes: a concrete-only definition (the bounded part checks it)
        if not all(isinstance(d, int) for d in x):
            return True, [[ANY]]
        return True, [[d for d in x if d != 1]]
    axes = axes_of(at["axis"], len(x))
    if axes is None:
        return False, [[]]
    return AND(*[x[i] == 1 for i in axes]), [[d for i, d in enumerate(x) if i not in axes]]


def s_reshape(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    """newshape codes (TVM): a positive value is that extent, 0 copies the input dim, -1 is
    inferred, -2 copies the remaining input dims, -3 merges two input dims, -4 splits one
    input dim into the next two values (one may be -1). The element count is kept. -1 is
    the product of the input dims no copy code carried over divided by the product of the
    explicit output extents (for an empty tensor this fixes which 0 is meant)."""
    x = list(s[0])
    out: list[Any] = []
    carried: set[int] = set()       # output positions produced from input dims
    used: set[int] = set()          # input dims those consumed
    i, k, infer = 0, 0, None
    codes = list(at["newshape"])
    ok: list[Any] = []
    while k < len(codes):
        c = codes[k]
        if c > 0:
            out.append(c)
            i += 1
        elif c == 0 or c == -2 or c == -3:
            take = 1 if c == 0 else (2 if c == -3 else len(x) - i)
            if i + take > len(x) or take < 0:
                return False, [[]]
            span = list(range(i, i + take))
            if c == -3:
                carried.add(len(out))
                out.append(x[i] * x[i + 1])
            else:
                for j in span:
                    carried.add(len(out))
                    out.append(x[j])
            used.update(span)
            i += take
        elif c == -1:
            infer = len(out)
            out.append(None)
            i += 1
        elif c == -4:
            if i >= len(x) or k + 2 >= len(codes):
                return False, [[]]
            p, q = codes[k + 1], codes[k + 2]
            d = x[i]
            if p == -1:
                ok.append(d % q == 0)
                parts = [d / q if not isinstance(d, int) else d // q, q]
            elif q == -1:
                ok.append(d % p == 0)
                parts = [p, d / p if not isinstance(d, int) else d // p]
            else:
                ok.append(d == p * q)
                parts = [p, q]
            used.add(i)
            carried.update((len(out), len(out) + 1))
            out.extend(parts)
            i += 1
            k += 2
        k += 1
    total = PROD(x)
    if infer is not None:
        num = PROD([d for j, d in enumerate(x) if j not in used])
        den = PROD([d for j, d in enumerate(out) if j not in carried and j != infer])
        if not isinstance(den, int):
            return True, [[ANY] * len(out)]
        if not isinstance(num, int):       # symbolic: the quotient, where it is exact
            if den == 0:
                return False, [[]]
            ok.append(num % den == 0)
            out[infer] = num / den
            ok.append(PROD(out) == total)
            return AND(*ok), [out]
        if den == 0 or num % den:
            return False, [[]]
        out[infer] = num // den
    ok.append(PROD(out) == total)
    return AND(*ok), [out]


def s_reshape_like(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x, y = s
    le = len(x) if at["lhs_end"] is None else at["lhs_end"] % (len(x) + 1)
    re = len(y) if at["rhs_end"] is None else at["rhs_end"] % (len(y) + 1)
    lb, rb = at["lhs_begin"], at["rhs_begin"]
    out = [*x[:lb], *y[rb:re], *x[le:]]
    return PROD(out) == PROD(x), [out]


def s_transpose(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x = s[0]
    axes = at["axes"] if at["axes"] is not None else list(range(len(x)))[::-1]
    if sorted(a % len(x) for a in axes) != list(range(len(x))):
        return False, [[]]
    return True, [[x[a % len(x)] for a in axes]]


def s_split(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    """Sections: n equal pieces (n divides the dim). Indices: pieces [0,i1), [i1,i2), ...,
    [ik, dim) with 0 < i1 < ... < ik < dim."""
    x = s[0]
    ax = norm(at["axis"], len(x))
    if ax is None:
        return False, [[]]
    spec = at["indices_or_sections"]
    d = x[ax]
    if isinstance(spec, int):
        return d % spec == 0, [[*x[:ax], (lambda o, d=d: o * spec == d), *x[ax + 1:]]
                               for _ in range(spec)]
    idx = [0, *spec]
    ok = AND(*[idx[i] < idx[i + 1] for i in range(len(spec))], spec[-1] < d)
    sizes = [idx[i + 1] - idx[i] for i in range(len(spec))] + [d - spec[-1]]
    return ok, [[*x[:ax], z, *x[ax + 1:]] for z in sizes]


def s_take(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x, ind = s
    if at["axis"] is None:
        return True, [list(ind)]
    ax = norm(at["axis"], len(x))
    if ax is None:
        return False, [[]]
    return True, [[*x[:ax], *ind, *x[ax + 1:]]]


def tvm_clamp(i: int, n: Any, stride: int) -> Any:
    """TVM's canonical slice bound: negatives count from the end, then clamp."""
    lo, hi = (-1, n - 1) if stride < 0 else (0, n)
    v = i + n if i < 0 else i
    return IF(v < lo, lo, IF(v > hi, hi, v))


def s_strided_slice(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    """Per sliced axis: bounds clamped as TVM does; begin past end is an error; the extent is
    the number of indices ``b, b+st, ...`` before ``e``."""
    x = list(s[0])
    big = 2 ** 31 - 1
    axes = at["axes"] if at["axes"] is not None else list(range(len(at["begin"])))
    strides = list(at["strides"] or []) + [1] * len(axes)
    ok: list[Any] = []
    for k, a in enumerate(axes):
        if norm(a, len(x)) is None:
            return False, [[]]
        a = a % len(x)
        st = strides[k]
        n = x[a]
        b = tvm_clamp(at["begin"][k], n, st)
        e = tvm_clamp(at["end"][k] if k < len(at["end"]) else (big if st > 0 else 0), n, st)
        ok.append(b <= e if st > 0 else e <= b)
        length = e - b if st > 0 else b - e
        x[a] = _count_of(length, abs(st))
    return AND(*ok), [x]


def _count_of(length: Any, step: int) -> Callable[[Any], Any]:
    """The predicate "o is the number of indices 0, step, 2*step, ... below length"."""
    return lambda o: AND(o * step >= length, (o - 1) * step < length, o >= 0)


def s_tile(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x, reps = list(s[0]), list(at["reps"])
    w = max(len(x), len(reps))
    x = [1] * (w - len(x)) + x
    reps = [1] * (w - len(reps)) + reps
    return True, [[d * r for d, r in zip(x, reps, strict=True)]]


def s_repeat(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x = list(s[0])
    ax = norm(at["axis"], len(x))
    if ax is None:
        return False, [[]]
    x[ax] = x[ax] * at["repeats"]
    return True, [x]


def s_reverse(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    return norm(at["axis"], len(s[0])) is not None, [list(s[0])]


def s_shape_of(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    return True, [[len(s[0])]]


def s_layout_transform(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    """A layout names each axis; ``4c`` is a block of 4 of axis ``C``. The result lists, for
    each destination axis, the logical extent divided (or multiplied back) by the blocks."""
    src, dst = at["src_layout"], at["dst_layout"]
    x = s[0]
    logical: dict[str, Any] = {}
    ok: list[Any] = []
    parsed = _layout(src)
    if len(parsed) != len(x):
        return False, [[]]
    for (_name, block), d in zip(parsed, x, strict=True):
        if block:
            ok.append(d == block)
    for (name, block), d in zip(parsed, x, strict=True):
        if not block:
            inner = [b for n2, b in parsed if n2 == name.lower() and b]
            logical[name] = d * (inner[0] if inner else 1)
    out: list[Any] = []
    for name, block in _layout(dst):
        if block:
            ok.append(logical[name.upper()] % block == 0)
            out.append(block)
        else:
            inner = [b for n2, b in _layout(dst) if n2 == name.lower() and b]
            full = logical[name]
            out.append((lambda o, full=full, b=inner[0]: o * b == full) if inner else full)
    return AND(*ok), [out]


def _layout(text: str) -> list[tuple[str, int]]:
    out, num = [], ""
    for ch in text:
        if ch.isdigit():
            num += ch
        else:
            out.append((ch, int(num) if num else 0))
            num = ""
    return out


def s_conv2d(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    """NCHW data, OIHW weight (or NHWC/HWIO): O output channels, I*groups == C, each spatial
    extent the window count."""
    dl, kl = at["data_layout"], at["kernel_layout"]
    n, c, h, w = (s[0][dl.index(k)] for k in "NCHW")
    o, i, kh, kw = (s[1][kl.index(k)] for k in "OIHW")
    g = at["groups"]
    (sh, sw), (dh, dw) = pair(at["strides"]), pair(at["dilation"])
    pt, pl, pb, pr = pads(at["padding"])
    okh, oh = window(h, kh, pt, pb, sh, dh)
    okw, ow = window(w, kw, pl, pr, sw, dw)
    dims: dict[str, Any] = {"N": n, "C": o, "H": oh, "W": ow}
    ok = AND(c == i * g, o % g == 0, okh, okw)
    return ok, [[dims[k] for k in (at["out_layout"] or dl)]]


def s_conv2d_transpose(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    """The adjoint of conv2d in its data: the output extent is the smallest input extent a
    forward convolution (same kernel, stride, dilation, padding) maps onto ``h``, plus
    ``output_padding``."""
    n, c, h, w = s[0]
    i, og, kh, kw = s[1]
    g = at["groups"]
    (sh, sw), (dh, dw) = pair(at["strides"]), pair(at["dilation"])
    pt, pl, pb, pr = pads(at["padding"])
    oph, opw = pair(at["output_padding"])
    ext_h = (h - 1) * sh + dh * (kh - 1) + 1 - pt - pb + oph
    ext_w = (w - 1) * sw + dw * (kw - 1) + 1 - pl - pr + opw
    ok = AND(c == i, c % g == 0, oph < sh, opw < sw, ext_h >= 0, ext_w >= 0)
    return ok, [[n, og * g, ext_h, ext_w]]


def s_conv2d_backward_weight(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    """grad is the forward output's shape; the result is the OIHW weight shape."""
    gn, o, oh, ow = s[0]
    n, c, h, w = s[1]
    g = at["groups"]
    kh, kw = pair(at["kernel_size"])
    (sh, sw), (dh, dw) = pair(at["strides"]), pair(at["dilation"])
    pt, pl, pb, pr = pads(at["padding"])
    okh, ph = window(h, kh, pt, pb, sh, dh)
    okw, pw = window(w, kw, pl, pr, sw, dw)
    ok = AND(gn == n, c % g == 0, o % g == 0, okh, okw, ph(oh), pw(ow))
    return ok, [[o, (lambda v: v * g == c), kh, kw]]


def s_dense(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x, wt = s
    if len(x) < 1 or len(wt) != 2:
        return False, [[]]
    return x[-1] == wt[1], [[*x[:-1], wt[0]]]


def s_batch_matmul(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x, y = s
    m, k1 = (x[2], x[1]) if at["transpose_a"] else (x[1], x[2])
    nn, k2 = (y[1], y[2]) if at["transpose_b"] else (y[2], y[1])
    okb, (b,) = bcast_dims([x[0]], [y[0]])
    return AND(okb, k1 == k2), [[b, m, nn]]


def s_bias_add(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x, b = s
    ax = norm(at["axis"], len(x))
    if ax is None or len(b) != 1:
        return False, [[]]
    return b[0] == x[ax], [list(x)]


def s_batch_norm(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x = s[0]
    ax = norm(at["axis"], len(x))
    if ax is None or any(len(p) != 1 for p in s[1:]):
        return False, [[]]
    return AND(*[p[0] == x[ax] for p in s[1:]]), [list(x), [x[ax]], [x[ax]]]


def s_dropout(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    return True, [list(s[0]), list(s[0])]


def s_softmax(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    return norm(at["axis"], len(s[0])) is not None, [list(s[0])]


def s_batch_flatten(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x = s[0]
    return len(x) >= 1, [[x[0], PROD(x[1:])]]


def _pool(x: Sequence[Any], at: dict[str, Any]) -> tuple[Any, list[Any]]:
    lay = at["layout"]
    n, c, h, w = (x[lay.index(k)] for k in "NCHW")
    kh, kw = pair(at["pool_size"])
    (sh, sw), (dh, dw) = pair(at["strides"]), pair(at["dilation"])
    pt, pl, pb, pr = pads(at["padding"])
    okh, oh = window(h, kh, pt, pb, sh, dh, at["ceil_mode"])
    okw, ow = window(w, kw, pl, pr, sw, dw, at["ceil_mode"])
    dims = {"N": n, "C": c, "H": oh, "W": ow}
    return AND(okh, okw), [dims[k] for k in (at["out_layout"] or lay)]


def s_pool2d(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    ok, out = _pool(s[0], at)
    return ok, [out]


def s_pool2d_grad(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    ok, pooled = _pool(s[1], at)
    match = AND(*[p(g) if callable(p) else p == g for p, g in zip(pooled, s[0], strict=True)])
    return AND(ok, match), [list(s[1])]


def s_pool2d_pick(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    ok, pooled = _pool(s[0], at)
    return AND(ok, *[a == b for a, b in zip(s[0], s[1], strict=True)]), [pooled]


def s_global_pool2d(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    lay = at["layout"]
    x = s[0]
    dims = {"N": x[lay.index("N")], "C": x[lay.index("C")], "H": 1, "W": 1}
    return AND(x[lay.index("H")] >= 1, x[lay.index("W")] >= 1), \
        [[dims[k] for k in (at["out_layout"] or lay)]]


def s_pad(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    x, v = s
    widths = at["pad_width"]
    if len(v) != 0 or len(widths) != len(x):
        return False, [[]]
    ok: list[Any] = []
    for d, (a, b) in zip(x, widths, strict=True):
        if at["pad_mode"] == "edge" and (a or b):
            ok.append(d >= 1)
        if at["pad_mode"] == "reflect" and (a or b):
            ok.append(d - 1 >= max(a, b))
    return AND(*ok), [[d + a + b for d, (a, b) in zip(x, widths, strict=True)]]


def s_init(s: Shapes, at: dict[str, Any]) -> tuple[Any, Shapes]:
    return True, [list(at["shape"])]


# --- reference inputs for operators that need particular values --------------------------------

def _take_inputs(shapes: list[tuple[int, ...]], dtypes: tuple[str, ...]) -> list[Any]:
    return [np.zeros(shapes[0], dtypes[0]), np.zeros(shapes[1], dtypes[1])]


def _take_nonempty(shapes: list[list[int]], at: dict[str, Any]) -> bool:
    if at["axis"] is None:
        return int(np.prod(shapes[0])) > 0
    return shapes[0][at["axis"] % len(shapes[0])] > 0


def _arange_inputs(shapes: list[tuple[int, ...]], dtypes: tuple[str, ...]) -> list[Any]:
    return [np.array(0, "float32"), np.array(3, "float32"), np.array(1, "float32")]


def C(attrs: dict[str, Any], *ranks: int, symbolic: bool = True,
      dtypes: tuple[str, ...] | None = None,
      ties: tuple[tuple[int, int, int, int], ...] = ()) -> Config:
    return Config(attrs, tuple(ranks), symbolic, dtypes, ties)


CONV_TIE = ((0, 1, 1, 1),)           # weight I is the data's C (groups 1)


F = "float32"
CONV = {"strides": (1, 1), "padding": (0, 0), "dilation": (1, 1)}

CASES: tuple[RelationCase, ...] = (
    RelationCase("Identity", "abs", same(), (C({}, 2), C({}, 0))),
    RelationCase("Broadcast", "add", s_broadcast,
                 (C({}, 2, 2, symbolic=False), C({}, 1, 3, symbolic=False),
                  C({}, 2, 2, ties=((0, 0, 1, 0), (0, 1, 1, 1))),
                  C({}, 3, 1, symbolic=False), C({}, 0, 2, symbolic=False))),
    RelationCase("BroadcastCompare", "less", s_broadcast,
                 (C({}, 2, 2, symbolic=False), C({}, 1, 2, symbolic=False),
                  C({}, 2, 2, ties=((0, 0, 1, 0), (0, 1, 1, 1))))),
    RelationCase("BroadcastShift", "right_shift", s_broadcast,
                 (C({}, 2, 2, symbolic=False, dtypes=("int32", "int32")),
                  C({}, 1, 3, symbolic=False, dtypes=("int8", "int8")),
                  C({}, 2, 2, ties=((0, 0, 1, 0), (0, 1, 1, 1)), dtypes=("int32", "int32")))),
    RelationCase("BroadcastBitwise", "bitwise_xor", s_broadcast,
                 (C({}, 2, 2, symbolic=False, dtypes=("int32", "int32")),
                  C({}, 1, 3, symbolic=False, dtypes=("bool", "bool")),
                  C({}, 2, 2, ties=((0, 0, 1, 0), (0, 1, 1, 1)), dtypes=("uint8", "uint8")))),
    RelationCase("SimulatedQuantize", "annotation.simulated_quantize", same(),
                 (C({}, 2, 0, 0, 0), C({"rounding": "floor"}, 3, 0, 0, 0),
                  C({"rounding": "stochastic", "seed": 3}, 1, 0, 0, 0))),
    RelationCase("Reduce", "sum", reduce_spec,
                 (C({}, 3), C({"axis": (1,)}, 3), C({"axis": (0, 2), "keepdims": True}, 3),
                  C({"axis": (-1,)}, 2), C({"axis": (1,), "exclude": True}, 3),
                  C({"axis": (3,)}, 3))),
    RelationCase("ArgReduce", "argmax", reduce_spec,
                 (C({}, 2), C({"axis": (1,)}, 3), C({"axis": (0,), "keepdims": True}, 2))),
    RelationCase("Variance", "variance", s_variance,
                 (C({"axis": (1,)}, 2, 2), C({"axis": (0,), "keepdims": True}, 2, 2),
                  C({}, 2, 1), C({"axis": (1,)}, 2, 2, ties=((0, 0, 1, 0), (0, 1, 1, 1)))),
                 reference=False,
                 note="reference not run: it needs a mean consistent with the data"),
    RelationCase("InitOp", "zeros", s_init, (C({"shape": (2, 3)}), C({"shape": ()}))),
    RelationCase("Full", "full", s_full, (C({"shape": (2, 3)}, 0), C({"shape": (4,)}, 1))),
    RelationCase("FullLike", "full_like", s_full_like, (C({}, 2, 0), C({}, 2, 1))),
    RelationCase("Arange", "arange", s_arange, (C({}, 0, 0, 0), C({}, 1, 0, 0)),
                 ref_inputs=_arange_inputs, reference=False,
                 note="the result extent depends on run-time values: the relation answers ?"),
    RelationCase("Cast", "cast", same(), (C({"dtype": "int32"}, 3),)),
    RelationCase("Clip", "clip", same(), (C({"a_min": 0.0, "a_max": 1.0}, 2),)),
    RelationCase("Where", "where", s_where,
                 (C({}, 2, 2, 2, symbolic=False, dtypes=("bool", F, F)),
                  C({}, 1, 2, 0, symbolic=False, dtypes=("bool", F, F)),
                  C({}, 2, 2, 2, dtypes=("bool", F, F),
                    ties=((0, 0, 1, 0), (0, 1, 1, 1), (0, 0, 2, 0), (0, 1, 2, 1))))),
    RelationCase("BroadcastTo", "broadcast_to", s_broadcast_to,
                 (C({"shape": (2, 3)}, 2, symbolic=False), C({"shape": (3, 1, 2)}, 1,
                                                              symbolic=False))),
    RelationCase("BroadcastToLike", "broadcast_to_like", s_broadcast_to_like,
                 (C({}, 1, 2, symbolic=False), C({}, 2, 2, symbolic=False),
                  C({}, 3, 2, symbolic=False), C({}, 2, 2, ties=((0, 0, 1, 0), (0, 1, 1, 1))))),
    RelationCase("CollapseSumLike", "collapse_sum_like", s_collapse_sum_like,
                 (C({}, 2, 1, symbolic=False), C({}, 2, 2, symbolic=False),
                  C({}, 2, 2, ties=((0, 0, 1, 0), (0, 1, 1, 1))))),
    RelationCase("Concatenate", "concatenate", s_concatenate,
                 (C({"axis": 0}, 2, 2, symbolic=False), C({"axis": -1}, 2, 2, 2, symbolic=False),
                  C({"axis": 2}, 2, 2), C({"axis": 0}, 1, 2),
                  C({"axis": 1}, 2, 2, ties=((0, 0, 1, 0),))), tuple_input=True),
    RelationCase("Stack", "stack", s_stack,
                 (C({"axis": 0}, 2, 2, symbolic=False), C({"axis": 2}, 2, 2, symbolic=False),
                  C({"axis": -1}, 1, 1, 1, symbolic=False), C({"axis": 3}, 2, 2),
                  C({"axis": 1}, 2, 2, ties=((0, 0, 1, 0), (0, 1, 1, 1)))),
                 tuple_input=True),
    RelationCase("ExpandDims", "expand_dims", s_expand_dims,
                 (C({"axis": 0}, 2), C({"axis": -1, "num_newaxis": 2}, 2), C({"axis": 2}, 1),
                  C({"axis": 3}, 1))),
    RelationCase("Squeeze", "squeeze", s_squeeze,
                 (C({"axis": None}, 3, symbolic=False), C({"axis": (1,)}, 3, symbolic=False),
                  C({"axis": (0, -1)}, 2, symbolic=False))),
    RelationCase("Reshape", "reshape", s_reshape,
                 (C({"newshape": (6,)}, 2),
                  C({"newshape": (-1,)}, 3),
                  C({"newshape": (0, -1)}, 3),
                  C({"newshape": (-2,)}, 2),
                  C({"newshape": (-3, 0)}, 3),
                  C({"newshape": (-4, 2, -1, 0)}, 2),
                  C({"newshape": (2, 3)}, 2))),
    RelationCase("ReshapeLike", "reshape_like", s_reshape_like,
                 (C({}, 2, 1, symbolic=False), C({"lhs_begin": 1}, 2, 2, symbolic=False),
                  C({}, 2, 2, ties=((0, 0, 1, 0), (0, 1, 1, 1))))),
    RelationCase("Transpose", "transpose", s_transpose,
                 (C({}, 3), C({"axes": (1, 0, 2)}, 3), C({"axes": (0, -1, 1)}, 3),
                  C({"axes": (0, 0, 1)}, 3))),
    RelationCase("Split", "split", s_split,
                 (C({"indices_or_sections": 2, "axis": 0}, 2),
                  C({"indices_or_sections": 3, "axis": -1}, 2),
                  C({"indices_or_sections": (1, 3), "axis": 1}, 2),
                  C({"indices_or_sections": (2,), "axis": 0}, 1)), bound=6, max_instances=60),
    RelationCase("Take", "take", s_take,
                 (C({}, 2, 1, dtypes=(F, "int32")), C({"axis": 0}, 2, 2, dtypes=(F, "int32")),
                  C({"axis": -1}, 2, 1, dtypes=(F, "int32"))),
                 ref_inputs=_take_inputs, ref_when=_take_nonempty,
                 note="an empty gathered axis is a run-time error of the reference (no element "
                      "to clip to), like out-of-range indices in fast mode: not a type error"),
    RelationCase("StridedSlice", "strided_slice", s_strided_slice,
                 (C({"begin": (1,), "end": (3,)}, 2), C({"begin": (0, 1), "end": (-1, 100),
                                                        "strides": (2, 1)}, 2),
                  C({"begin": (-1,), "end": (-5,), "strides": (-1,)}, 1),
                  C({"begin": (2,), "end": (1,)}, 1),
                  C({"begin": (0,), "end": (3,), "axes": (1,)}, 2)),
                 bound=5),
    RelationCase("Tile", "tile", s_tile,
                 (C({"reps": (2, 3)}, 2), C({"reps": (2,)}, 2), C({"reps": (1, 2, 2)}, 1))),
    RelationCase("Repeat", "repeat", s_repeat,
                 (C({"repeats": 3, "axis": 1}, 2), C({"repeats": 2, "axis": -1}, 1),
                  C({"repeats": 2, "axis": 2}, 2))),
    RelationCase("Reverse", "reverse", s_reverse,
                 (C({"axis": 1}, 2), C({"axis": -2}, 2), C({"axis": 2}, 2))),
    RelationCase("ShapeOf", "shape_of", s_shape_of, (C({}, 3), C({}, 0))),
    RelationCase("LayoutTransform", "layout_transform", s_layout_transform,
                 (C({"src_layout": "NCHW", "dst_layout": "NHWC"}, 4),
                  C({"src_layout": "NCHW", "dst_layout": "NCHW2c"}, 4, symbolic=False),
                  C({"src_layout": "NCHW2c", "dst_layout": "NCHW"}, 5, symbolic=False)),
                 bound=2),
    RelationCase("Conv2D", "nn.conv2d", s_conv2d,
                 (C(CONV, 4, 4, ties=CONV_TIE),
                  C({"strides": (2, 2), "padding": (1, 1), "dilation": (1, 1)}, 4, 4,
                    ties=CONV_TIE),
                  C({"strides": (2, 1), "padding": (1, 0, 2, 1), "dilation": (2, 1)}, 4, 4,
                    ties=CONV_TIE),
                  C({"groups": 2}, 4, 4),
                  C({"data_layout": "NHWC", "kernel_layout": "HWIO", "strides": (3, 3)}, 4, 4,
                    ties=((0, 3, 1, 2),))),
                 max_instances=200),
    RelationCase("Conv2DTranspose", "nn.conv2d_transpose", s_conv2d_transpose,
                 (C(CONV, 4, 4, ties=((0, 1, 1, 0),)),
                  C({"strides": (2, 2), "padding": (1, 1), "output_padding": (1, 0)}, 4, 4,
                    ties=((0, 1, 1, 0),)),
                  C({"groups": 2, "dilation": (2, 1)}, 4, 4)), max_instances=200),
    RelationCase("Conv2DBackwardWeight", "nn.conv2d_backward_weight", s_conv2d_backward_weight,
                 (C({"kernel_size": (2, 1)}, 4, 4),
                  C({"kernel_size": (1, 2), "strides": (2, 2), "padding": (1, 1)}, 4, 4)),
                 bound=2, max_instances=200),
    RelationCase("Dense", "nn.dense", s_dense,
                 (C({}, 2, 2, ties=((0, 1, 1, 1),)), C({}, 1, 2, ties=((0, 0, 1, 1),)),
                  C({}, 3, 2, ties=((0, 2, 1, 1),)), C({}, 2, 2), C({}, 2, 1))),
    RelationCase("BatchMatmul", "nn.batch_matmul", s_batch_matmul,
                 (C({}, 3, 3, symbolic=False), C({}, 3, 3, ties=((0, 0, 1, 0), (0, 2, 1, 2))),
                  C({"transpose_a": True, "transpose_b": False},
                                                 3, 3, symbolic=False)), max_instances=200),
    RelationCase("BiasAdd", "nn.bias_add", s_bias_add,
                 (C({}, 3, 1), C({}, 3, 1, ties=((0, 1, 1, 0),)),
                  C({"axis": -1}, 2, 1, ties=((0, 1, 1, 0),)), C({}, 2, 2))),
    RelationCase("BatchNorm", "nn.batch_norm", s_batch_norm,
                 (C({}, 2, 1, 1, 1, 1), C({"axis": -1}, 2, 1, 1, 1, 1),
                  C({}, 3, 1, 1, 1, 1, ties=tuple((0, 1, k, 0) for k in range(1, 5)))),
                 max_instances=200),
    RelationCase("Dropout", "nn.dropout", s_dropout, (C({}, 2),), reference=False,
                 note="reference not run: its result pairs the output with a mask"),
    RelationCase("Softmax", "nn.softmax", s_softmax,
                 (C({}, 2), C({"axis": 0}, 3), C({"axis": 2}, 2))),
    # LRN's shape law is softmax's: the identity, with ``axis`` inside the rank.
    RelationCase("LRN", "nn.lrn", s_softmax,
                 (C({"axis": 1}, 4), C({"axis": -1}, 2), C({"axis": 0}, 1))),
    RelationCase("BatchFlatten", "nn.batch_flatten", s_batch_flatten, (C({}, 3), C({}, 1))),
    RelationCase("Pool2D", "nn.max_pool2d", s_pool2d,
                 (C({"pool_size": (2, 2)}, 4),
                  C({"pool_size": (3, 2), "strides": (2, 2), "padding": (1, 1)}, 4),
                  C({"pool_size": (2, 2), "strides": (2, 3), "ceil_mode": True}, 4),
                  C({"pool_size": (2, 1), "dilation": (2, 1), "padding": (1, 0, 0, 1),
                     "ceil_mode": True}, 4),
                  C({"pool_size": (1, 2), "layout": "NHWC"}, 4)), bound=5),
    RelationCase("GlobalPool2D", "nn.global_avg_pool2d", s_global_pool2d,
                 (C({}, 4), C({"layout": "NHWC"}, 4))),
    RelationCase("Pad", "nn.pad", s_pad,
                 (C({"pad_width": ((1, 2), (0, 1))}, 2, 0),
                  C({"pad_width": ((1, 0),), "pad_mode": "edge"}, 1, 0, symbolic=False),
                  C({"pad_width": ((2, 1),), "pad_mode": "reflect"}, 1, 0, symbolic=False),
                  C({"pad_width": ((1, 1),)}, 1, 1))),
    RelationCase("Pool2DGrad", "nn.max_pool2d_grad", s_pool2d_grad,
                 (C({"pool_size": (2, 2)}, 4, 4, symbolic=False),
                  C({"pool_size": (2, 1), "strides": (2, 2)}, 4, 4, symbolic=False)),
                 bound=2, max_instances=200, reference=False,
                 note="reference not run: pooling gradients need a consistent out_grad"),
    RelationCase("Pool2DPick", "nn.max_pool2d_pick", s_pool2d_pick,
                 (C({"pool_size": (2, 2)}, 4, 4, symbolic=False),
                  C({"pool_size": (2, 2), "strides": (2, 2)}, 4, 4,
                    ties=tuple((0, k, 1, k) for k in range(4)))),
                 bound=2, max_instances=200, reference=False,
                 note="reference not run"),
) + WINOGRAD_CASES

#: Every relation name with a soundness obligation (the completeness test checks the registry
#: against this; an operator family added later adds its RelationCase to CASES).
COVERED: frozenset[str] = frozenset(c.relation for c in CASES) | relations_memory.COVERED

BY_NAME: dict[str, RelationCase] = {c.relation: c for c in CASES}

