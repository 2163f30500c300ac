"""The differential harness: a pass or a backend against the oracle (docs/architecture.md#api).

``assert_equivalent(transform)`` draws well-typed programs with inputs
(:func:`conformance.strategies.programs.well_typed_modules`), runs the oracle
(``interpreter.evaluate``) on each program and on ``transform(program)``, and
compares the outcomes. ``transform`` maps an ``IRModule`` to

* an ``IRModule`` (a pass or pipeline), whose ``main`` is then run by the
  oracle too (type-checked first: a pass must preserve well-typedness); or
* a Python callable running ``main`` (a backend / an external
  implementation), called with the inputs.

Outcomes agree when both are values that compare equal
(:func:`values_equal`: exact for integers and booleans, per-dtype tolerances
for floats with NaN equal to NaN and infinities by sign, structural for
tuples, ADT values and references, closures opaque), or when both fail with
a ``RelayRuntimeError`` (a documented trap, §5). Everything else is a
disagreement: a different value, a trap on one side only, a transform that
raises anything but a ``RelayError``, or (unless ``allow_errors``) a
transform that rejects the program with a ``RelayError``. A disagreement
raises ``AssertionError`` whose message holds the *shrunk* counterexample
(Hypothesis minimizes it first) as Relay text, with its inputs and both
outcomes.

Compiled backends reassociate: a compiled sum, mean, pool, ``dense``, convolution or
``softmax`` adds in another order than numpy, and a max/min reduction over ``-0.0`` and
``0.0`` keeps whichever comes first. Over the finite float extremes (±max) such a sum
cancels catastrophically and its value depends on the order, beyond any tolerance. So a
backend is checked on programs drawn with ``ProgramConfig(finite_extremes=False)`` (edge
cases NaN, ±inf and ``-0.0`` only, whose effect through a sum is order-free) and with
``signed_zeros=False``; NaN and the infinities stay exact. Passes keep both (see
docs/conformance.md, "Compiled backends reassociate").

Also here: :func:`value_has_type` (the PRESERVATION property: a value
inhabits a type). :func:`show_value` (exact, iterative value rendering) and the
comparison behind :func:`values_equal` live in :mod:`interpreter.values` and are
re-exported here.
Values can be deep (long lists), so every walk over values keeps its own
stack.
"""

from __future__ import annotations

import copy
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy

from interpreter.values import TOLERANCES, compare_values, show_value, value_kind
from semantics.errors import RelayError, RelayRuntimeError, RelayTypeError
from semantics.module import IRModule
from semantics.shapes import ANY
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)

__all__ = ["assert_equivalent", "check_program", "Disagreement", "values_equal",
           "value_has_type", "show_value", "Outcome", "run_oracle", "TOLERANCES", "ORACLE_FUEL"]


# Rule applications the oracle may spend on one generated program (they all terminate in far
# fewer); a transformed program gets ten times as many.
ORACLE_FUEL = 2_000_000

# The documented run-time errors of §5 a well-typed generated program may end in.
DOCUMENTED_TRAPS = ("division by zero", "non-exhaustive match")


# --- outcomes -------------------------------------------------------------------------------

@dataclass
class Outcome:
    """What running a program gave: a value, or an error (its class name and message)."""

    value: Any = None
    error: str | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.error is None

    def describe(self) -> str:
        if self.ok:
            return show_value(self.value)
        return f"{self.error}: {self.message}"


def run_oracle(mod: IRModule, inputs: Sequence[Any], *, fuel: int = ORACLE_FUEL,
               check: bool = True, entry: str = "main",
               trace: Callable[[str, Any], Any] | None = None) -> Outcome:
    """Evaluate ``entry`` of ``mod`` on (copies of) ``inputs`` with the interpreter."""
    from interpreter.entry import evaluate

    try:
        value = evaluate(mod, *copy.deepcopy(tuple(inputs)), entry=entry, check=check,
                         fuel=fuel, trace=trace)
    except RelayError as err:
        return Outcome(error=type(err).__name__, message=err.message)
    return Outcome(value=value)


