"""Lowerings of the ``tensor`` family (elementwise and broadcast operators) for ``llvm``.

Each rule builds one ``te.compute`` over the broadcast output shape
(:func:`~backends.tvm.lower.base.broadcast_compute`) whose element expression follows the
references of :mod:`semantics.ops.tensor` (§5):

* ``+ - *`` and ``negative``/``abs`` on integers are TIR's integer operations, which LLVM
  performs in two's complement (they wrap like the references);
* float ``divide`` is IEEE, ``floor_divide`` is ``floor(a / b)``, ``floor_mod`` is the exact
  floored remainder (``fmod`` corrected by the sign of ``b``, as numpy's ``remainder``),
  ``mod`` is C ``fmod`` — each step in the dtype, as the references;
* **integer** ``divide``/``mod``/``floor_divide``/``floor_mod`` and integer ``power`` are
  *not compiled* (the rule raises :class:`Unsupported`): a zero divisor (or ``0 ** -n``)
  must raise the oracle's ``RelayRuntimeError``, while a compiled integer division by zero
  is undefined (x86 ``idiv`` kills the process with SIGFPE).  The executors run such
  functions through the references;
* float ``power`` and the transcendental functions of float16 are computed in float32 and
  rounded once to float16; float32/float64 use the dtype's own libm calls (results within a
  few ulps of the references, which evaluate in float64) — float32 ``tanh``/``sigmoid`` are
  vector arithmetic (:mod:`vecmath`), float64 ``tanh`` is libm's (TVM's own legalization
  returns 0 below |x| ~ 1e-17);
* ``maximum``/``minimum``/``clip`` propagate NaN (explicit selects, not LLVM's ``maxnum``);
  ``not_equal`` (and ``cast`` to bool, ``where``'s condition) is true for NaN operands, as
  numpy (TVM would emit LLVM's ordered ``fcmp one``); the other float comparisons also test
  ``isnan`` of both operands (TVM's simplifier folds ``x == x`` to true, even for a NaN, and
  rewrites ``!(a < b)`` into ``a >= b``, false for a NaN);
* ``round`` rounds halves away from zero by ``trunc`` and the sign of the remainder (TIR's
  ``round`` is not relied on); rounding functions are the identity on integers;
* ``cast`` follows :func:`semantics.ops.reference.cast_array`: float to integer truncates,
  reduces modulo ``2**bits`` in float64 (``fmod`` is exact) and goes through int64 — NaN and
  ±inf give 0 — so no out-of-range ``fptosi`` (poison in LLVM) is ever executed (to at most
  16 bits from float32/float64 the reduction runs in the source dtype and goes through int32:
  vector instructions on AVX2, see ``_narrow_cast``); to ``bool``
  is ``x != 0`` with NaN true.
"""

from __future__ import annotations

from typing import Any

from backends.tvm.lower import vecmath
from backends.tvm.lower.base import (
    OpCall,
    Unsupported,
    bits,
    broadcast_compute,
    const,
    float_div,
    fmod,
    is_float,
    is_int,
    lowering,
    map_compute,
    nan_max,
    nan_min,
)
from backends.tvm.sched.default import KEEP


def _tirx() -> Any:
    from tvm import tirx

    return tirx


# --- binary arithmetic --------------------------------------------------------------------

@lowering("add")
def _add(call: OpCall) -> Any:
    return broadcast_compute(call, lambda a, b: a + b)


@lowering("subtract")
def _subtract(call: OpCall) -> Any:
    # TVM's simplifier rewrites ``x - x`` to 0 for every dtype, which is wrong in IEEE
    # arithmetic (NaN and ±inf give NaN). When both operands are the same tensor, write the
    # IEEE result out: +0 where x is finite, NaN elsewhere. (Operands that only become equal
    # after inlining fused producers are not caught here: see docs/tvm.md.)
    x, y = call.inputs
    dtype = call.in_dtype(0)
    if is_float(dtype) and x.same_as(y) and call.in_shape(0) == call.in_shape(1):
        tirx = _tirx()
        return map_compute(x, lambda v: tirx.Select(tirx.isfinite(v), tirx.const(0.0, dtype),
                                                     tirx.const(float("nan"), dtype)),
                           "subtract")
    if is_float(dtype):
        return broadcast_compute(call, lambda a, b: _opaque(a) - _opaque(b))
    return broadcast_compute(call, lambda a, b: a - b)


