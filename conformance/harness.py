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

Also here: :func:`value_has_type` (the PRESERVATION property: a value
inhabits a type). :func:`show_value` (exact, iterative value rendering) and the
comparison behind :func:`values_equal` live in :mod:`interpreter.values` and are
re-exported here.
Values can be deep (long lists), so every walk over values keeps its own
stack.
"""

from __future__ import annotations

import copy
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

__all__ = ["assert_equivalent", "check_program", "values_equal", "value_has_type", "show_value",
           "Outcome", "run_oracle", "TOLERANCES", "ORACLE_FUEL"]


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
                 tolerances: dict[str, tuple[float, float]] | None = None
                 ) -> tuple[bool, str]:
    """Compare two runtime values; returns ``(equal, where-and-why if not)``.

    :func:`interpreter.values.compare_values` with an external implementation's
    function values (``OpaqueFunction``) opaque too: tensors of the same dtype and
    shape, integers/bools exactly, floats within ``tolerances[dtype]``
    (``exact_floats``: bitwise up to NaN payloads, so the sign of zero counts), NaN
    equals NaN, infinities by sign; tuples and ADT values structurally, references by
    their contents, function values opaque.
    """
    from conformance.external import OpaqueFunction

    return compare_values(a, b, exact_floats=exact_floats, tolerances=tolerances,
                          opaque=(OpaqueFunction,))


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
                  fuel: int | None = None) -> None:
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
    Raises:
        AssertionError: the outcomes disagree (message: program text, the inputs on which
            they do, both outcomes).
        TransformDeclined: ``allow_errors`` and the transform raised a RelayError.
    """
    label = name or str(getattr(transform, "__name__", repr(transform)))
    if oracle is None:
        oracle = run_oracle(module, inputs)
    if oracle.error == "RelayTypeError" or oracle.error == "ParseError":
        raise AssertionError(_report(
            f"conformance kit: the oracle rejected the program ({oracle.describe()}); programs "
            "must be well typed (for a generated program this is a bug in the kit or the type "
            "checker)", module, inputs, oracle, None, None))
    transformed: Any = None
    try:
        transformed = transform(module)
    except RelayError as err:
        if allow_errors:
            raise TransformDeclined(str(err)) from err
        raise AssertionError(_report(
            f"transform {label} raised {type(err).__name__} on a well-typed program",
            module, inputs, oracle, Outcome(error=type(err).__name__, message=err.message),
            None)) from None
    except Exception as err:  # noqa: BLE001 - any crash of the transform is a failure
        raise AssertionError(_report(
            f"transform {label} crashed with {type(err).__name__} (not a RelayError)",
            module, inputs, oracle, _crash(err), None)) from None
    budget = fuel if fuel is not None else 10 * ORACLE_FUEL
    _compare_run(label, transformed, module, inputs, oracle, check_types, exact_floats, budget)
    for i, alt in enumerate(alternates):
        expected = alternate_oracles[i] if alternate_oracles is not None else \
            run_oracle(module, alt)
        _compare_run(label, transformed, module, alt, expected, check_types, exact_floats,
                     budget)


def _compare_run(label: str, transformed: Any, module: IRModule, inputs: Sequence[Any],
                 oracle: Outcome, check_types: bool, exact_floats: bool, fuel: int) -> None:
    got = _run_transformed(transformed, module, inputs, check_types, fuel)
    if oracle.ok and got.ok:
        equal, why = values_equal(oracle.value, got.value, exact_floats=exact_floats)
        if equal:
            return
        raise AssertionError(_report(f"transform {label} computes a different value ({why})",
                                     module, inputs, oracle, got, transformed))
    if not oracle.ok and not got.ok and oracle.error == got.error == "RelayRuntimeError":
        return
    raise AssertionError(_report(f"transform {label} disagrees with the oracle", module, inputs,
                                 oracle, got, transformed))


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


def _report(headline: str, module: IRModule, inputs: Sequence[Any], oracle: Outcome,
            got: Outcome | None, transformed: Any) -> str:
    params = module["main"].params if "main" in module else ()
    shown = [f"  %{p.name_hint} = {show_value(v)}" for p, v in zip(params, inputs, strict=False)]
    lines = [headline, "", "--- program (Relay text) ---", _pretty(module).rstrip(), "",
             "--- inputs ---", *(shown or ["  (none)"]), "",
             "--- oracle (interpreter.evaluate) ---", "  " + oracle.describe()]
    if got is not None:
        lines += ["--- transform ---", "  " + got.describe()]
    if isinstance(transformed, IRModule):
        lines += ["", "--- transformed program ---", _pretty(transformed).rstrip()]
    return "\n".join(lines)


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


def assert_equivalent(transform: Callable[[IRModule], Any], *,
                      programs: Iterable[Any] | None = None,
                      max_examples: int | None = None, config: Any = None, strategy: Any = None,
                      exact_floats: bool = False, allow_errors: bool = False,
                      check_types: bool = True, name: str | None = None,
                      seed: int | None = None) -> None:
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
        exact_floats: compare floats bitwise instead of with :data:`TOLERANCES`.
        allow_errors: a ``RelayError`` raised by ``transform`` skips the program instead of
            failing (for backends that decline unsupported programs).
        check_types: type-check a transformed module before running it.
        name: the transform's name in messages.
        seed: a seed for the generator (default: the profile's derandomization / random).
    Raises:
        AssertionError: a disagreement; the message holds the shrunk counterexample as Relay
            text, its inputs and both outcomes.
    Note:
        Do not call this from inside a Hypothesis ``@given`` test (Hypothesis does not nest).
    """
    def check(module: IRModule, inputs: Sequence[Any],
              alternates: Sequence[Sequence[Any]] = ()) -> None:
        check_program(transform, module, inputs, name=name, exact_floats=exact_floats,
                      allow_errors=allow_errors, check_types=check_types,
                      alternates=alternates)

    if programs is not None:
        for module, inputs in _normalize_programs(programs):
            try:
                check(module, inputs)
            except TransformDeclined:
                continue
        return

    from hypothesis import HealthCheck, given, reject, settings
    from hypothesis import seed as hseed

    from conformance.strategies.programs import well_typed_modules

    strat = strategy if strategy is not None else well_typed_modules(config)
    base = settings.default or settings()
    conf = settings(base, max_examples=max_examples or base.max_examples, deadline=None,
                    database=None, report_multiple_bugs=False, print_blob=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much,
                                           HealthCheck.large_base_example])

    def conformance_property(program: Any) -> None:
        try:
            check(program[0], program[1], getattr(program, "alternates", ()))
        except TransformDeclined:
            reject()

    test = conf(given(program=strat)(conformance_property))
    if seed is not None:
        test = hseed(seed)(test)
    test()


# Re-exported for callers that catch the oracle's error classes.
RelayTypeError = RelayTypeError
RelayRuntimeError = RelayRuntimeError