# --- value comparison (moved to interpreter.values; re-exported here) ---------------------

def values_equal(a: Any, b: Any, *, exact_floats: bool = False,
                 tolerances: dict[str, tuple[float, float]] | None = None,
                 signed_zeros: bool = True) -> tuple[bool, str]:
    """Compare two runtime values; returns ``(equal, where-and-why if not)``.

    :func:`interpreter.values.compare_values` with an external implementation's
    function values (``OpaqueFunction``) opaque too: tensors of the same dtype and
    shape, integers/bools exactly, floats within ``tolerances[dtype]``
    (``exact_floats``: bitwise up to NaN payloads, so the sign of zero counts), NaN
    equals NaN, infinities by sign; tuples and ADT values structurally, references by
    their contents, function values opaque.
    """
    from conformance.external_values import OpaqueFunction

    return compare_values(a, b, exact_floats=exact_floats, tolerances=tolerances,
                          opaque=(OpaqueFunction,), signed_zeros=signed_zeros)


_kind = value_kind


# --- preservation ---------------------------------------------------------------------------

def value_has_type(value: Any, ty: Type, module: IRModule | None = None) -> bool:
    """True when ``value`` inhabits ``ty`` (the PRESERVATION property).

    Tensors: exact dtype, rank, and every dim (``?`` matches anything, a
    symbolic dim must take one consistent value across the whole value).
    Tuples, ``Ref`` contents and ADT values (constructor of that ADT, fields of
    the constructor's field types instantiated at the type arguments) are
    checked structurally. A function type accepts any function value (a
    closure's type is not recoverable at run time). Unsolved type variables
    accept anything.
    """
    return _why_not(value, ty, module) is None


def _why_not(value: Any, ty: Type, module: IRModule | None) -> str | None:
    from conformance.strategies.typeutil import substitute
    from interpreter.values import Closure, ConstructorFunction, ConstructorValue, OpValue, RefValue

    bindings: dict[str, int] = {}
    stack: list[tuple[Any, Type, str]] = [(value, ty, "result")]
    seen: set[tuple[int, int]] = set()
    while stack:
        v, t, path = stack.pop()
        if isinstance(t, (TypeVar, IncompleteType)):
            continue
        if isinstance(t, TensorType):
            if isinstance(v, np.generic):
                v = np.asarray(v)
            if not isinstance(v, np.ndarray):
                return f"{path}: expected a tensor, got {_kind(v)}"
            if v.dtype.name != t.dtype:
                return f"{path}: dtype {v.dtype.name}, expected {t.dtype}"
            if v.ndim != len(t.shape):
                return f"{path}: rank {v.ndim}, expected {len(t.shape)}"
            for actual, dim in zip(v.shape, t.shape, strict=False):
                why = _dim_ok(int(actual), dim, bindings)
                if why:
                    return f"{path}: {why}"
            continue
        if isinstance(t, TupleType):
            if not isinstance(v, tuple) or len(v) != len(t.fields):
                return f"{path}: expected a {len(t.fields)}-tuple, got {_kind(v)}"
            stack.extend((x, ft, f"{path}.{i}")
                         for i, (x, ft) in enumerate(zip(v, t.fields, strict=True)))
            continue
        if isinstance(t, RefType):
            if not isinstance(v, RefValue):
                return f"{path}: expected a reference, got {_kind(v)}"
            if (id(v), id(t)) not in seen:
                seen.add((id(v), id(t)))
                stack.append((v.value, t.value, f"!{path}"))
            continue
        if isinstance(t, FuncType):
            if not isinstance(v, (Closure, OpValue, ConstructorFunction)):
                return f"{path}: expected a function, got {_kind(v)}"
            continue
        if isinstance(t, (TypeCall, GlobalTypeVar)):
            head = t.func if isinstance(t, TypeCall) else t
            args = t.args if isinstance(t, TypeCall) else ()
            if not isinstance(v, ConstructorValue):
                return f"{path}: expected a {head.name} value, got {_kind(v)}"
            td = _type_data(module, head.name)
            if td is None:
                return f"{path}: ADT {head.name} is not defined"
            ctor = next((c for c in td.constructors if c.name == v.name), None)
            if ctor is None:
                return f"{path}: {v.name} is not a constructor of {head.name}"
            if len(v.fields) != len(ctor.inputs):
                return f"{path}: {v.name} has {len(v.fields)} fields, expected {len(ctor.inputs)}"
            mapping = {id(tv): a for tv, a in zip(td.type_vars, args, strict=False)}
            stack.extend((x, substitute(ft, mapping), f"{path}.{v.name}[{i}]")
                         for i, (x, ft) in enumerate(zip(v.fields, ctor.inputs, strict=False)))
            continue
        return f"{path}: cannot check a value against {type(t).__name__}"
    return None


