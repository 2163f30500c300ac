"""One operator call object: an operator bound to its normalized attributes, ready to apply.

Every place that applies an operator to values goes through :class:`BoundOp`: the oracle's
[Semantics-Call-Op] (one per call node), the TVM backend's fallback kernels, constant
folding and the partial evaluator. What it does, in order:

* **decide** — the operator's relation, given the arguments' dtypes and shapes and the
  attributes, accepts the call (or raises the Relay error the type checker would report);
* **run** — the reference computes the result;
* **cached verdict** — when the operator's ``impl`` is a
  :func:`semantics.ops.reference.reference` wrapper, its two halves are kept apart
  (``impl(*args, **attrs)`` is ``decided(*decide(args, attrs), attrs)``), and the verdict
  for the last argument signature is remembered: the verdict depends only on the
  arguments' dtypes and shapes and the attributes (fixed here), so arguments that are
  ndarrays of exactly the signature in ``last`` (clean: Relay dtypes, native byte order —
  then ``decide`` returns them unchanged) skip the relation.

``last`` is ``(dtypes, shapes, verdict)`` or None, replaced as a whole (one attribute: a
concurrent reader never sees a mixture); the oracle's compiled cases read it directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from semantics import errors
from semantics.errors import RelayError
from semantics.ops.reference import RELAY_DTYPE_OF
from semantics.ops.registry import OpDef, get

__all__ = ["OP_FAILURES", "BoundOp"]

OP_FAILURES = (ArithmeticError, ValueError, TypeError, IndexError, MemoryError)
"""numpy's own failures on a call no relation checked (dynamic shapes, unchecked programs)."""


class BoundOp:
    """An operator with fixed, normalized attributes: ``run(args)`` applies it.

    Attributes: ``opdef`` (the registry entry), ``name``, ``impl`` (``opdef.impl`` when
    bound), ``attrs`` (normalized), ``num_inputs`` (-1: variadic), ``decide`` / ``decided``
    (the reference wrapper's halves, or None), ``last`` (see the module docstring).
    """

    __slots__ = ("opdef", "name", "impl", "attrs", "num_inputs", "decide", "decided", "last")

    def __init__(self, opdef: OpDef, attrs: dict[str, Any]):
        """Bind ``opdef`` to ``attrs``, which must be normalized already (:meth:`of` does)."""
        self.opdef = opdef
        self.name = opdef.name
        self.impl = opdef.impl
        self.attrs = attrs
        self.num_inputs = opdef.num_inputs
        self.decide: Any = getattr(self.impl, "decide", None)
        self.decided: Any = getattr(self.impl, "decided", None)
        self.last: tuple[tuple[np.dtype, ...], tuple[tuple[int, ...], ...], Any] | None = None

    @classmethod
    def of(cls, op: str | OpDef, attrs: Mapping[str, Any] | None = None) -> BoundOp:
        """The operator ``op`` (a name or a registry entry) bound to ``attrs`` normalized.

        Raises:
            RelayTypeError: an unknown operator or bad attributes.
        """
        opdef = get(op) if isinstance(op, str) else op
        return cls(opdef, dict(opdef.normalize_attrs(attrs)))

    def arity_error(self, n: int) -> str | None:
        """The message for a call with ``n`` arguments when that is the wrong number."""
        if self.num_inputs >= 0 and n != self.num_inputs:
            return errors.wrong_arity(f"operator {self.name}", self.num_inputs, n)
        return None

    def call(self, args: Sequence[Any]) -> Any:
        """``impl(*args, **attrs)``: decide and run, remembering the verdict for ``args``."""
        if self.decide is None or self.decided is None:
            return self.impl(*args, **self.attrs)
        verdict, arrays = self.decide(tuple(args), self.attrs)
        if all(type(a) is np.ndarray and a.dtype in RELAY_DTYPE_OF for a in args):
            self.last = (tuple(a.dtype for a in args), tuple(a.shape for a in args), verdict)
        else:
            self.last = None
        return self.decided(verdict, arrays, self.attrs)

    def run(self, args: Sequence[Any]) -> Any:
        """``impl(*args, **attrs)``, skipping the relation when ``args`` have the signature
        whose verdict is cached. Raises what the operator raises (Relay errors, and numpy's
        :data:`OP_FAILURES` on a call no relation checked)."""
        last = self.last
        if last is not None and len(args) == len(last[0]):
            dtypes, shapes, verdict = last
            i = 0
            for a in args:
                if type(a) is not np.ndarray or a.dtype is not dtypes[i] or a.shape != shapes[i]:
                    return self.call(args)
                i += 1
            return self.decided(verdict, args, self.attrs)
        return self.call(args)

    def attempt(self, args: Sequence[Any]) -> Any:
        """The result of ``run(args)``, or None when the call has the wrong number of
        arguments or fails (a Relay error or a numpy failure): compile-time evaluation
        (constant folding, partial evaluation) leaves such a call for run time, where the
        oracle reports the failure."""
        if self.arity_error(len(args)) is not None:
            return None
        try:
            return self.run(args)
        except RelayError:
            return None
        except OP_FAILURES:
            return None

    @staticmethod
    def attempt_call(name: str, attrs: Mapping[str, Any] | None, args: Sequence[Any]) -> Any:
        """``BoundOp.of(name, attrs).attempt(args)``; None also for an unknown operator or
        bad attributes (the type checker reports those)."""
        try:
            bound = BoundOp.of(name, attrs)
        except RelayError:
            return None
        return bound.attempt(args)

    def __repr__(self) -> str:
        return f"<BoundOp {self.name}>"
