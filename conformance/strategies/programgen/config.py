"""Configuration and results of the well-typed generator.

:class:`ProgramConfig` (sizes, numerics, :data:`FEATURES` to enable), :class:`Program`
(a module and the inputs of its ``main``, printed as a counterexample), and
:class:`TypingContext` (the variables in scope for :func:`well_typed_exprs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from semantics.expr import Var
from semantics.module import IRModule
from semantics.types import Type

FEATURES = frozenset({
    "let", "if", "tuple", "closure", "higher_order", "global", "poly", "adt", "match",
    "partial_match", "ref", "op", "sharing", "recursion", "let_rec",
})

DEFAULT_DTYPES = ("int32", "bool", "int64", "int8", "uint8", "float32", "float16")
FLOAT_DTYPES = ("float32", "float64", "float16", "bool", "int32")


@dataclass(frozen=True)
class ProgramConfig:
    """Size, numeric and feature controls of the well-typed generator."""

    max_depth: int = 2            # nesting of compound expressions
    max_let_chain: int = 2        # bindings in one let chain
    max_globals: int = 2          # helper globals besides main
    max_adts: int = 2
    max_params: int = 2
    max_rank: int = 2
    max_dim: int = 3
    type_depth: int = 2
    dtypes: tuple[str, ...] = DEFAULT_DTYPES
    float_mode: bool = False      # moderate real float values (compare with tolerances)
    value_bound: int = 8          # |x| <= value_bound for exact-mode contents
    special_values: bool = True   # mix edge cases (NaN, ±inf, -0.0, extremes) into values
    # Float edge cases (inputs, constants, unit and large constants) include the subnormal
    # and the finite extremes (±max, 0.75·max). False keeps them to NaN, ±inf and -0.0,
    # whose result through a sum is the same in every order: for compiled backends, whose
    # reductions reassociate (over ±max a sum cancels and its value depends on the order).
    finite_extremes: bool = True
    recursion_bound: int = 3      # counter loops run at most this many times
    adt_depth: int = 3            # nesting of generated ADT input values
    features: frozenset[str] = FEATURES
    ops: tuple[str, ...] | None = None   # None: every registered operator
    focus_op: str | None = None   # main binds at least one call of this operator
    min_op_bindings: int = 2      # op-call bindings main makes (when operators exist)
    extra_op_bindings: int = 4    # up to this many more (drawn)
    max_flow: int = 3             # elementwise steps over main's earlier tensors (drawn 0..n)
    max_probes: int = 3           # edge probes over main's earlier tensors (drawn 0..n)
    effects: int = 0              # extra top-level ``ref_write`` steps in main (targeted runs)
    lift_constants: bool = True   # some constants of main become parameters (drawn inputs)
    max_lifted: int = 4           # at most this many
    alternates: int = 4           # further input tuples per program (Program.alternates)

    def with_features(self, *names: str) -> ProgramConfig:
        return replace(self, features=frozenset(names))

    def without(self, *names: str) -> ProgramConfig:
        return replace(self, features=self.features - set(names))


class _ProgramFields(NamedTuple):
    module: IRModule
    inputs: tuple[Any, ...]


class Program(_ProgramFields):
    """A generated program: a module and the arguments for its ``main``.

    A pair ``(module, inputs)`` (it unpacks as one); ``alternates`` holds further
    argument tuples for the same ``main`` (``ProgramConfig.alternates`` of them), which
    :func:`conformance.assert_equivalent` checks too: running a program is much cheaper
    than generating it, and other inputs reach other edge cases.
    """

    alternates: tuple[tuple[Any, ...], ...]

    def __new__(cls, module: IRModule, inputs: tuple[Any, ...],
                alternates: tuple[tuple[Any, ...], ...] = ()) -> Program:
        self = super().__new__(cls, module, inputs)
        self.alternates = tuple(alternates)
        return self

    def text(self) -> str:
        from semantics import pretty

        return pretty(self.module)

    def __repr__(self) -> str:
        try:
            body = self.text()
        except Exception as err:  # noqa: BLE001 - repr must not fail (e.g. printer missing)
            body = f"<unprintable module: {type(err).__name__}: {err}>"
        args = ", ".join(format_value(v) for v in self.inputs)
        return f"Program(\n{body}\n# inputs: ({args})\n)"


def format_value(v: Any) -> str:
    """A short, exact rendering of a runtime value (for counterexamples)."""
    from interpreter.values import show_value

    return show_value(v)


@dataclass
class TypingContext:
    """Variables in scope with their types, for :func:`well_typed_exprs`."""

    variables: Sequence[tuple[Var, Type]] = ()
    module: IRModule | None = None