def _dim_ok(actual: int, dim: Any, bindings: dict[str, int]) -> str | None:
    if dim is ANY:
        return None
    if isinstance(dim, int):
        return None if dim == actual else f"dimension {actual}, expected {dim}"
    expr = sympy.sympify(dim)
    free = sorted(expr.free_symbols, key=lambda s: s.name)
    unbound = [s for s in free if s.name not in bindings]
    if len(unbound) == 1 and expr == unbound[0]:
        bindings[unbound[0].name] = actual
        return None
    if unbound:
        return None  # not decidable from this dim alone; accept
    value = int(expr.subs({s: bindings[s.name] for s in free}))
    return None if value == actual else f"dimension {actual}, expected {dim} = {value}"


def _type_data(module: IRModule | None, name: str) -> Any:
    if module is not None and name in module.types:
        return module.types[name]
    try:
        from semantics.prelude import prelude_module

        prelude = prelude_module()
        return prelude.types.get(name)
    except (ImportError, AttributeError, RelayError):
        return None


# --- running one program through a transform ------------------------------------------------

class TransformDeclined(Exception):
    """The transform rejected a program with a RelayError and ``allow_errors`` was set."""


def check_program(transform: Callable[[IRModule], Any], module: IRModule,
                  inputs: Sequence[Any] = (), *, name: str | None = None,
                  exact_floats: bool = False, allow_errors: bool = False,
                  check_types: bool = True, oracle: Outcome | None = None,
                  alternates: Sequence[Sequence[Any]] = (),
                  alternate_oracles: Sequence[Outcome] | None = None,
                  fuel: int | None = None, signed_zeros: bool = True) -> None:
    """Run one program through the oracle and through ``transform``; raise on disagreement.

    Args:
        transform: the pass or backend under test (applied once).
        module: the program; ``inputs`` the arguments of its ``main``.
        name, exact_floats, allow_errors, check_types: as in :func:`assert_equivalent`.
        oracle: the oracle's outcome on ``inputs`` when already known.
        alternates: further argument tuples for ``main``, checked after ``inputs``.
        alternate_oracles: the oracle's outcomes on ``alternates`` when already known.
        fuel: rule applications the transformed program may spend (default ten times
            :data:`ORACLE_FUEL`); running out is a disagreement.
        signed_zeros: as in :func:`assert_equivalent`.
    Raises:
        AssertionError: the outcomes disagree (message: program text, the inputs on which
            they do, both outcomes).
        TransformDeclined: ``allow_errors`` and the transform raised a RelayError.
    """
    named = getattr(transform, "name", None)
    label = name or str(getattr(transform, "__name__", None) or
                        (named if isinstance(named, str) else repr(transform)))
    if oracle is None:
        oracle = run_oracle(module, inputs)
    if oracle.error == "RelayTypeError" or oracle.error == "ParseError":
        raise Disagreement(
            f"conformance kit: the oracle rejected the program ({oracle.describe()}); programs "
            "must be well typed (for a generated program this is a bug in the kit or the type "
            "checker)", "oracle rejected", module, inputs, oracle, None, None)
    transformed: Any = None
    try:
        transformed = transform(module)
    except RelayError as err:
        if allow_errors:
            raise TransformDeclined(str(err)) from err
        raise Disagreement(
            f"your pass raised {type(err).__name__}: transform {label} raised "
            f"{type(err).__name__} on a well-typed program", "raised " + type(err).__name__,
            module, inputs, oracle, Outcome(error=type(err).__name__, message=err.message),
            None, traceback_text=_user_traceback(err)) from None
    except Exception as err:  # noqa: BLE001 - any crash of the transform is a failure
        raise Disagreement(
            f"your pass raised {type(err).__name__}: {err} (transform {label} crashed with "
            f"{type(err).__name__}, not a RelayError)", "raised " + type(err).__name__,
            module, inputs, oracle, _crash(err), None,
            traceback_text=_user_traceback(err)) from None
    if _unchanged(transformed, module):
        return      # the very program again: the oracle is deterministic, the outcomes agree
    budget = fuel if fuel is not None else 10 * ORACLE_FUEL
    _compare_run(label, transformed, module, inputs, oracle, check_types, exact_floats, budget,
                 signed_zeros)
    for i, alt in enumerate(alternates):
        expected = alternate_oracles[i] if alternate_oracles is not None else \
            run_oracle(module, alt)
        _compare_run(label, transformed, module, alt, expected, check_types, exact_floats,
                     budget, signed_zeros)


