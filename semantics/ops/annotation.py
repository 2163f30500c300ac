"""Quantization annotation: ``annotation.simulated_quantize`` (the paper's simQ, §4.5).

Family ``annotation`` of the operator registry.  TVM's signature and attributes
(``relay.op.annotation.simulated_quantize``, the name TVM prints, parses too)::

    annotation.simulated_quantize(data, dom_scale, clip_min, clip_max,
                                  kind=0, sign=True, rounding="round", seed=0)

* ``data``: a float tensor; ``dom_scale``, ``clip_min``, ``clip_max``: ``float32`` scalars
  (rank 0).  The result has ``data``'s type (relation ``SimulatedQuantize``).
* ``kind``: TVM's ``QAnnotateKind`` — 0 identity, 1 input, 2 weight, 3 activation.  It tells
  the quantization passes which dtype the value realizes to; it does not change the value.
* ``sign``: whether the quantized domain is signed (``int<n>``; ``uint<n>`` otherwise).  Like
  ``kind`` it is read by realize; the bounds ``clip_min``/``clip_max`` carry the range.
* ``rounding``: ``"round"`` (half away from zero, as the registry's ``round`` and LLVM's
  ``llvm.round``), ``"floor"``, ``"ceil"`` or ``"stochastic"``.  TVM's compute accepted only
  ``"round"``; the other three are ours (the paper's Fig. 9 asks for stochastic rounding).
* ``seed``: the seed of stochastic rounding (an integer in ``[0, 2**32)``); ignored by the
  other modes.

Value, in ``data``'s dtype ``d`` (the scalars converted to ``d``)::

    v = data / dom_scale
    simQ = clip(rnd(v), clip_min, clip_max) * dom_scale

``clip`` is ``max(min(r, clip_max), clip_min)`` as the registry's ``clip`` (NaN propagates).
For integer bounds this is also TVM's ``round(clip(v))``.  ``dom_scale`` should be positive;
otherwise IEEE arithmetic decides (``dom_scale = 0`` gives NaN or ``±clip * 0``).

**Stochastic rounding** rounds ``v`` up with probability equal to its fractional part
``f = v - floor(v)`` and down otherwise, so ``E[rnd(v)] = v`` (unbiased; the proof is the
obligation ``simq_expectation_stochastic``).  It is deterministic: element ``i`` (row-major
flat index of ``data``) draws ``u_i = (h(i + h(seed)) >> 8) / 2**24`` with ``h`` the 32-bit
integer mix ``lowbias32`` (xor-shift-multiply, constants ``0x7feb352d`` and ``0x846ca68b``)
and rounds up iff ``u_i < f``.  The same seed gives the same result in the oracle and in a
compiled kernel (both compute ``h`` in ``uint32`` arithmetic); ``u`` takes ``2**24``
equally spaced values, so the probability of rounding up is ``f`` rounded up to a multiple
of ``2**-24``.

**Gradient**: the straight-through estimator — ``data`` receives the output's adjoint
unchanged (``rnd`` and ``clip`` are treated as the identity), the three scalars receive none
(``ad/rules/annotation.py``).

Attribute errors (a ``kind`` outside 0..3, an unknown ``rounding``, a seed out of range) are
``RelayTypeError`` s naming the attribute.
"""

from __future__ import annotations

import numpy as np

from semantics.dtypes import split_lanes
from semantics.expr import Attrs
from semantics.ops.reference import reference
from semantics.ops.registry import (
    AttrSpec,
    OpPattern,
    Relation,
    register_alias,
    register_op,
    relation_error,
    tensor_args,
)
from semantics.ops.relations import require_arity
from semantics.ops.tensor import round_half_away
from semantics.shapes import DimSolver
from semantics.types import TensorType, Type

FAMILY = "annotation"

ROUNDINGS = ("round", "floor", "ceil", "stochastic")
KINDS = {0: "identity", 1: "input", 2: "weight", 3: "activation"}

MIX_1 = 0x7FEB352D
MIX_2 = 0x846CA68B
UNIFORM_BITS = 24


def _simq_relation(arg_types: tuple[Type, ...], attrs: Attrs, solver: DimSolver) -> Type | None:
    name = "SimulatedQuantize"
    require_arity(name, arg_types, 4)
    ts = tensor_args(name, arg_types)
    if ts is None:
        return None
    data = ts[0]
    base, lanes = split_lanes(data.dtype)
    if not base.startswith("float") or lanes != 1:
        raise relation_error(name, arg_types, f"data must have a float dtype, found {data.dtype}")
    for t, what in zip(ts[1:], ("dom_scale", "clip_min", "clip_max"), strict=True):
        if t.shape or t.dtype != "float32":
            raise relation_error(name, arg_types, f"{what} must be a float32 scalar "
                                                  f"(Tensor[(), float32])")
    return TensorType(data.shape, data.dtype)


