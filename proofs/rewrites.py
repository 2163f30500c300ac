"""Rewrite validity: every algebraic rewrite a pass performs, as an equation Z3 proves.

Tensors are uninterpreted functions from integer indices to reals (``x(n, c, h, w)``), so
each equation is proved for *all* tensor values and all (symbolic) indices, strides,
paddings, dilations, channel counts, layout block sizes — and **reduction extents**: a
convolution or dense output is a sum over its reduction domain (input channels per group
times kernel height times kernel width, or the dense inner dimension), and the sums are
handled by :func:`sum_identity`, an induction on the number of summed terms whose base and
step Z3 discharges. The domain is enumerated by uninterpreted decoding functions (the
``k``-th reduction point is ``(I(k), A(k), B(k))``), so an identity is proved for every
extent and every enumeration order at once; nothing about the sums is fixed-size.

Each obligation states its side conditions; the ones whose side condition matters come with
a deliberately wrong variant (without it) that the tests show refuted.

What is proved is the *equation the pass documents* (its module docstring names the rule);
that the pass's code builds exactly that expression is checked by the passes' own
differential tests, not here. CanonicalizeOps' ``bias_add`` is proved for every rank (the
index tuple is a Z3 array of symbolic length), CombineParallelConv2d for any number of
branches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import z3

from proofs.core import PROVED, Verdict, obligation, prove_valid

R = z3.RealSort()
Z = z3.IntSort()

Term = Callable[[z3.ArithRef], z3.ArithRef]


def relu(v: z3.ArithRef) -> z3.ArithRef:
    return z3.If(v > 0, v, z3.RealVal(0))


def tensor(name: str, rank: int) -> z3.FuncDeclRef:
    return z3.Function(name, *([Z] * rank), R)


def ints(names: str) -> list[z3.ArithRef]:
    return list(z3.Ints(names))


def sum_identity(left: Term, right: Term, scale: z3.ArithRef | None = None,
                 hyps: Callable[[z3.ArithRef], z3.BoolRef] | None = None,
                 where: str = "") -> Verdict:
    """Prove ``(sum_{k < K} left(k)) * scale == sum_{k < K} right(k)`` for **every** ``K >= 0``.

    First the summand lemma ``left(k) * scale == right(k)`` for a symbolic ``k >= 0`` (its
    refutation is the readable counterexample), then induction on ``K`` with the partial
    sums as uninterpreted functions constrained only by their recursion equations: base
    ``K = 0`` (both sums 0) and step ``K -> K + 1``. ``hyps(k)`` are the side conditions
    (they may mention ``k``).
    """
    k = z3.Int("k")
    c = scale if scale is not None else z3.RealVal(1)
    side = z3.And(k >= 0, hyps(k)) if hyps is not None else k >= 0
    lemma = prove_valid(z3.Implies(side, left(k) * c == right(k)))
    if lemma.status != PROVED:
        return Verdict(lemma.status, (where + ": " if where else "") + "summand k: "
                       + lemma.counterexample, lemma.method, lemma.detail)
    sl, sr = z3.Function("SumL", Z, R), z3.Function("SumR", Z, R)
    base = z3.Implies(z3.And(sl(0) == 0, sr(0) == 0), sl(0) * c == sr(0))
    step = z3.Implies(z3.And(side, left(k) * c == right(k),
                             sl(k + 1) == sl(k) + left(k), sr(k + 1) == sr(k) + right(k),
                             sl(k) * c == sr(k)),
                      sl(k + 1) * c == sr(k + 1))
    v = prove_valid(z3.And(base, step), method="z3-induction")
    if v.status != PROVED:
        return Verdict(v.status, (where + ": " if where else "") + v.counterexample, v.method,
                       v.detail)
    return v


# the k-th point (i, kh, kw) of a convolution's reduction domain: any enumeration
DEC_I = z3.Function("I", Z, Z)
DEC_A = z3.Function("A", Z, Z)
DEC_B = z3.Function("B", Z, Z)


def conv_term(x: Callable[..., z3.ArithRef], w: Callable[..., z3.ArithRef],
              idx: Sequence[z3.ArithRef], og: z3.ArithRef | None = None,
              ci: z3.ArithRef | None = None) -> Term:
    """The ``k``-th summand of output ``[n, o, h, w]`` of a grouped NCHW/OIHW convolution:
    ``x[n, g(o)*CI + i, h*sh + a*dh - ph, w*sw + b*dw - pw] * W[o, i, a, b]`` at the
    reduction point ``(i, a, b) = (I(k), A(k), B(k))``, ``g(o) = o / og`` (``og`` output
    channels per group, ``CI = ci`` input channels per group; None: one group); ``idx`` is
    ``(n, o, h, w, sh, sw, dh, dw, ph, pw)``. The output is the sum of these over the
    ``CI * KH * KW`` points of the domain (symbolic extents)."""
    n, o, h, wd, sh, sw, dh, dw, ph, pw = idx

    def term(k: z3.ArithRef) -> z3.ArithRef:
        i, a, b = DEC_I(k), DEC_A(k), DEC_B(k)
        base = (o / og) * ci if og is not None and ci is not None else z3.IntVal(0)
        return x(n, base + i, h * sh + a * dh - ph, wd * sw + b * dw - pw) * w(o, i, a, b)
    return term


def in_domain(k: z3.ArithRef, ci: z3.ArithRef) -> z3.BoolRef:
    """The ``k``-th reduction point lies in ``[0, CI) x [0, KH) x [0, KW)`` (symbolic KH, KW)."""
    kh, kw = z3.Ints("KH KW")
    return z3.And(DEC_I(k) >= 0, DEC_I(k) < ci, DEC_A(k) >= 0, DEC_A(k) < kh,
                  DEC_B(k) >= 0, DEC_B(k) < kw)


def conv_indices() -> tuple[list[z3.ArithRef], z3.BoolRef]:
    n, o, h, wd, sh, sw, dh, dw, ph, pw = ints("n o h w sh sw dh dw ph pw")
    side = z3.And(sh >= 1, sw >= 1, dh >= 1, dw >= 1, ph >= 0, pw >= 0, n >= 0, o >= 0)
    return [n, o, h, wd, sh, sw, dh, dw, ph, pw], side


# --- FoldScaleAxis ----------------------------------------------------------------------------

def fold_backward_conv() -> Verdict:
    """``conv(x, W)[.., o, ..] * v[o] == conv(x, W * v[o])[.., o, ..]`` (any groups, any
    reduction extents)."""
    x, w, v = tensor("x", 4), tensor("W", 4), tensor("v", 1)
    idx, side = conv_indices()
    og, ci = z3.Ints("og CI")
    o = idx[1]

    def scaled(oo: z3.ArithRef, i: z3.ArithRef, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        return w(oo, i, a, b) * v(oo)
    return sum_identity(conv_term(x, w, idx, og, ci), conv_term(x, scaled, idx, og, ci),
                        scale=v(o), hyps=lambda k: z3.And(side, og >= 1, ci >= 1, in_domain(k, ci)))


def fold_backward_dense() -> Verdict:
    """``dense(x, W)[m, u] * v[u] == dense(x, W * v[u])[m, u]`` (symbolic inner extent)."""
    x, w, v = tensor("x", 2), tensor("W", 2), tensor("v", 1)
    m, u = ints("m u")
    return sum_identity(lambda k: x(m, k) * w(u, k), lambda k: x(m, k) * (w(u, k) * v(u)),
                        scale=v(u))


def fold_backward_bias(wrong: bool = False) -> Verdict:
    """``(E + b) * s == E * s + b * s`` and ``(E - b) * s == E * s - b * s``."""
    e, b, s = z3.Reals("E b s")
    rhs_add = e * s + (b if wrong else b * s)
    return prove_valid(z3.And((e + b) * s == rhs_add, (e - b) * s == e * s - b * s))


def fold_through_relu(wrong: bool = False) -> Verdict:
    """``relu(y) * s == relu(y * s)`` under the side condition ``s > 0`` (per channel)."""
    y, s = z3.Reals("y s")
    claim = relu(y) * s == relu(y * s)
    return prove_valid(claim if wrong else z3.Implies(s > 0, claim))


def fold_forward_conv(wrong: bool = False) -> Verdict:
    """``conv(x * v[c], W) == conv(x, W * S)`` with ``S[o, i] = v[g(o) * CI + i]`` (grouped,
    symbolic CI and reduction extents)."""
    x, w, v = tensor("x", 4), tensor("W", 4), tensor("v", 1)
    idx, side = conv_indices()
    og, ci = z3.Ints("og CI")
    o = idx[1]

    def xs(n: z3.ArithRef, c: z3.ArithRef, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        return x(n, c, a, b) * v(c)

    def ws(oo: z3.ArithRef, i: z3.ArithRef, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        chan = i if wrong else (oo / og) * ci + i     # wrong: ignores the group offset
        return w(oo, i, a, b) * v(chan)
    return sum_identity(conv_term(xs, w, idx, og, ci), conv_term(x, ws, idx, og, ci),
                        hyps=lambda k: z3.And(side, og >= 1, ci >= 1, o >= 0,
                                             in_domain(k, ci)))


def fold_forward_relu_conv() -> Verdict:
    """``conv(relu(x * v[c]), W) == conv(relu(x), W * S)`` when every ``v[c] > 0`` (grouped).

    Proved in two steps: the lemma ``relu(y * s) == relu(y) * s`` for ``s > 0`` (all reals),
    then the convolution identity with ``relu(x)`` as an arbitrary tensor ``r`` and
    ``relu(x * v[c])`` rewritten by the lemma to ``r * v[c]`` (polynomial, no case split).
    """
    lemma = fold_through_relu()
    if lemma.status != "proved":
        return lemma
    r, w, v = tensor("r", 4), tensor("W", 4), tensor("v", 1)
    idx, side = conv_indices()
    og, ci = z3.Ints("og CI")

    def rs(n: z3.ArithRef, ch: z3.ArithRef, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        return r(n, ch, a, b) * v(ch)                 # relu(x v) by the lemma

    def ws(oo: z3.ArithRef, i: z3.ArithRef, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        return w(oo, i, a, b) * v((oo / og) * ci + i)
    return sum_identity(conv_term(rs, w, idx, og, ci), conv_term(r, ws, idx, og, ci),
                        hyps=lambda k: z3.And(side, og >= 1, ci >= 1, in_domain(k, ci)))


def fold_forward_dense() -> Verdict:
    """``dense(x * v, W) == dense(x, W * v[k])`` (symbolic inner extent)."""
    x, w, v = tensor("x", 2), tensor("W", 2), tensor("v", 1)
    m, u = ints("m u")
    return sum_identity(lambda k: (x(m, k) * v(k)) * w(u, k),
                        lambda k: x(m, k) * (w(u, k) * v(k)))


# --- CanonicalizeOps ----------------------------------------------------------------------------

def canon_bias_add(wrong: bool = False) -> Verdict:
    """``bias_add(d, b, axis=a) == add(d, expand_dims(b, axis=1, num_newaxis=r-a-1))`` for
    **every rank** ``r >= 1`` and axis ``0 <= a < r`` (the index tuple is a Z3 array of
    symbolic length ``r``, the data's shape another): the expanded bias ``(C, 1, ..., 1)``
    has rank ``e = num_newaxis + 1 <= r``; right-aligned broadcasting puts its first axis on
    data axis ``r - e``, whose extent must be ``C``, and reads it at ``idx[r - e]`` (at 0
    when ``C == 1``), the trailing size-1 axes at 0; bias_add reads ``b[idx[a]]``."""
    r, a, c = z3.Ints("r a C")
    idx = z3.Array("idx", Z, Z)
    shape = z3.Array("shape", Z, Z)
    d = z3.Function("d", z3.ArraySort(Z, Z), R)
    b = tensor("b", 1)
    k = r - a - 1 + (1 if wrong else 0)           # num_newaxis
    e = k + 1                                      # rank of the expanded bias
    lead = r - e                                   # data axis of its first axis
    side = z3.And(r >= 1, a >= 0, a < r, c >= 0, shape[a] == c, idx[a] >= 0, idx[a] < c)
    read = z3.If(c == 1, z3.IntVal(0), idx[lead])
    claim = z3.And(k >= 0, e <= r, shape[lead] == c,
                   d(idx) + b(idx[a]) == d(idx) + b(read))
    return prove_valid(z3.Implies(side, claim))


# --- SimplifyInference --------------------------------------------------------------------------

def simplify_batch_norm(wrong: bool = False) -> Verdict:
    """``batch_norm(x, gamma, beta, mean, var, axis=a).0 == (x - M) / STD * G + B`` for
    **every rank** ``r >= 1`` and axis ``0 <= a < r`` (also without center / scale), where
    ``M``, ``STD``, ``G``, ``B`` are the per-channel ``mean``, ``sqrt(var + eps)``,
    ``gamma``, ``beta`` expanded by ``r - a - 1`` trailing unit axes: each is read at the
    broadcast index of :func:`canon_bias_add` and the operator reads channel ``idx[a]``.
    The arithmetic is the operator's own, step for step, so no side condition on
    ``var + eps`` is needed (a zero ``std`` gives the oracle's ±inf). ``wrong``: a rewrite
    that adds the mean instead of subtracting it."""
    r, a, c = z3.Ints("r a C")
    idx = z3.Array("idx", Z, Z)
    shape = z3.Array("shape", Z, Z)
    d = z3.Function("x", z3.ArraySort(Z, Z), R)
    mean, std, gamma, beta = (tensor(n, 1) for n in ("mean", "std", "gamma", "beta"))
    k = r - a - 1                                  # num_newaxis of expand_to_axis
    lead = r - (k + 1)                             # data axis of the expanded first axis
    side = z3.And(r >= 1, a >= 0, a < r, c >= 0, shape[a] == c, idx[a] >= 0, idx[a] < c)
    read = z3.If(c == 1, z3.IntVal(0), idx[lead])
    claims = [k >= 0, shape[lead] == c]
    for center in (True, False):
        for scale in (True, False):
            def norm(ch: z3.ArithRef, sign: int, scale: bool = scale,
                     center: bool = center) -> z3.ArithRef:
                out = (d(idx) - sign * mean(ch)) / std(ch)
                out = out * gamma(ch) if scale else out
                return out + beta(ch) if center else out
            claims.append(norm(idx[a], 1) == norm(read, -1 if wrong else 1))
    return prove_valid(z3.Implies(side, z3.And(*claims)))


# --- CombineParallelConv2d ------------------------------------------------------------------------

def combine_split(wrong: bool = False) -> Verdict:
    """Piece m of ``split(conv(x, concatenate(W_0, ..., W_{N-1}, axis=O)), axis=C)`` at the
    offsets ``off(m) = O_0 + ... + O_{m-1}`` is ``conv(x, W_m)`` — for **any number N of
    branches** of any sizes ``O_m >= 1`` and any reduction extents.

    The concatenation is its definition: filter ``o`` of it is filter ``o - off(br(o))`` of
    branch ``br(o)``, the branch whose range ``[off(br(o)), off(br(o) + 1))`` contains ``o``.
    Proved in four steps, each by Z3: (1) the offsets grow by at least one per branch
    (``off(p) + d <= off(p + d)``, induction on d); (2) channel ``off(m) + j`` (``j < O_m``)
    lies in branch m's range and no other (by (1)); (3) so filter ``off(m) + j`` of the
    concatenation is filter j of branch m; (4) the two convolutions are sums of the same
    summands (:func:`sum_identity`). ``wrong``: offsets that forget the earlier branches
    (``off(m + 1) = O_m``)."""
    x = tensor("x", 4)
    wb = z3.Function("Wb", Z, Z, Z, Z, Z, R)         # Wb(m, o, i, a, b): filter o of branch m
    size = z3.Function("O", Z, Z)
    off = z3.Function("off", Z, Z)
    br = z3.Function("br", Z, Z)
    nb = z3.Int("N")

    def off_next(m: z3.ArithRef) -> z3.BoolRef:     # the recursion defining the offsets
        return off(m + 1) == (size(m) if wrong else off(m) + size(m))

    def sizes_ok(m: z3.ArithRef) -> z3.BoolRef:
        return z3.Implies(z3.And(m >= 0, m < nb), size(m) >= 1)

    # (1) off(p) + d <= off(p + d) for 0 <= p, 0 <= d, p + d <= N: induction on d
    p, d = z3.Ints("p d")

    def grows(pp: z3.ArithRef, dd: z3.ArithRef) -> z3.BoolRef:
        return z3.Implies(z3.And(pp >= 0, dd >= 0, pp + dd <= nb), off(pp) + dd <= off(pp + dd))
    step1 = z3.And(grows(p, z3.IntVal(0)),
                   z3.Implies(z3.And(grows(p, d), off_next(p + d), sizes_ok(p + d), d >= 0),
                              grows(p, d + 1)))
    v = prove_valid(step1, method="z3-induction")
    if v.status != PROVED:
        return Verdict(v.status, "offsets: " + v.counterexample, v.method, v.detail)

    # (2) br(off(m) + j) == m for 0 <= m < N, 0 <= j < O_m
    m, j = z3.Ints("m j")
    o = off(m) + j
    bo = br(o)
    in_range = z3.And(m >= 0, m < nb, j >= 0, j < size(m), off(0) == 0)
    br_def = z3.Implies(z3.And(o >= 0, o < off(nb)),
                        z3.And(bo >= 0, bo < nb, off(bo) <= o, o < off(bo + 1)))
    facts = [br_def, off_next(m), off_next(bo), sizes_ok(m), sizes_ok(bo),
             grows(m + 1, nb - m - 1), grows(z3.IntVal(0), m),
             grows(bo + 1, m - bo - 1), grows(m + 1, bo - m - 1)]
    v = prove_valid(z3.Implies(z3.And(in_range, *facts), bo == m))
    if v.status != PROVED:
        return Verdict(v.status, "branch of a channel: " + v.counterexample, v.method, v.detail)

    # (3) filter off(m) + j of the concatenation is filter j of branch m
    def wc(oo: z3.ArithRef, i: z3.ArithRef, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        return wb(br(oo), oo - off(br(oo)), i, a, b)
    i, a, b = ints("i a b")
    v = prove_valid(z3.Implies(z3.And(in_range, bo == m),
                               wc(o, i, a, b) == wb(m, j, i, a, b)))
    if v.status != PROVED:
        return Verdict(v.status, "filter: " + v.counterexample, v.method, v.detail)

    # (4) the convolutions: output channel off(m) + j of the combined conv, channel j of m's
    idx, side = conv_indices()
    n, _, h, wd, *rest = idx

    def branch(oo: z3.ArithRef, i: z3.ArithRef, a: z3.ArithRef, b: z3.ArithRef) -> z3.ArithRef:
        return wb(m, oo, i, a, b)

    def same(kk: z3.ArithRef) -> z3.BoolRef:
        pt = (DEC_I(kk), DEC_A(kk), DEC_B(kk))
        return z3.And(side, in_range, in_domain(kk, z3.Int("CI")), wc(o, *pt) == branch(j, *pt))
    return sum_identity(conv_term(x, wc, [n, o, h, wd, *rest]),
                        conv_term(x, branch, [n, j, h, wd, *rest]), hyps=same,
                        where="convolution")


# --- AlterOpLayout: layout transforms are index bijections ---------------------------------

def blocked_bijection(block: int | None = None, wrong: bool = False) -> Verdict:
    """NCHW <-> NCHW{b}c: ``(n, c, h, w) -> (n, c / b, h, w, c % b)`` and back by
    ``(n, C, h, w, c0) -> (n, C * b + c0, h, w)``; on ``0 <= c < C_total`` (``b | C_total``)
    and ``0 <= C < C_total / b, 0 <= c0 < b`` the two are inverse and in range; and a
    tensor transformed there and back reads every element back. ``block`` None: any
    ``b >= 1`` (symbolic)."""
    c, big, c0, total = ints("c C c0 Ctotal")
    b = z3.Int("b") if block is None else z3.IntVal(block)
    fwd = (c / b, c % b)
    back = big * b + c0 if not wrong else big * b + c0 + 1
    dom = z3.And(b >= 1, total >= 0, total % b == 0)
    roundtrip1 = z3.Implies(z3.And(dom, c >= 0, c < total),
                            z3.And(fwd[0] * b + fwd[1] == c, fwd[0] >= 0, fwd[0] < total / b,
                                   fwd[1] >= 0, fwd[1] < b))
    roundtrip2 = z3.Implies(z3.And(dom, big >= 0, big < total / b, c0 >= 0, c0 < b),
                            z3.And(back / b == big, back % b == c0, back >= 0, back < total))
    x = tensor("x", 4)
    n, h, w = ints("n h w")

    def blocked(nn: z3.ArithRef, cc: z3.ArithRef, hh: z3.ArithRef, ww: z3.ArithRef,
                cb: z3.ArithRef) -> z3.ArithRef:
        return x(nn, cc * b + cb if not wrong else cc * b + cb + 1, hh, ww)
    reads = z3.Implies(z3.And(dom, c >= 0, c < total), blocked(n, c / b, h, w, c % b) ==
                       x(n, c, h, w))
    return prove_valid(z3.And(roundtrip1, roundtrip2, reads))


def kernel_blocked_bijection(block: int | None = None) -> Verdict:
    """OIHW <-> OIHW{b}i{b}o: ``(o, i) -> (o / b, i / b, i % b, o % b)`` is inverted by
    ``(O, I, i0, o0) -> (O * b + o0, I * b + i0)`` on channel counts the block divides
    (``block`` None: any ``b >= 1``)."""
    o, i, big_o, big_i, i0, o0, to, ti = ints("o i O I i0 o0 To Ti")
    b = z3.Int("b") if block is None else z3.IntVal(block)
    dom = z3.And(b >= 1, to >= 0, ti >= 0, to % b == 0, ti % b == 0)
    fwd = z3.Implies(z3.And(dom, o >= 0, o < to, i >= 0, i < ti),
                     z3.And((o / b) * b + o % b == o, (i / b) * b + i % b == i,
                            o / b < to / b, i / b < ti / b))
    back = z3.Implies(z3.And(dom, big_o >= 0, big_o < to / b, big_i >= 0, big_i < ti / b,
                             i0 >= 0, i0 < b, o0 >= 0, o0 < b),
                      z3.And((big_o * b + o0) / b == big_o, (big_o * b + o0) % b == o0,
                             (big_i * b + i0) / b == big_i, (big_i * b + i0) % b == i0,
                             big_o * b + o0 < to, big_i * b + i0 < ti))
    return prove_valid(z3.And(fwd, back))


def permutation_bijection() -> Verdict:
    """NCHW <-> NHWC (and OIHW <-> HWIO): the axis permutation and its inverse compose to the
    identity on indices, and a transform followed by its inverse reads every element back."""
    x = tensor("x", 4)
    n, c, h, w = ints("n c h w")
    to_nhwc = lambda a, b_, cc, d: x(a, d, b_, cc)        # noqa: E731  y[n,h,w,c] = x[n,c,h,w]
    back = lambda a, b_, cc, d: to_nhwc(a, cc, d, b_)     # noqa: E731  z[n,c,h,w] = y[n,h,w,c]
    return prove_valid(back(n, c, h, w) == x(n, c, h, w))


# --- FoldConstant's structural rules --------------------------------------------------------------

def fold_if(wrong: bool = False) -> Verdict:
    """Fold-If: ``if (c) {a} else {b}`` with a constant ``c`` is the chosen branch."""
    c = z3.Bool("c")
    a, b = z3.Reals("a b")
    chosen = z3.If(c, b, a) if wrong else z3.If(c, a, b)
    return prove_valid(z3.If(c, a, b) == chosen)


def fold_project() -> Verdict:
    """Fold-Project: ``(e0, ..., en).i == ei`` (tuples as a Z3 datatype, n = 3)."""
    tup = z3.Datatype("Tup3")
    tup.declare("mk", ("f0", R), ("f1", R), ("f2", R))
    T = tup.create()
    es = z3.Reals("e0 e1 e2")
    t = T.mk(*es)
    return prove_valid(z3.And(T.f0(t) == es[0], T.f1(t) == es[1], T.f2(t) == es[2]))


REWRITES: dict[str, tuple[str, Callable[[], Verdict]]] = {
    "fold_scale_axis.backward_conv2d": ("Fold-Backward: conv2d(x, W) * v[o] == conv2d(x, W*v[o])"
                                        " (any groups, strides, padding, dilation, reduction "
                                        "extents)",
                                        fold_backward_conv),
    "fold_scale_axis.backward_dense": ("Fold-Backward: dense(x, W) * v == dense(x, W * v[u])",
                                       fold_backward_dense),
    "fold_scale_axis.backward_bias": ("Fold-Backward through a bias: (E + b) s == E s + b s",
                                      fold_backward_bias),
    "fold_scale_axis.relu_positive": ("Fold through relu: relu(y) s == relu(y s) if s > 0",
                                      fold_through_relu),
    "fold_scale_axis.forward_conv2d": ("Fold-Forward: conv2d(x * v[c], W) == conv2d(x, W * S), "
                                       "S[o, i] = v[g(o) I + i]", fold_forward_conv),
    "fold_scale_axis.forward_relu_conv2d": ("Fold-Forward under relu with v > 0",
                                            fold_forward_relu_conv),
    "fold_scale_axis.forward_dense": ("Fold-Forward: dense(x * v, W) == dense(x, W * v[k])",
                                      fold_forward_dense),
    "canonicalize_ops.bias_add": ("Canon-BiasAdd: bias_add(d, b, a) == d + expand_dims(b, 1, "
                                  "r - a - 1) for every rank r and axis a < r",
                                  canon_bias_add),
    "simplify_inference.batch_norm": ("Simp-BatchNorm: batch_norm(...).0 == (x - M) / STD * "
                                      "G + B with per-channel statistics expanded to the "
                                      "axis (any rank, with/without center, scale)",
                                      simplify_batch_norm),
    "combine_parallel_conv2d.split": ("Combine-Conv2D: split of the conv with concatenated "
                                      "filters gives each branch's conv (any number of "
                                      "branches)", combine_split),
    "alter_op_layout.nchw_blocked": ("layout_transform NCHW <-> NCHW{b}c is an index "
                                     "bijection (any block b >= 1)", blocked_bijection),
    "alter_op_layout.kernel_blocked": ("layout_transform OIHW <-> OIHW{b}i{b}o is an index "
                                       "bijection (any block b >= 1)",
                                       kernel_blocked_bijection),
    "alter_op_layout.nhwc": ("layout_transform NCHW -> NHWC -> NCHW is the identity",
                             permutation_bijection),
    "fold_constant.if": ("Fold-If: a constant condition selects its branch", fold_if),
    "fold_constant.project": ("Fold-Project: (e0, ..., en).i == ei", fold_project),
}


#: The pass rule (as named in the pass module's docstring) each obligation is about.
PASS_RULES: dict[str, str] = {
    "fold_scale_axis.backward_conv2d": "Fold-Backward",
    "fold_scale_axis.backward_dense": "Fold-Backward",
    "fold_scale_axis.backward_bias": "Fold-Backward",
    "fold_scale_axis.relu_positive": "Fold-Backward",
    "fold_scale_axis.forward_conv2d": "Fold-Forward",
    "fold_scale_axis.forward_relu_conv2d": "Fold-Forward",
    "fold_scale_axis.forward_dense": "Fold-Forward",
    "canonicalize_ops.bias_add": "Canon-BiasAdd",
    "simplify_inference.batch_norm": "Simp-BatchNorm",
    "combine_parallel_conv2d.split": "Combine-Conv2D",
    "alter_op_layout.nchw_blocked": "Alter-Conv2D",
    "alter_op_layout.kernel_blocked": "Alter-Conv2D",
    "alter_op_layout.nhwc": "Alter-Conv2D",
    "fold_constant.if": "Fold-If",
    "fold_constant.project": "Fold-Project",
}


for _name, (_stmt, _check) in REWRITES.items():
    obligation(f"rewrite.{_name}", _stmt, _check)
