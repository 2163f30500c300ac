"""Run the ONNX package's own node test cases through ``from_onnx`` and the oracle.

``run_case(case)`` imports one ``onnx.backend.test`` node case, evaluates ``@main`` with the
reference interpreter on each of its data sets and compares with the expected outputs as the
ONNX backend test runner does (``onnx.backend.test.runner``): same shape and dtype, floats
within the case's own ``rtol``/``atol`` (the runner's defaults are ``1e-3``/``1e-7``;
``|got - want| <= atol + rtol * |want|``, NaN equal to NaN), exact for integers and booleans.
Inputs that Relay needs at import time (a ``Reshape`` shape, ``Slice`` starts...) are given
to the importer as ``const_inputs`` on a second attempt — the outcome records it
(``frozen``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Outcome:
    """The result of one node test case."""

    name: str
    op: str
    status: str          # pass | unsupported | import | type | runtime | mismatch | crash
    reason: str = ""
    frozen: bool = False
    seconds: float = 0.0


def collect() -> list[Any]:
    """All node test cases the installed ``onnx`` ships."""
    from onnx.backend.test.case.node import collect_testcases
    return list(collect_testcases())


def _op_of(case: Any) -> str:
    nodes = case.model.graph.node
    return nodes[-1].op_type if nodes else "?"


#: The ONNX backend test runner's tolerances when a case sets none (``TestCase`` defaults).
RTOL, ATOL = 1e-3, 1e-7


def _compare(got: Any, want: np.ndarray, rtol: float = RTOL, atol: float = ATOL) -> str | None:
    got_arr = np.asarray(got)
    if got_arr.shape != want.shape:
        return f"shape {got_arr.shape} != expected {want.shape}"
    if want.dtype.kind not in "OSU" and got_arr.dtype != want.dtype:
        return f"dtype {got_arr.dtype} != expected {want.dtype}"
    if want.dtype.kind in "fc":
        if not np.allclose(got_arr.astype(np.float64), want.astype(np.float64), rtol=rtol,
                           atol=atol, equal_nan=True):
            err = np.nanmax(np.abs(got_arr.astype(np.float64) - want.astype(np.float64)))
            return f"values differ (max abs error {err:.3g})"
        return None
    if want.dtype.kind in "OSU":
        return "string tensors are not supported"
    if not np.array_equal(got_arr.astype(want.dtype), want):
        return "values differ"
    return None


def _compare_value(got: Any, want: Any, rtol: float = RTOL, atol: float = ATOL) -> str | None:
    """Compare a result with an expected tensor or sequence (a Relay ``List``)."""
    if isinstance(want, list):
        items = []
        while getattr(got, "name", None) == "Cons":
            items.append(got.fields[0])
            got = got.fields[1]
        if getattr(got, "name", None) != "Nil":
            return f"expected a sequence, got {type(got).__name__}"
        if len(items) != len(want):
            return f"sequence of {len(items)} != expected {len(want)}"
        for g, w in zip(items, want):
            why = _compare(g, np.asarray(w), rtol, atol)
            if why:
                return why
        return None
    return _compare(got, np.asarray(want), rtol, atol)


def _array(v: Any) -> Any:
    """A case's input/output as numpy (cases hold some as ``TensorProto``)."""
    from onnx import TensorProto, numpy_helper
    if isinstance(v, TensorProto):
        return numpy_helper.to_array(v)
    if isinstance(v, (np.generic, int, float, bool)):
        return np.asarray(v)
    return v


def run_case(case: Any) -> Outcome:
    """Import and evaluate one node test case; never raises."""
    from frontends.onnx import ImporterError, from_onnx
    from interpreter import evaluate
    from semantics.errors import RelayError, RelayRuntimeError, RelayTypeError

    start = time.perf_counter()
    out = Outcome(case.name, _op_of(case), "pass")
    model = case.model
    inits = {i.name for i in model.graph.initializer}
    names = [vi.name for vi in model.graph.input if vi.name not in inits]
    try:
        if not case.data_sets:
            raise ValueError("the case has no data set")
        data_sets = [([_array(v) for v in ins], [_array(v) for v in outs])
                     for ins, outs in case.data_sets]
        inputs, expected = data_sets[0]
        if any(not isinstance(v, np.ndarray) for v in inputs):
            raise ImporterError("cannot import: unsupported input kind (sequence or optional)")
        try:
            mod, params = from_onnx(model)
            frozen: dict[str, np.ndarray] = {}
        except ImporterError as err:
            if "unsupported node" in err.message:
                raise
            frozen = {n: np.asarray(v) for n, v in zip(names, inputs)
                      if isinstance(v, np.ndarray) and v.dtype.kind in "iub"}
            try:
                mod, params = from_onnx(model, const_inputs=frozen)
            except ImporterError:
                frozen = {n: np.asarray(v) for n, v in zip(names, inputs)}
                mod, params = from_onnx(model, const_inputs=frozen)
            out.frozen = True
        for inputs, expected in data_sets:
            args = [v for n, v in zip(names, inputs) if n not in frozen]
            if frozen:
                current = {n: np.asarray(v) for n, v in zip(names, inputs) if n in frozen}
                if any(not np.array_equal(current[n], frozen[n]) for n in frozen):
                    mod, params = from_onnx(model, const_inputs=current)
            args += [params[k] for k in params]
            if any(not isinstance(a, np.ndarray) for a in args):
                raise ImporterError("cannot import: sequence or optional inputs")
            result = evaluate(mod, *args)
            results = list(result) if len(expected) > 1 else [result]
            for got, want in zip(results, expected):
                why = _compare_value(got, want, float(getattr(case, "rtol", RTOL)),
                                     float(getattr(case, "atol", ATOL)))
                if why:
                    out.status, out.reason = "mismatch", why
                    return out
    except ImporterError as err:
        unsupported = any(k in err.message for k in (
            "unsupported node", "unsupported element type", "unsupported input kind",
            "only tensor inputs", "not reproducible"))
        out.status = "unsupported" if unsupported else "import"
        out.reason = err.message.splitlines()[-1].strip()[:300]
    except RelayTypeError as err:
        out.status, out.reason = "type", err.message[:300]
    except RelayRuntimeError as err:
        out.status, out.reason = "runtime", err.message[:300]
    except RelayError as err:
        out.status, out.reason = "import", err.message[:300]
    except Exception as err:  # noqa: BLE001 - the runner reports every failure as data
        out.status, out.reason = "crash", f"{type(err).__name__}: {err}"[:300]
    finally:
        out.seconds = time.perf_counter() - start
    return out