SIMULATED_QUANTIZE = Relation("SimulatedQuantize", _simq_relation,
                              "data's type; dom_scale, clip_min, clip_max float32 scalars")


# --- the stochastic draw (shared with the TVM lowering's documentation) --------------------

def mix32(x: np.ndarray) -> np.ndarray:
    """``lowbias32``: a bijective 32-bit integer mix, in ``uint32`` arithmetic (wrapping).

    Computed in ``uint64`` with explicit masks (a product of two 32-bit values fits), so no
    numpy overflow warning is ever raised; the result is ``uint32``."""
    mask = np.uint64(0xFFFFFFFF)
    x = np.asarray(x).astype(np.uint64) & mask
    x = x ^ (x >> np.uint64(16))
    x = (x * np.uint64(MIX_1)) & mask
    x = x ^ (x >> np.uint64(15))
    x = (x * np.uint64(MIX_2)) & mask
    return np.asarray(x ^ (x >> np.uint64(16))).astype(np.uint32)


def uniform_draws(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """The ``u_i`` of every element of a ``shape`` tensor, as float64 in ``[0, 1)``."""
    n = int(np.prod(shape, dtype=np.int64))
    index = np.arange(n, dtype=np.uint64)
    key = np.uint64(int(mix32(np.asarray(seed, dtype=np.uint32))))
    bits = mix32((index + key) & np.uint64(0xFFFFFFFF)) >> np.uint32(32 - UNIFORM_BITS)
    return (bits.astype(np.float64) * 2.0 ** -UNIFORM_BITS).reshape(shape)


def simulated_quantize_array(x: np.ndarray, dom_scale: np.ndarray, clip_min: np.ndarray,
                             clip_max: np.ndarray, rounding: str = "round",
                             seed: int = 0) -> np.ndarray:
    """simQ of a float array (see the module docstring), in ``x``'s dtype."""
    d = x.dtype
    scale = np.asarray(dom_scale).astype(d)
    lo = np.asarray(clip_min).astype(d)
    hi = np.asarray(clip_max).astype(d)
    v = x / scale
    if rounding == "round":
        r = round_half_away(v)
    elif rounding == "floor":
        r = np.floor(v)
    elif rounding == "ceil":
        r = np.ceil(v)
    else:
        down = np.floor(v)
        frac = (v - down).astype(np.float64)
        up = uniform_draws(v.shape, seed) < frac
        r = np.where(up, down + np.ones_like(down), down)
    clipped = np.maximum(np.minimum(r, hi), lo)
    return np.asarray(clipped * scale).astype(d, copy=False)


def _simulated_quantize(out: Type, x: np.ndarray, dom_scale: np.ndarray, clip_min: np.ndarray,
                        clip_max: np.ndarray, kind: int, sign: bool, rounding: str,
                        seed: int) -> np.ndarray:
    return simulated_quantize_array(x, dom_scale, clip_min, clip_max, rounding, seed)


def _check_kind(v: int) -> str | None:
    if v in KINDS:
        return None
    shown = ", ".join(f"{k} {n}" for k, n in KINDS.items())
    return f"must be one of {shown}, got {v}"


def _check_rounding(v: str) -> str | None:
    return None if v in ROUNDINGS else f"must be one of {', '.join(ROUNDINGS)}, got {v!r}"


def _check_seed(v: int) -> str | None:
    return None if 0 <= v < 2 ** 32 else f"must be in [0, 2**32), got {v}"


register_op(
    "annotation.simulated_quantize", num_inputs=4, relation=SIMULATED_QUANTIZE,
    pattern=OpPattern.ELEMWISE,
    impl=reference("annotation.simulated_quantize", SIMULATED_QUANTIZE, _simulated_quantize),
    attrs=(AttrSpec("kind", "int", 0, check=_check_kind,
                    doc="0 identity, 1 input, 2 weight, 3 activation"),
           AttrSpec("sign", "bool", True, doc="signed quantized domain"),
           AttrSpec("rounding", "str", "round", check=_check_rounding,
                    doc="round (half away from zero), floor, ceil or stochastic"),
           AttrSpec("seed", "int", 0, check=_check_seed, doc="seed of stochastic rounding")),
    doc="simQ: clip(rnd(data / dom_scale), clip_min, clip_max) * dom_scale.",
    family=FAMILY)
register_alias("relay.op.annotation.simulated_quantize", "annotation.simulated_quantize")