def _opaque(v: Any) -> Any:
    """``v`` behind a bit-cast round trip: TVM's simplifier treats float arithmetic
    algebraically (``(x + c) - c`` becomes ``x``, which rounding forbids) and cannot see through
    the casts; LLVM removes the pair, so the kernel pays nothing."""
    tirx = _tirx()
    bits = {"float16": "int16", "float32": "int32", "float64": "int64"}[str(v.dtype)]
    return tirx.reinterpret(str(v.dtype), tirx.reinterpret(bits, v))


@lowering("multiply")
def _multiply(call: OpCall) -> Any:
    return broadcast_compute(call, lambda a, b: a * b)


def _no_integer_division(call: OpCall) -> None:
    if is_int(call.in_dtype(0)):
        raise Unsupported(f"integer {call.op} is not compiled: a zero divisor must raise "
                          "RelayRuntimeError, a compiled one is undefined behaviour")


@lowering("divide")
def _divide(call: OpCall) -> Any:
    _no_integer_division(call)
    return broadcast_compute(call, float_div)


@lowering("floor_divide")
def _floor_divide(call: OpCall) -> Any:
    _no_integer_division(call)
    return broadcast_compute(call, lambda a, b: _tirx().floor(float_div(a, b)))


@lowering("mod")
def _mod(call: OpCall) -> Any:
    _no_integer_division(call)
    dtype = call.in_dtype(0)
    return broadcast_compute(call, lambda a, b: fmod(a, b, dtype))


def floored_remainder(a: Any, b: Any, dtype: str) -> Any:
    """The exact floored remainder of floats, as the reference: ``r = fmod(a, b)`` (exact),
    plus ``b`` when ``r`` is non-zero and its sign differs from ``b``'s; a zero remainder
    takes ``b``'s sign. (``a - floor(a / b) * b`` is not exact, and LLVM contracts it into an
    FMA, which rounds differently again.) float16 goes through float32, as numpy's."""
    tirx = _tirx()
    if dtype == "float16":
        return tirx.Cast("float16", floored_remainder(tirx.Cast("float32", a),
                                                      tirx.Cast("float32", b), "float32"))
    zero = const(0.0, dtype)
    r = fmod(a, b, dtype)
    flip = tirx.Select(b < zero, r > zero, r < zero)
    # (not a Select of -0.0 and 0.0: TVM's simplifier finds the two branches equal)
    return tirx.Select(r == zero, tirx.copysign(zero, b), tirx.Select(flip, r + b, r))


@lowering("floor_mod")
def _floor_mod(call: OpCall) -> Any:
    _no_integer_division(call)
    dtype = call.in_dtype(0)
    return broadcast_compute(call, lambda a, b: floored_remainder(a, b, dtype))


@lowering("power")
def _power(call: OpCall) -> Any:
    if is_int(call.in_dtype(0)):
        raise Unsupported("integer power is not compiled: 0 raised to a negative power must "
                          "raise RelayRuntimeError")
    dtype = call.in_dtype(0)
    return broadcast_compute(call, lambda a, b: _via_float32(dtype, _tirx().power, a, b))


@lowering("maximum")
def _maximum(call: OpCall) -> Any:
    dtype = call.in_dtype(0)
    return broadcast_compute(call, lambda a, b: nan_max(a, b, dtype))


@lowering("minimum")
def _minimum(call: OpCall) -> Any:
    dtype = call.in_dtype(0)
    return broadcast_compute(call, lambda a, b: nan_min(a, b, dtype))


# --- comparisons and logic ----------------------------------------------------------------

