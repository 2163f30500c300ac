"""ONNX recurrent layers (``RNN``, ``GRU``, ``LSTM``) → Relay, unrolled over the (static)
sequence length, one cell per step, for the forward, reverse and bidirectional directions
with the default activations, LSTM peepholes, and both layouts (``layout=1``: batch-major
inputs and outputs, transposed around the time-major cells). Not supported: ``clip``,
``input_forget``, and ``sequence_lens`` other than a static full length (every sequence as
long as the input).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from frontends.onnx.builder import Unsupported, Value, call, call_tuple, const
from frontends.onnx.context import Context
from frontends.onnx.ops_math import _req
from frontends.onnx.registry import converter

_ATTRS = ("activation_alpha", "activation_beta", "activations", "clip", "direction",
          "hidden_size", "layout", "linear_before_reset", "input_forget")
_DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def _take(v: Value, axis: int, i: int) -> Value:
    """``v[..., i, ...]`` along ``axis`` with that axis removed."""
    shape = v.static_shape()
    begin, end = [0] * v.ndim, list(shape)
    begin[axis], end[axis] = i, i + 1
    s = call("strided_slice", [v], begin=tuple(begin), end=tuple(end), strides=(1,) * v.ndim)
    return call("squeeze", [s], axis=(axis,))


def _dense(x: Value, w: Value) -> Value:
    """``x @ w.T`` for ``x: (batch, k)``, ``w: (n, k)``."""
    return call("nn.dense", [x, w])


def _chunks(v: Value, n: int) -> list[Value]:
    """Split the last axis of ``v`` into ``n`` equal parts."""
    size = v.static_shape()[-1] // n
    out = []
    for i in range(n):
        begin, end = [0] * v.ndim, list(v.static_shape())
        begin[-1], end[-1] = i * size, (i + 1) * size
        out.append(call("strided_slice", [v], begin=tuple(begin), end=tuple(end),
                        strides=(1,) * v.ndim))
    return out


@converter("RNN", "GRU", "LSTM", attrs=_ATTRS)
def _recurrent(ctx: Context, node: Any, ins: list[Value | None],
               attrs: dict[str, Any]) -> list[Value]:
    kind = node.op_type
    acts = [a.decode() if isinstance(a, bytes) else str(a) for a in attrs.get("activations", [])]
    direction = attrs.get("direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else str(direction)
    ndir = 2 if direction == "bidirectional" else 1
    defaults = _DEFAULT_ACTS[kind] * ndir
    if acts and [a.lower() for a in acts] != [a.lower() for a in defaults]:
        raise Unsupported(f"activations {acts} are not supported (only {defaults})")
    if "clip" in attrs or attrs.get("input_forget", 0):
        raise Unsupported("clip and input_forget are not supported")
    batch_major = bool(attrs.get("layout", 0))
    x, w, r = _req(ins, 0), _req(ins, 1), _req(ins, 2)
    if batch_major:
        x = call("transpose", [x], axes=(1, 0, 2))
    seq, batch, _ = x.static_shape()
    if len(ins) > 4 and ins[4] is not None:
        lens = ins[4].const
        if lens is None or not bool(np.all(np.asarray(lens) == seq)):
            raise Unsupported("sequence_lens is supported only when static and equal to the "
                              "sequence length")
    peep = ins[7] if kind == "LSTM" and len(ins) > 7 else None
    hidden = int(attrs.get("hidden_size", r.static_shape()[-1]))
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    b = ins[3] if len(ins) > 3 else None
    h0 = ins[5] if len(ins) > 5 else None
    c0 = ins[6] if kind == "LSTM" and len(ins) > 6 else None
    if batch_major:
        h0 = call("transpose", [h0], axes=(1, 0, 2)) if h0 is not None else None
        c0 = call("transpose", [c0], axes=(1, 0, 2)) if c0 is not None else None
    lbr = bool(attrs.get("linear_before_reset", 0))
    ys, hs, cs = [], [], []
    for d in range(ndir):
        wd, rd = _take(w, 0, d), _take(r, 0, d)
        if b is not None:
            bw, br = _chunks(_take(b, 0, d), 2)
        else:
            zero = const(np.zeros(gates * hidden, x.dtype))
            bw, br = zero, zero
        h = _take(h0, 0, d) if h0 is not None else const(np.zeros((batch, hidden), x.dtype))
        c = _take(c0, 0, d) if c0 is not None else const(np.zeros((batch, hidden), x.dtype))
        if peep is not None:
            p_i, p_o, p_f = _chunks(_take(peep, 0, d), 3)
        rev = direction == "reverse" or (direction == "bidirectional" and d == 1)
        steps = range(seq - 1, -1, -1) if rev else range(seq)
        outs: dict[int, Value] = {}
        for t in steps:
            xt = _take(x, 0, t)
            gx = call("add", [_dense(xt, wd), bw])
            if kind == "RNN":
                h = call("tanh", [call("add", [gx, call("add", [_dense(h, rd), br])])])
            elif kind == "LSTM":
                g = call("add", [gx, call("add", [_dense(h, rd), br])])
                i, o, f, cc = _chunks(g, 4)
                if peep is not None:
                    i = call("add", [i, call("multiply", [p_i, c])])
                    f = call("add", [f, call("multiply", [p_f, c])])
                c = call("add", [call("multiply", [call("sigmoid", [f]), c]),
                                 call("multiply", [call("sigmoid", [i]), call("tanh", [cc])])])
                if peep is not None:
                    o = call("add", [o, call("multiply", [p_o, c])])
                h = call("multiply", [call("sigmoid", [o]), call("tanh", [c])])
            else:
                xz, xr, xh = _chunks(gx, 3)
                rz, rr, rh = _split_rows(rd, 3)
                bz, brr, bh = _chunks(br, 3)
                z = call("sigmoid", [call("add", [xz, call("add", [_dense(h, rz), bz])])])
                rg = call("sigmoid", [call("add", [xr, call("add", [_dense(h, rr), brr])])])
                if lbr:
                    hh = call("multiply", [rg, call("add", [_dense(h, rh), bh])])
                else:
                    hh = call("add", [_dense(call("multiply", [rg, h]), rh), bh])
                n = call("tanh", [call("add", [xh, hh])])
                one = const(np.asarray(1, x.dtype))
                h = call("add", [call("multiply", [call("subtract", [one, z]), n]),
                                 call("multiply", [z, h])])
            outs[t] = h
        ys.append(call_tuple("stack", [outs[t] for t in range(seq)], axis=0))
        hs.append(h)
        cs.append(c)
    y = call_tuple("stack", ys, axis=1)
    yh = call_tuple("stack", hs, axis=0)
    results = [y, yh]
    if kind == "LSTM":
        results.append(call_tuple("stack", cs, axis=0))
    if batch_major:
        # Y: (seq, dirs, batch, hidden) -> (batch, seq, dirs, hidden); Y_h, Y_c:
        # (dirs, batch, hidden) -> (batch, dirs, hidden).
        results = [call("transpose", [results[0]], axes=(2, 0, 1, 3))] + [
            call("transpose", [v], axes=(1, 0, 2)) for v in results[1:]]
    return results


def _split_rows(w: Value, n: int) -> list[Value]:
    """Split the first axis of a ``(n*h, k)`` weight into ``n`` parts."""
    rows, k = w.static_shape()
    size = rows // n
    return [call("strided_slice", [w], begin=(i * size, 0), end=((i + 1) * size, k),
                 strides=(1, 1)) for i in range(n)]
