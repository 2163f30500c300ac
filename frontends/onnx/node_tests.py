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
    in_scope: bool = False
    frozen: bool = False
    seconds: float = 0.0


def collect() -> list[Any]:
    """All node test cases the installed ``onnx`` ships."""
    from onnx.backend.test.case.node import collect_testcases
    return list(collect_testcases())


#: The acceptance scope: every node in the default domain, a model of default opset 9–21.
SCOPE = (9, 21)


def _nodes(graph: Any) -> Any:
    for node in graph.node:
        yield node
        for a in node.attribute:
            if a.HasField("g"):
                yield from _nodes(a.g)
            for g in a.graphs:
                yield from _nodes(g)


def in_scope(case: Any) -> bool:
    """Whether a case is in the acceptance scope (:data:`SCOPE`)."""
    versions = [i.version for i in case.model.opset_import if i.domain in ("", "ai.onnx")]
    if not versions or not SCOPE[0] <= versions[0] <= SCOPE[1]:
        return False
    return all(n.domain in ("", "ai.onnx") for n in _nodes(case.model.graph))


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
    """Compare a result (``from_relay_value`` of it: lists, ``None``) with an expected tensor,
    sequence (a list) or optional (``None`` when empty)."""
    if want is None:
        return None if got is None else "expected an empty optional"
    if got is None:
        return "got an empty optional"
    if isinstance(want, list):
        if not isinstance(got, list):
            return f"expected a sequence, got {type(got).__name__}"
        if len(got) != len(want):
            return f"sequence of {len(got)} != expected {len(want)}"
        for g, w in zip(got, want):
            why = _compare_value(g, w, rtol, atol)
            if why:
                return why
        return None
    return _compare(got, np.asarray(want), rtol, atol)


def _shape_hints(model: Any, names: list[str], inputs: list[Any]) -> dict[str, Any]:
    """For sequence and optional inputs, their elements' shape read from the data (a dim
    that differs between elements: ``None``)."""
    kinds = {vi.name: vi.type.WhichOneof("value") for vi in model.graph.input}
    hints: dict[str, Any] = {}
    for name, v in zip(names, inputs):
        if kinds.get(name) == "tensor_type" or v is None:
            continue
        items = v if isinstance(v, list) else [v]
        while items and isinstance(items[0], list):
            items = [x for it in items for x in it]
        shapes = {np.asarray(x).shape for x in items}
        if items and len({len(sh) for sh in shapes}) == 1:
            hints[name] = tuple(d[0] if len(set(d)) == 1 else None for d in zip(*shapes))
    return hints


def _array(v: Any) -> Any:
    """A case's input/output as numpy (cases hold some as ``TensorProto``)."""
    from onnx import TensorProto, numpy_helper
    if isinstance(v, TensorProto):
        return numpy_helper.to_array(v)
    if isinstance(v, (np.generic, int, float, bool)):
        return np.asarray(v)
    if isinstance(v, list):
        return [_array(x) for x in v]
    return v


def run_case(case: Any) -> Outcome:
    """Import and evaluate one node test case; never raises."""
    from frontends.onnx import ImporterError, from_onnx, from_relay_value, to_relay_value
    from interpreter import evaluate
    from semantics.errors import RelayError, RelayRuntimeError, RelayTypeError

    start = time.perf_counter()
    out = Outcome(case.name, _op_of(case), "pass", in_scope=in_scope(case))
    model = case.model
    inits = {i.name for i in model.graph.initializer}
    names = [vi.name for vi in model.graph.input if vi.name not in inits]
    try:
        if not case.data_sets:
            raise ValueError("the case has no data set")
        data_sets = [([_array(v) for v in ins], [_array(v) for v in outs])
                     for ins, outs in case.data_sets]
        inputs, expected = data_sets[0]
        hints: dict[str, Any] = {}
        try:
            mod, params = from_onnx(model)
            frozen: dict[str, np.ndarray] = {}
        except ImporterError as err:
            if "unsupported node" in err.message:
                raise
            if "shapes=" in err.message:
                # Undeclared element shapes: given as a user would, from the data.
                hints = _shape_hints(model, names, inputs)
            frozen = {n: np.asarray(v) for n, v in zip(names, inputs)
                      if isinstance(v, np.ndarray) and v.dtype.kind in "iub"}
            try:
                mod, params = from_onnx(model, const_inputs=frozen, shapes=hints)
            except ImporterError:
                frozen = {n: np.asarray(v) for n, v in zip(names, inputs)
                          if isinstance(v, np.ndarray)}
                mod, params = from_onnx(model, const_inputs=frozen, shapes=hints)
            out.frozen = bool(frozen)
        for inputs, expected in data_sets:
            args = [v for n, v in zip(names, inputs) if n not in frozen]
            if frozen:
                current = {n: np.asarray(v) for n, v in zip(names, inputs) if n in frozen}
                if any(not np.array_equal(current[n], frozen[n]) for n in frozen):
                    mod, params = from_onnx(model, const_inputs=current, shapes=hints)
            args = [to_relay_value(a, p.type_annotation) if p.type_annotation else a
                    for a, p in zip(args, mod["main"].params)]
            args += [params[k] for k in params]
            result = from_relay_value(evaluate(mod, *args))
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