def _compare(op: str, fn: Any) -> None:
    """Register a comparison; bool operands are compared as int8 (TVM 0.27 would emit a
    float comparison of ``i1`` values, which LLVM rejects); floats go through
    :func:`float_compare`, so that neither TVM's folding of ``x <= x`` to true nor its
    rewriting of a negated comparison (``logical_not``, ``where`` of a negation, fused
    into the same kernel) loses a NaN."""
    @lowering(op)
    def rule(call: OpCall) -> Any:
        tirx = _tirx()
        dtype = call.in_dtype(0)
        if dtype == "bool":
            return broadcast_compute(call, lambda a, b: fn(tirx.Cast("int8", a),
                                                           tirx.Cast("int8", b)))
        if is_float(dtype):
            return broadcast_compute(call, lambda a, b: float_compare(fn, a, b))
        return broadcast_compute(call, fn)


_compare("equal", lambda a, b: a == b)
_compare("less", lambda a, b: a < b)
_compare("less_equal", lambda a, b: a <= b)
_compare("greater", lambda a, b: a > b)
_compare("greater_equal", lambda a, b: a >= b)


def float_compare(fn: Any, a: Any, b: Any) -> Any:
    """The float comparison ``fn(a, b)`` as ``fn(a, b) and not isnan(a) and not isnan(b)``.

    The same value as ``fn(a, b)`` (a NaN operand makes every ordered comparison false), but
    robust to TVM's simplifier, which treats float comparisons as total orders: it folds
    ``x <= x`` to true even for a NaN, and rewrites a negated comparison ``!(a < b)`` into
    ``a >= b`` — false for a NaN where the negation is true. Negating this form gives
    ``!fn(a, b) or isnan(a) or isnan(b)`` under the same rewrite, which is right for NaN."""
    tirx = _tirx()
    return tirx.And(tirx.And(fn(a, b), tirx.Not(tirx.isnan(a))), tirx.Not(tirx.isnan(b)))


def float_ne(a: Any, b: Any) -> Any:
    """``a != b`` true for NaN operands (TVM folds ``!(a == b)`` into LLVM's ordered
    ``fcmp one``, which is false for NaN)."""
    tirx = _tirx()
    return tirx.Or(tirx.Or(tirx.isnan(a), tirx.isnan(b)), a != b)


@lowering("not_equal")
def _not_equal(call: OpCall) -> Any:
    if is_float(call.in_dtype(0)):
        return broadcast_compute(call, float_ne)
    if call.in_dtype(0) == "bool":
        tirx = _tirx()
        return broadcast_compute(call, lambda a, b: tirx.Cast("int8", a) != tirx.Cast("int8",
                                                                                      b))
    return broadcast_compute(call, lambda a, b: a != b)


@lowering("logical_and")
def _logical_and(call: OpCall) -> Any:
    return broadcast_compute(call, lambda a, b: _tirx().And(a, b))


@lowering("logical_or")
def _logical_or(call: OpCall) -> Any:
    return broadcast_compute(call, lambda a, b: _tirx().Or(a, b))


@lowering("logical_not")
def _logical_not(call: OpCall) -> Any:
    return map_compute(call.inputs[0], lambda a: _tirx().Not(a), "logical_not")


@lowering("where")
def _where(call: OpCall) -> Any:
    cond_dtype = call.in_dtype(0)

    def select(c: Any, x: Any, y: Any) -> Any:
        test = c if cond_dtype == "bool" else cast_expr(c, cond_dtype, "bool")
        return _tirx().Select(test, x, y)

    return broadcast_compute(call, select)


# --- unary --------------------------------------------------------------------------------

@lowering("negative")
def _negative(call: OpCall) -> Any:
    dtype = call.in_dtype(0)
    tirx = _tirx()
    if dtype.startswith("uint"):
        # 0 - a in int64, truncated: TVM 0.27 folds a uint64 ``0 - a`` to 0.
        return map_compute(call.inputs[0], lambda a: tirx.Cast(
            dtype, const(0, "int64") - tirx.Cast("int64", a)), "negative")
    return map_compute(call.inputs[0], lambda a: const(0, dtype) - a if is_int(dtype) else -a,
                       "negative")


@lowering("abs")
def _abs(call: OpCall) -> Any:
    dtype = call.in_dtype(0)
    tirx = _tirx()
    if dtype.startswith("uint"):
        return map_compute(call.inputs[0], lambda a: tirx.Cast(dtype, a), "abs")
    if is_int(dtype):
        zero = const(0, dtype)
        return map_compute(call.inputs[0], lambda a: tirx.Select(a < zero, zero - a, a), "abs")
    return map_compute(call.inputs[0], lambda a: tirx.abs(a), "abs")