def _unchanged(transformed: Any, module: IRModule) -> bool:
    """Whether ``transformed`` is ``module`` again (the same object, or a module equal to
    it up to the names of bound variables): nodes are immutable and the oracle is
    deterministic, so running it would only repeat the oracle's runs. Most passes leave
    many generated programs alone; this skips all but the first of their runs."""
    if transformed is module:
        return True
    if not isinstance(transformed, IRModule):
        return False
    from semantics.structural.exprs import alpha_equal

    try:
        return alpha_equal(transformed, module)
    except Exception:  # noqa: BLE001 - a malformed module: run it and report what happens
        return False


def _compare_run(label: str, transformed: Any, module: IRModule, inputs: Sequence[Any],
                 oracle: Outcome, check_types: bool, exact_floats: bool, fuel: int,
                 signed_zeros: bool = True) -> None:
    got = _run_transformed(transformed, module, inputs, check_types, fuel)
    if oracle.ok and got.ok:
        equal, why = values_equal(oracle.value, got.value, exact_floats=exact_floats,
                                  signed_zeros=signed_zeros)
        if equal:
            return
        raise Disagreement(f"transform {label} computes a different value ({why})", "value",
                           module, inputs, oracle, got, transformed, why=why)
    if not oracle.ok and not got.ok and oracle.error == got.error == "RelayRuntimeError":
        return
    kind = f"outcome {'value' if oracle.ok else oracle.error} vs " \
        f"{'value' if got.ok else got.error}"
    raise Disagreement(f"transform {label} disagrees with the oracle", kind, module, inputs,
                       oracle, got, transformed)


def _run_transformed(transformed: Any, module: IRModule, inputs: Sequence[Any],
                     check_types: bool, fuel: int = 10 * ORACLE_FUEL) -> Outcome:
    from semantics.expr import Expr, Function

    if isinstance(transformed, Expr):
        transformed = module.with_function("main", transformed) \
            if isinstance(transformed, Function) \
            else IRModule.from_expr(transformed, module.functions, module.types)
    if isinstance(transformed, IRModule):
        try:
            return run_oracle(transformed, inputs, fuel=fuel, check=check_types)
        except Exception as err:  # noqa: BLE001 - InternalError etc. in the oracle itself
            return _crash(err)
    if callable(transformed):
        try:
            value = transformed(*copy.deepcopy(tuple(inputs)))
        except RelayError as err:
            return Outcome(error=type(err).__name__, message=err.message)
        except Exception as err:  # noqa: BLE001 - a crashing backend is a failure
            return _crash(err)
        return Outcome(value=value)
    return Outcome(error="BadTransform",
                   message=f"the transform returned {type(transformed).__name__}, "
                           "expected an IRModule or a callable")


def _crash(err: BaseException) -> Outcome:
    tb = "".join(traceback.format_exception_only(type(err), err)).strip()
    return Outcome(error=f"crash {type(err).__name__}", message=tb)


