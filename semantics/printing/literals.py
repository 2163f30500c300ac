"""Printer leaves: dims, attribute values, string and exact scalar literals.

Part of the printer (:mod:`semantics.printer`, "Layout": calls' attributes
and scalar constants). Dims print from their normalized SymPy form using only
the operators the parser reads (``+ - * / %``, ``floor``, ``ceil``); a scalar
literal is offered only when it decodes back (:func:`semantics.lexer.decode_number`)
to exactly the same bits, otherwise the caller writes a metadata reference.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import sympy

from semantics import dtypes, shapes
from semantics.expr import Attrs

# --- dims ------------------------------------------------------------------------------------

def dim_text(d: Any) -> str:
    if d is shapes.ANY:
        return "?"
    if isinstance(d, int):
        return str(d)
    return _sym_dim_text(d)


@functools.lru_cache(maxsize=4096)
def _sym_dim_text(d: sympy.Expr) -> str:
    value = shapes.normalize(d)
    if isinstance(value, int):
        return str(value)
    return _sym(value, 0)


_P_ADD, _P_MUL, _P_ATOM = 1, 2, 3


def _sym(e: sympy.Expr, prec: int) -> str:
    """Text of a SymPy dim using only ``+ - * / %``, ``floor``, ``ceil`` and parentheses."""
    if e.is_Integer:
        text = str(int(e))
        return f"({text})" if int(e) < 0 and prec > _P_ADD else text
    if e.is_Symbol:
        return e.name
    if e.is_Rational:
        text = f"{e.p}/{e.q}"
        return f"({text})" if prec > _P_ADD or e.p < 0 else text
    if isinstance(e, sympy.Add):
        terms = e.as_ordered_terms()
        text = _sym(terms[0], _P_ADD)
        for term in terms[1:]:
            coeff, _ = term.as_coeff_Mul()
            if coeff.is_negative:
                text += " - " + _sym(-term, _P_MUL if isinstance(-term, sympy.Add) else _P_ADD)
            else:
                text += " + " + _sym(term, _P_ADD)
        return f"({text})" if prec > _P_ADD else text
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        if coeff.is_negative:
            text = "-" + _sym(-e, _P_MUL)
            return f"({text})" if prec > _P_ADD else text
        num, den = sympy.fraction(e)
        factors = [_sym(f, _P_MUL) for f in sympy.Mul.make_args(num)
                   if not (f.is_Integer and int(f) == 1)] or ["1"]
        text = "*".join(factors)
        if den != 1:
            text += "/" + _sym(den, _P_ATOM)
        return f"({text})" if prec > _P_MUL else text
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) > 0:
        text = "*".join([_sym(e.base, _P_ATOM)] * int(e.exp))
        return f"({text})" if prec > _P_MUL else text
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) < 0:
        text = "1/" + _sym(e.base ** (-int(e.exp)), _P_ATOM)
        return f"({text})" if prec > _P_MUL else text
    if isinstance(e, sympy.floor):
        return f"floor({_sym(e.args[0], 0)})"
    if isinstance(e, sympy.ceiling):
        return f"ceil({_sym(e.args[0], 0)})"
    if isinstance(e, sympy.Mod):
        text = f"{_sym(e.args[0], _P_ATOM)} % {_sym(e.args[1], _P_ATOM)}"
        return f"({text})" if prec > _P_MUL else text
    return f"({sympy.sstr(e)})"


# --- attribute values and literals -----------------------------------------------------------

_F32_MAX = float(np.finfo(np.float32).max)


def attr_text(v: Any) -> str:
    if v is None:
        return "None"
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        if -(1 << 31) <= v < (1 << 31):
            return str(v)
        if -(1 << 63) <= v < (1 << 63):
            return f"{v}i64"
        return f"{v}u64"
    if isinstance(v, float):
        if math.isnan(v):
            return "nanf"
        if math.isinf(v):
            return "inff" if v > 0 else "-inff"
        return repr(v) + ("f" if abs(v) <= _F32_MAX else "f64")
    if isinstance(v, str):
        return _string_literal(v)
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(attr_text(x) for x in v) + "]"
    if isinstance(v, Attrs):
        return "[" + ", ".join(attr_text(x) for x in v.values()) + "]"
    return _string_literal(str(v))


_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _string_literal(s: str) -> str:
    out = ['"']
    for ch in s:
        esc = _STRING_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_DTYPE_NAMES = {np.dtype(d): d for d in dtypes.SCALAR_DTYPES}
_LITERALS: dict[tuple[str, bytes], str | None] = {}


def scalar_literal(data: np.ndarray) -> str | None:
    """The exact literal of a 0-d array (cached by dtype and bytes), or None."""
    dtype = _DTYPE_NAMES.get(data.dtype)
    if dtype is None:
        return None
    key = (dtype, data.tobytes())
    try:
        return _LITERALS[key]
    except KeyError:
        pass
    text = _exact_literal(data, dtype)
    if len(_LITERALS) > 65536:
        _LITERALS.clear()
    _LITERALS[key] = text
    return text


def _exact_literal(data: np.ndarray, dtype: str) -> str | None:
    """The literal of a 0-d array if it decodes to exactly the same bits, else None."""
    from semantics.lexer import decode_number

    text = dtypes.literal(data, dtype)
    if dtype == "bool":
        return text
    negative = text.startswith("-")
    try:
        value, got = decode_number(text[1:] if negative else text, negative)
    except ValueError:
        return None
    if got != dtype:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        back = np.array(value, dtype=dtype)
    return text if back.tobytes() == data.tobytes() else None