@lowering("sign")
def _sign(call: OpCall) -> Any:
    dtype = call.in_dtype(0)
    tirx = _tirx()
    one, zero = const(1, dtype), const(0, dtype)
    minus = const(-1, dtype) if not dtype.startswith("uint") else zero

    def sign(a: Any) -> Any:
        # ±0 gives +0 (numpy's and the oracle's sign), NaN stays NaN (isnan: the simplifier
        # folds a == a to true even for a NaN)
        rest = tirx.Select(tirx.isnan(a), a, zero) if is_float(dtype) else zero
        return tirx.Select(a > zero, one, tirx.Select(a < zero, minus, rest))

    return map_compute(call.inputs[0], sign, "sign")


def _via_float32(dtype: str, fn: Any, *xs: Any) -> Any:
    """``fn`` evaluated in float32 for float16 operands (rounded once back), else as is."""
    tirx = _tirx()
    if dtype == "float16":
        return tirx.Cast("float16", fn(*[tirx.Cast("float32", x) for x in xs]))
    return fn(*xs)


def _transcendental(op: str, fn_of: Any) -> None:
    """Register ``op`` as ``fn_of(compute_dtype)`` applied elementwise (float16 via float32).

    A float32 ``sigmoid``/``tanh`` (:mod:`vecmath`: nested TIR ``Let`` expressions) whose
    argument will itself hold such an expression once the schedule inlines its producers
    reads that argument from a kept stage (:func:`_cut_let_nesting`)."""
    @lowering(op)
    def rule(call: OpCall) -> Any:
        dtype = call.in_dtype(0)
        if is_int(dtype):
            return _integer_via_float64(call, fn_of("float64"), op)
        fn = fn_of("float32" if dtype == "float16" else dtype)
        x = call.inputs[0]
        if fn in (vecmath.sigmoid_f32, vecmath.tanh_f32):
            x = _cut_let_nesting(x, op)
        return map_compute(x, lambda a: _via_float32(dtype, fn, a), op)


_CHILDREN = ("a", "b", "value", "body", "condition", "true_value", "false_value", "args",
             "source")
"""The fields of TIR expression nodes that hold sub-expressions (the wheel exposes no
visitor to Python)."""

LET_SEARCH_NODES = 20_000
"""How many expression nodes :func:`_holds_let` visits before it gives up (and cuts)."""


def _holds_let(tensor: Any) -> bool:
    """Whether ``tensor``'s value, once every producer stage the schedule inlines (all but
    ``keep_`` stages and inputs) is substituted, contains a TIR ``Let``."""
    from tvm import te, tirx
    from tvm.ir.expr import Expr as PrimExpr

    seen_ops: list[Any] = []
    nodes: list[Any] = []

    def stage(op: Any) -> None:
        if (isinstance(op, te.ComputeOp) and not op.name.startswith(KEEP)
                and not any(op.same_as(o) for o in seen_ops)):
            seen_ops.append(op)
            nodes.extend(op.body)

    stage(tensor.op)
    visited = 0
    while nodes:
        node = nodes.pop()
        visited += 1
        if visited > LET_SEARCH_NODES:
            return True
        if isinstance(node, tirx.Let):
            return True
        for field in _CHILDREN:
            child = getattr(node, field, None)
            if child is None:
                continue
            if isinstance(child, PrimExpr):
                nodes.append(child)
            elif not isinstance(child, (str, bytes)) and hasattr(child, "__iter__"):
                for c in child:         # a tensor read: te.tensor_load(tensor, *indices)
                    if isinstance(c, te.Tensor):
                        stage(c.op)
                    elif isinstance(c, PrimExpr):
                        nodes.append(c)
    return False