def _pretty(node: Any) -> str:
    try:
        from semantics import pretty

        return pretty(node)
    except Exception as err:  # noqa: BLE001 - a report must never fail
        return f"<cannot print: {type(err).__name__}: {err}>"


def _user_traceback(err: BaseException) -> str:
    """The traceback of an exception raised by the transform, from the transform's frame on
    (the harness's own frame left out)."""
    tb = err.__traceback__
    if tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(err), err, tb)).rstrip()


class Disagreement(AssertionError):
    """A counterexample: the transform disagrees with the oracle on one program.

    Attributes:
        headline: one line saying what went wrong.
        kind: ``"value"`` (different values), ``"raised X"`` (the transform raised ``X``),
            ``"outcome A vs B"`` (a value on one side, an error on the other), ``"oracle
            rejected"``; the reducer keeps a candidate only when its kind is the same.
        module, inputs: the program and the arguments of its ``main`` on which it happens.
        oracle, got: both outcomes (``got`` is None when the transform itself raised).
        transformed: what the transform returned (an ``IRModule`` is printed too).
        why: where the values differ (``at result.1: ...``), for ``kind == "value"``.
        traceback_text: the transform's traceback when it raised.
        shrink: how the counterexample was minimised (set by :func:`assert_equivalent`).
    """

    def __init__(self, headline: str, kind: str, module: IRModule, inputs: Sequence[Any],
                 oracle: Outcome, got: Outcome | None, transformed: Any, *, why: str = "",
                 traceback_text: str | None = None) -> None:
        super().__init__(headline)
        self.headline = headline
        self.kind = kind
        self.module = module
        self.inputs = tuple(inputs)
        self.oracle = oracle
        self.got = got
        self.transformed = transformed
        self.why = why
        self.traceback_text = traceback_text
        self.shrink = ""
        self.artifacts_dir: str | None = None
        self._text: str | None = None

    def __str__(self) -> str:
        if self._text is None:
            self._text = self.render()
        return self._text

    def program_text(self) -> str:
        """The program as parseable Relay text (with its ``#[metadata]`` section)."""
        return _pretty(self.module)

    def first_difference(self) -> str | None:
        from conformance.report import first_difference

        if self.got is None or not (self.oracle.ok and self.got.ok):
            return None
        return first_difference(self.oracle.value, self.got.value)

    def render(self, artifacts_dir: str | None = None) -> str:
        """The report: headline, program, inputs, both outcomes, the first difference."""
        from conformance.report import Artifacts, readable_metadata, show_inputs, split_metadata

        artifacts = Artifacts(artifacts_dir or self.artifacts_dir)
        params = self.module["main"].params if "main" in self.module else ()
        head, constants = split_metadata(_pretty(self.module))
        lines = [self.headline]
        if self.shrink:
            lines += [self.shrink]
        lines += ["", "--- program (Relay text) ---", head.rstrip()]
        if constants:
            lines += ["", "--- constants (the #[metadata] section) ---",
                      *readable_metadata(constants, artifacts)]
        names = [p.name_hint for p in params]
        lines += ["", "--- inputs ---",
                  *(show_inputs(names, self.inputs, artifacts) or ["  (none)"]), "",
                  "--- oracle (interpreter.evaluate) ---", "  " + self.oracle.describe()]
        if self.got is not None:
            lines += ["--- transform ---", "  " + self.got.describe()]
        diff = self.first_difference()
        if diff:
            lines += ["--- first differing element ---", "  " + diff]
        if self.traceback_text:
            lines += ["", "--- your pass raised (traceback) ---", self.traceback_text]
        if isinstance(self.transformed, IRModule):
            lines += ["", "--- transformed program ---",
                      split_metadata(_pretty(self.transformed))[0].rstrip()]
        if artifacts.files:
            lines += ["", f"(large values written to {artifacts.directory})"]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The counterexample as JSON-ready data (for ``relay conformance --json``)."""
        from conformance.report import numpy_literal

        def describe_input(v: Any) -> Any:
            if isinstance(v, np.ndarray | np.generic):
                arr = np.asarray(v)
                return {"dtype": arr.dtype.name, "shape": list(arr.shape),
                        "numpy": numpy_literal(arr) if arr.size <= 4096 else None,
                        "relay": show_value(arr)}
            return {"relay": show_value(v)}

        return {"headline": self.headline, "kind": self.kind, "program": self.program_text(),
                "inputs": [describe_input(v) for v in self.inputs],
                "expected": self.oracle.describe(),
                "got": self.got.describe() if self.got is not None else None,
                "first_difference": self.first_difference(),
                "traceback": self.traceback_text, "shrink": self.shrink,
                "report": str(self)}


# --- the property -------------------------------------------------------------------------------

def _normalize_programs(programs: Iterable[Any]) -> list[tuple[IRModule, tuple[Any, ...]]]:
    from semantics import parse

    out = []
    for item in programs:
        inputs: tuple[Any, ...] = ()
        if isinstance(item, tuple) and len(item) == 2 and not isinstance(item, IRModule):
            item, inputs = item[0], tuple(item[1])
        if isinstance(item, str):
            item = parse(item)
        if not isinstance(item, IRModule):
            raise TypeError(f"programs: expected IRModule, text or (program, inputs), got "
                            f"{type(item).__name__}")
        out.append((item, inputs))
    return out


DEFAULT_SHRINK_TIME = 15.0


class _ShrinkBudgetSpent(BaseException):
    """Raised inside the property once the shrinking budget is spent: a ``BaseException``,
    so Hypothesis stops at once instead of treating it as another failure to shrink."""


# Hypothesis's share of the shrink budget (the program reducer gets the rest, at least
# 2 s), and how long its shrinking may go without a smaller counterexample before the
# reducer takes over (a fraction of the budget, at least STALL_MIN seconds). Hypothesis
# re-generates a whole program for every attempt, while the reducer edits the program
# itself: on generated programs the reducer removes far more per second, so Hypothesis
# is stopped as soon as it stalls (2 s at the default budget: measured on the slips of
# docs/assignments.md, the reducer then ends as small in a second or two).
SHRINK_SHARE = 0.6
STALL_SHARE = 0.1
STALL_MIN = 2.0


class _Search:
    """The smallest counterexample seen so far and the shrinking clock: shrinking stops
    after ``budget`` seconds, or ``stall`` seconds without a smaller counterexample."""

    def __init__(self, budget: float, stall: float | None = None) -> None:
        self.budget = budget
        self.stall = stall if stall is not None else float("inf")
        self.first_failure: float | None = None
        self.found_after: float | None = None
        self.progress: float | None = None      # when the best counterexample last shrank
        self.stop_reason = ""
        self.start = time.monotonic()
        self.best: Disagreement | None = None
        self.best_size = 0
        self.failures = 0

    def tick(self) -> None:
        if self.first_failure is None or self.progress is None:
            return
        now = time.monotonic()
        if now - self.first_failure > self.budget:
            self.stop_reason = "time budget spent, smallest so far"
            raise _ShrinkBudgetSpent()
        if now - self.progress > self.stall:
            self.stop_reason = f"no smaller one for {self.stall:.0f} s, the reducer took over"
            raise _ShrinkBudgetSpent()

    def record(self, d: Disagreement) -> None:
        now = time.monotonic()
        if self.first_failure is None:
            self.first_failure = now
            self.found_after = now - self.start
        self.failures += 1
        if self.best is not None and d.kind != self.best.kind:
            return      # another failure met while shrinking: keep to the first one's kind
        size = _program_size(d)
        if self.best is None or size < self.best_size:
            self.best, self.best_size = d, size
            self.progress = now


def _program_size(d: Disagreement) -> int:
    from conformance.reduce import program_size

    return program_size(d.module, d.inputs)


def reduce_disagreement(transform: Callable[[IRModule], Any], d: Disagreement, *,
                        deadline: float, name: str | None = None, exact_floats: bool = False,
                        check_types: bool = True, signed_zeros: bool = True) -> Disagreement:
    """Run the reducer (:mod:`conformance.reduce`) on a counterexample until ``deadline``.

    A candidate is kept when ``transform`` still disagrees with the oracle on it in the
    same way (the same :attr:`Disagreement.kind`; for a value, at the same component of
    ``main``'s result when the program returns a tuple). Returns the smallest
    counterexample found (``d`` itself when nothing could be removed).
    """
    from conformance.reduce import reduce_program
    from conformance.report import result_component

    if d.kind == "oracle rejected" or "main" not in d.module:
        return d
    last: list[Disagreement] = [d]

    def still_fails(mod: IRModule, args: tuple[Any, ...]) -> bool:
        oracle = run_oracle(mod, args)
        if not oracle.ok and oracle.error != "RelayRuntimeError":
            return False
        try:
            check_program(transform, mod, args, name=name, exact_floats=exact_floats,
                          check_types=check_types, oracle=oracle, signed_zeros=signed_zeros)
        except Disagreement as again:
            if again.kind != d.kind:
                return False
            last.append(again)
            return True
        except (TransformDeclined, RelayError):
            return False
        except Exception:  # noqa: BLE001 - a candidate the harness cannot run: skip it
            return False
        return False

    focus = result_component(d.why[3:]) if d.why.startswith("at ") else None
    mod, args = reduce_program(d.module, d.inputs, still_fails, deadline=deadline,
                               focus=focus)
    for cand in reversed(last):
        if cand.module is mod and cand.inputs == args:
            return cand
    return d


def assert_equivalent(transform: Callable[[IRModule], Any], *,
                      programs: Iterable[Any] | None = None,
                      max_examples: int | None = None, config: Any = None, strategy: Any = None,
                      exact_floats: bool = False, allow_errors: bool = False,
                      check_types: bool = True, name: str | None = None,
                      seed: int | None = None,
                      shrink_time: float | None = DEFAULT_SHRINK_TIME,
                      signed_zeros: bool = True) -> None:
    """Check that ``transform`` preserves the meaning of programs (docs/architecture.md#api).

    Args:
        transform: ``IRModule -> IRModule`` (a pass) or ``IRModule -> callable`` (a backend
            whose callable runs ``main`` on the inputs).
        programs: explicit programs instead of generated ones: ``IRModule`` s, Relay texts or
            ``(program, inputs)`` pairs (``Program`` objects qualify). Checked in order, not
            shrunk.
        max_examples: generated programs to try (default: the active Hypothesis profile's).
        config: a :class:`conformance.strategies.programs.ProgramConfig` for the generator.
        strategy: a Hypothesis strategy of ``Program`` s replacing the default generator.
        exact_floats: compare floats bitwise instead of with :data:`TOLERANCES` (the
            default comparison is already exact about NaN, the infinities and the sign of
            zero: the tolerances apply to other finite values only).
        allow_errors: a ``RelayError`` raised by ``transform`` skips the program instead of
            failing (for backends that decline unsupported programs).
        check_types: type-check a transformed module before running it.
        name: the transform's name in messages.
        seed: a seed for the generator (default: the profile's derandomization / random).
        shrink_time: seconds spent minimising a counterexample once one is found (default
            15; ``None``: no limit): at most :data:`SHRINK_SHARE` of it for Hypothesis's
            shrinking (which also stops once it has found no smaller counterexample for
            :data:`STALL_SHARE` of the budget), the rest (at least 2 s) for the program
            reducer (:mod:`conformance.reduce`). When the budget is spent the smallest
            counterexample found so far is reported.
        signed_zeros: ``-0.0`` and ``0.0`` differ (the default); ``False`` for a pass that
            legitimately reassociates float arithmetic (e.g. FoldScaleAxis).
    Raises:
        AssertionError: a disagreement (a :class:`Disagreement`); the message holds the
            minimised counterexample as Relay text, its inputs and both outcomes.
    Note:
        Do not call this from inside a Hypothesis ``@given`` test (Hypothesis does not nest).
    """
    def check(module: IRModule, inputs: Sequence[Any],
              alternates: Sequence[Sequence[Any]] = ()) -> None:
        check_program(transform, module, inputs, name=name, exact_floats=exact_floats,
                      allow_errors=allow_errors, check_types=check_types,
                      alternates=alternates, signed_zeros=signed_zeros)

    if programs is not None:
        for module, inputs in _normalize_programs(programs):
            try:
                check(module, inputs)
            except TransformDeclined:
                continue
        return

    _check_generated(transform, check, max_examples=max_examples, config=config,
                     strategy=strategy, seed=seed, shrink_time=shrink_time, name=name,
                     exact_floats=exact_floats, check_types=check_types,
                     signed_zeros=signed_zeros)


def _search_settings(max_examples: int | None) -> Any:
    """The Hypothesis settings of a conformance search: the active profile's, with
    ``max_examples`` (when given), no deadline, no database and the health checks a
    program generator trips suppressed."""
    from hypothesis import HealthCheck, settings

    base = settings.default or settings()
    return settings(base, max_examples=max_examples or base.max_examples, deadline=None,
                    database=None, report_multiple_bugs=False, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much,
                                           HealthCheck.large_base_example])


def _check_generated(transform: Callable[[IRModule], Any],
                     check: Callable[[IRModule, Sequence[Any], Sequence[Sequence[Any]]], None],
                     *, max_examples: int | None, config: Any, strategy: Any,
                     seed: int | None, shrink_time: float | None, name: str | None,
                     exact_floats: bool, check_types: bool, signed_zeros: bool) -> None:
    """The generated-programs half of :func:`assert_equivalent`: search with Hypothesis
    (``check`` checks one program), then minimise the best counterexample found and raise
    it (a :class:`Disagreement`); return when every program agrees."""
    from hypothesis import given, reject
    from hypothesis import seed as hseed

    from conformance.strategies.programs import well_typed_modules

    total = float("inf") if shrink_time is None else max(0.0, float(shrink_time))
    search = _Search(SHRINK_SHARE * total, stall=max(STALL_MIN, STALL_SHARE * total))
    strat = strategy if strategy is not None else well_typed_modules(config)
    conf = _search_settings(max_examples)

    def conformance_property(program: Any) -> None:
        search.tick()
        try:
            check(program[0], program[1], getattr(program, "alternates", ()))
        except TransformDeclined:
            reject()
        except Disagreement as d:
            search.record(d)
            raise

    test = conf(given(program=strat)(conformance_property))
    if seed is not None:
        test = hseed(seed)(test)
    stopped = False
    try:
        test()
    except _ShrinkBudgetSpent:
        stopped = True
    except Disagreement as final:
        search.record(final)
    if search.best is None:
        return
    raise _minimised(transform, search, stopped, total, name=name, exact_floats=exact_floats,
                     check_types=check_types, signed_zeros=signed_zeros) from None


def _minimised(transform: Callable[[IRModule], Any], search: _Search, stopped: bool,
               total: float, *, name: str | None, exact_floats: bool, check_types: bool,
               signed_zeros: bool) -> Disagreement:
    """The search's best counterexample run through the program reducer with what is left
    of the ``total`` shrink budget, its ``shrink`` note telling how long each stage took
    (``stopped``: Hypothesis's shrinking ran out of time)."""
    assert search.best is not None and search.first_failure is not None
    shrunk_for = time.monotonic() - search.first_failure
    reduce_budget = max(2.0, total - shrunk_for) if total != float("inf") else 60.0
    before = _program_size(search.best)
    best = reduce_disagreement(transform, search.best, deadline=time.monotonic() + reduce_budget,
                               name=name, exact_floats=exact_floats, check_types=check_types,
                               signed_zeros=signed_zeros)
    reduced_for = time.monotonic() - search.first_failure - shrunk_for
    best.shrink = (
        f"(found after {search.found_after:.1f} s; Hypothesis shrank it for {shrunk_for:.1f} s"
        + (f" ({search.stop_reason})" if stopped else "")
        + f", the reducer for {reduced_for:.1f} s: size {before} -> {_program_size(best)})")
    return best


# Re-exported for callers that catch the oracle's error classes.
RelayTypeError = RelayTypeError
RelayRuntimeError = RelayRuntimeError