def _cut_let_nesting(x: Any, op: str) -> Any:
    """``x`` itself, or a kept copy of it (``keep_<op>_arg``, its own loop nest) when its value
    holds a ``Let`` (:func:`_holds_let`): a transcendental of a transcendental (a GRU's
    ``tanh`` of a sum holding a ``sigmoid``).

    TVM's LLVM code generation re-analyzes a ``Let``'s value each time it meets the binding,
    so its time doubles with every level of ``Let`` nested in another's value: one
    ``tanh(tanh(x))`` kernel took 69 s to compile here, the GRU's gate kernel 42 s (110 s with
    the step's ``take`` fused in); with the cut, under a second. The copy costs one pass over
    the argument (a gate vector: a few kilobytes)."""
    if not _holds_let(x):
        return x
    from tvm import te

    return te.compute(x.shape, lambda *i: x[i], name=f"{KEEP}{op}_arg")


def _rsqrt(dtype: str) -> Any:
    tirx = _tirx()
    return lambda x: tirx.Div(tirx.const(1.0, dtype), tirx.sqrt(x))


def _sigmoid(dtype: str) -> Any:
    if dtype == "float32":      # vector arithmetic instead of a libm call per lane
        return vecmath.sigmoid_f32
    tirx = _tirx()
    one = tirx.const(1.0, dtype)
    return lambda x: tirx.Div(one, one + tirx.exp(-x))


def _tanh(dtype: str) -> Any:
    if dtype == "float32":      # vector arithmetic instead of a libm call per lane
        return vecmath.tanh_f32
    # float64: libm's tanh. TVM legalizes the ``tanh`` intrinsic as a ratio of exponentials,
    # which returns 0 for |x| below ~1e-17 (tanh x = x there) and loses digits below ~1e-5.
    tirx = _tirx()
    return lambda x: tirx.call_pure_extern(dtype, "tanh", x)


_transcendental("exp", lambda d: _tirx().exp)
_transcendental("log", lambda d: _tirx().log)
_transcendental("tanh", _tanh)
_transcendental("erf", lambda d: _tirx().erf)
_transcendental("sin", lambda d: _tirx().sin)
_transcendental("cos", lambda d: _tirx().cos)
_transcendental("rsqrt", _rsqrt)
_transcendental("sigmoid", _sigmoid)


def _integer_via_float64(call: OpCall, fn: Any, op: str) -> Any:
    """An integer operand of a transcendental (the oracle's meaning, semantics/ops/tensor.py):
    converted to float64, ``fn`` there, converted back with ``cast``'s semantics."""
    dtype = call.in_dtype(0)
    return map_compute(call.inputs[0], lambda a: cast_expr(
        fn(cast_expr(a, dtype, "float64")), "float64", dtype), op)


@lowering("sqrt")
def _sqrt(call: OpCall) -> Any:
    dtype = call.in_dtype(0)
    if is_int(dtype):
        return _integer_via_float64(call, _tirx().sqrt, "sqrt")
    return map_compute(call.inputs[0], lambda a: _via_float32(dtype, _tirx().sqrt, a), "sqrt")


def round_half_away(x: Any, dtype: str) -> Any:
    """Round half away from zero with ``trunc`` (exact: ``x - trunc(x)`` is exact)."""
    tirx = _tirx()
    half = tirx.const(0.5, dtype)
    one = tirx.const(1.0, dtype)
    t = tirx.trunc(x)
    frac = x - t
    return tirx.Select(frac >= half, t + one, tirx.Select(frac <= -half, t - one, t))


def _rounding(op: str, fn_of: Any) -> None:
    @lowering(op)
    def rule(call: OpCall) -> Any:
        if is_int(call.in_dtype(0)):
            return map_compute(call.inputs[0], lambda a: a, op)
        dtype = call.in_dtype(0)
        return map_compute(call.inputs[0], lambda a: fn_of()(a, dtype), op)


_rounding("floor", lambda: lambda a, d: _tirx().floor(a))
_rounding("ceil", lambda: lambda a, d: _tirx().ceil(a))
_rounding("trunc", lambda: lambda a, d: _tirx().trunc(a))
_rounding("round", lambda: round_half_away)


# --- clip, cast, copy ---------------------------------------------------------------------

@lowering("clip")
def _clip(call: OpCall) -> Any:
    import math

    import numpy as np

    dtype = call.in_dtype(0)
    a_min, a_max = float(call.attrs["a_min"]), float(call.attrs["a_max"])
    if is_int(dtype):
        info = np.iinfo(dtype)

        def bound(v: float) -> int:
            return int(info.min) if v <= info.min else int(info.max) if v >= info.max \
                else int(math.trunc(v))
        lo, hi = const(bound(a_min), dtype), const(bound(a_max), dtype)
    else:
        lo, hi = const(a_min, dtype), const(a_max, dtype)
    return map_compute(call.inputs[0],
                       lambda x: nan_max(nan_min(x, hi, dtype), lo, dtype), "clip")


def cast_expr(x: Any, src: str, dst: str) -> Any:
    """The §5 cast of the element ``x`` from ``src`` to ``dst`` (see the module docstring)."""
    tirx = _tirx()
    if src == dst:
        return x
    if isinstance(x, (tirx.IntImm, tirx.FloatImm)):
        # Fold a constant here, with the reference's own cast: TVM's folder refuses e.g. a
        # negative constant cast to an unsigned type ("cannot make uint from negative").
        import numpy as np

        from semantics.ops.reference import cast_array

        with np.errstate(all="ignore"):
            value = cast_array(np.asarray(x.value, dtype=src), dst)[()]
        return const(value, dst)
    if dst == "bool":
        return float_ne(x, const(0, src)) if is_float(src) else x != const(0, src)
    if is_int(dst) and is_float(src):
        width = bits(dst)
        if width <= 16 and src in ("float32", "float64"):
            return _narrow_cast(x, src, dst, width)
        t = tirx.trunc(tirx.Cast("float64", x))
        t = tirx.Select(tirx.isfinite(t), t, tirx.const(0.0, "float64"))
        modulus = tirx.const(float(2 ** width), "float64")
        if width < 64:
            # t mod 2**width in [0, 2**width), exact for every finite t (the division and the
            # product are by a power of two, floor is exact, and the difference is
            # representable) and vectorizable, unlike a call of libm's fmod per element
            q = tirx.floor(t * tirx.const(2.0 ** -width, "float64")) * modulus
            return tirx.Cast(dst, tirx.Cast("int64", t - q))
        r = fmod(t, modulus, "float64")
        if width == 64:
            r = tirx.Select(r >= tirx.const(2.0 ** 63, "float64"), r - modulus, r)
            r = tirx.Select(r < tirx.const(-(2.0 ** 63), "float64"), r + modulus, r)
        return tirx.Cast(dst, tirx.Cast("int64", r))
    if src == "bool":
        return tirx.Select(x, const(1, dst), const(0, dst))
    return tirx.Cast(dst, x)


def _narrow_cast(x: Any, src: str, dst: str, width: int) -> Any:
    """A float32/float64 ``x`` cast to an integer of at most 16 bits, wrapping modulo
    ``2**width`` (NaN and infinities to 0), computed in ``src`` itself and vectorizable on
    AVX2 (no float64 or int64 lanes): ``t = trunc(x)``, ``r = t - floor(t / 2**width) *
    2**width`` in ``[0, 2**width)``, then ``int32`` and ``dst``. Exact at every magnitude:
    scaling by a power of two and ``floor`` are exact, so is ``q = floor(..) * 2**width``
    (a float multiple of ``2**width`` at most ``2**width`` below ``t``), and ``t - q`` is an
    integer below ``2**16``, representable in the significand, so IEEE subtraction returns
    it exactly; the int32 → ``dst`` truncation is the two's complement wrap of ``r``."""
    tirx = _tirx()
    t = tirx.trunc(x)
    t = tirx.Select(tirx.isfinite(t), t, tirx.const(0.0, src))
    q = tirx.floor(t * tirx.const(2.0 ** -width, src)) * tirx.const(2.0 ** width, src)
    return tirx.Cast(dst, tirx.Cast("int32", t - q))


@lowering("cast")
def _cast(call: OpCall) -> Any:
    src, dst = call.in_dtype(0), call.out_dtype
    return map_compute(call.inputs[0], lambda x: cast_expr(x, src, dst), "cast")


@lowering("copy")
def _copy(call: OpCall) -> Any:
    return map_compute(call.inputs[0], lambda x: x, "copy")
