"""Per-operator rule tables: rules keyed by operator name, registered by their consumers.

An operator's *definition* (attributes, type relation, numpy reference, pattern) lives in
the registry (:mod:`semantics.ops.registry`).  Everything a *consumer* attaches to an
operator — its gradient (automatic differentiation), its lowering to a backend target, its
quantization annotation — lives in a :class:`RuleTable` owned by that concern, and the rules
themselves live beside the consumer (``ad/rules/<family>.py``,
``backends/tvm/lower/<family>.py``).  Imports only point down: a consumer imports this module
and registers into a table; nothing in :mod:`semantics` imports a consumer package.

A table maps a *key* to a rule.  The key is the operator name, optionally qualified
(``register_lowering("add", target="llvm")`` keys on ``("add", "llvm")``).  Operations:

* registration with a decorator factory (:meth:`RuleTable.register`, or the shorthands
  :func:`register_gradient`, :func:`register_lowering`, :func:`register_quant_annotation`);
  registering a key twice is an error (``ValueError``: two rules for one operator is a bug in
  the consumer, never a user error);
* **deliberate absence**: :meth:`RuleTable.declare_none` records that an operator has no rule
  on purpose, with the reason (``argmax`` has no gradient: its derivative is zero almost
  everywhere and its output is an index).  Such an operator is not *missing*; looking it up
  raises the error with the recorded reason;
Tables: ``GRADIENTS`` (reverse-mode rules), ``TANGENTS`` (forward-mode rules), ``LOWERINGS``
(per target), ``QUANT_ANNOTATIONS``.

* lookup (:meth:`RuleTable.lookup`): the rule, or ``RelayTypeError`` naming the table and the
  operator ("no gradient rule for operator foo") — a program that needs a rule the table
  lacks is rejected like any other ill-formed request;
* completeness (:func:`missing`): the registered operators with neither a rule nor a declared
  reason, for tests of the form ``assert missing(GRADIENTS) == []``.

The operator's existence is checked at *lookup and completeness* time, not at registration,
so a consumer module may be imported before or after the operator families.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from semantics.errors import RelayTypeError

R = TypeVar("R")

Key = str | tuple[str, str]


class RuleTable:
    """Rules of one concern (gradients, lowerings, ...), keyed by operator name.

    Args:
        name: the table's name, used in messages ("gradient", "lowering", ...).
        qualifier: the name of the optional second key component ("target" for lowerings),
            or ``None`` when rules are keyed by the operator name alone.
    """

    def __init__(self, name: str, qualifier: str | None = None) -> None:
        self.name = name
        self.qualifier = qualifier
        self._rules: dict[Key, Any] = {}
        self._none: dict[Key, str] = {}

    def __repr__(self) -> str:
        return f"<RuleTable {self.name}: {len(self._rules)} rules>"

    # --- keys -------------------------------------------------------------------------------

    def key(self, op: str, qualifier: str | None = None) -> Key:
        """The table key for ``op`` (and the qualifier, which a qualified table requires)."""
        if self.qualifier is None:
            if qualifier is not None:
                raise ValueError(f"{self.name} rules are keyed by operator only, "
                                 f"got {qualifier!r}")
            return op
        if qualifier is None:
            raise ValueError(f"{self.name} rules need a {self.qualifier}")
        return (op, qualifier)

    @staticmethod
    def _show(key: Key) -> str:
        return key if isinstance(key, str) else f"{key[0]} ({key[1]})"

    # --- registration -----------------------------------------------------------------------

    def add(self, op: str, rule: Any, qualifier: str | None = None) -> None:
        """Register ``rule`` for ``op``.

        Raises:
            ValueError: ``op`` already has a rule, or was declared to have none.
        """
        key = self.key(op, qualifier)
        if key in self._rules:
            raise ValueError(f"{self.name} rule for {self._show(key)} registered twice")
        if key in self._none:
            raise ValueError(f"{self.name} rule for {self._show(key)} registered, but it was "
                             f"declared to have none ({self._none[key]})")
        self._rules[key] = rule

    def register(self, op: str, qualifier: str | None = None) -> Callable[[R], R]:
        """Decorator registering the decorated object as the rule of ``op``; returns it as is."""
        def deco(rule: R) -> R:
            self.add(op, rule, qualifier)
            return rule
        return deco

    def declare_none(self, op: str, reason: str, qualifier: str | None = None) -> None:
        """Record that ``op`` deliberately has no rule, and why (shown by lookup).

        Raises:
            ValueError: an empty reason, or ``op`` already has a rule or a declaration.
        """
        key = self.key(op, qualifier)
        if not reason.strip():
            raise ValueError(f"declaring {self._show(key)} without a {self.name} rule needs "
                             "a reason")
        if key in self._rules or key in self._none:
            raise ValueError(f"{self.name} rule for {self._show(key)} declared twice")
        self._none[key] = reason

    # --- queries ----------------------------------------------------------------------------

    def lookup(self, op: str, qualifier: str | None = None) -> Any:
        """The rule of ``op``.

        Raises:
            RelayTypeError: ``no <table> rule for operator <op>`` (with the declared reason
                when the absence is deliberate; "unknown operator" for an unregistered name).
        """
        from semantics.ops.registry import exists

        key = self.key(op, qualifier)
        if key in self._rules:
            return self._rules[key]
        where = "" if qualifier is None else f" for {self.qualifier} {qualifier}"
        if not exists(op):
            raise RelayTypeError(f"no {self.name} rule for unknown operator {op}")
        reason = self._none.get(key)
        if reason is not None:
            raise RelayTypeError(f"no {self.name} rule for operator {op}{where}: {reason}")
        raise RelayTypeError(f"no {self.name} rule for operator {op}{where}")

    def has(self, op: str, qualifier: str | None = None) -> bool:
        """Whether ``op`` has a rule (a declared absence is not a rule)."""
        return self.key(op, qualifier) in self._rules

    def reason(self, op: str, qualifier: str | None = None) -> str | None:
        """The declared reason why ``op`` has no rule, or None."""
        return self._none.get(self.key(op, qualifier))

    def keys(self) -> list[Key]:
        """Every key with a rule, in registration order."""
        return list(self._rules)

    def unregister(self, op: str, qualifier: str | None = None) -> None:
        """Forget the rule or declaration of ``op`` (for tests that register temporary rules)."""
        key = self.key(op, qualifier)
        self._rules.pop(key, None)
        self._none.pop(key, None)


def missing(table: RuleTable, *, among: Iterable[str] | None = None,
            qualifier: str | None = None) -> list[str]:
    """The operators with neither a rule in ``table`` nor a declared reason, sorted.

    Args:
        table: the rule table.
        among: the operator names to consider (default: every registered operator).
        qualifier: for a qualified table (lowerings), the target to check.
    Returns:
        Sorted operator names; ``[]`` when the table is complete.
    """
    from semantics.ops.registry import list_ops

    names = list_ops() if among is None else sorted(set(among))
    out = []
    for op in names:
        key = table.key(op, qualifier)
        if key not in table._rules and key not in table._none:
            out.append(op)
    return out


GRADIENTS = RuleTable("gradient")
TANGENTS = RuleTable("tangent")
LOWERINGS = RuleTable("lowering", qualifier="target")
QUANT_ANNOTATIONS = RuleTable("quantization annotation")


def register_gradient(op: str) -> Callable[[R], R]:
    """Decorator: the decorated function is the gradient rule of ``op`` (``GRADIENTS``)."""
    return GRADIENTS.register(op)


def register_tangent(op: str) -> Callable[[R], R]:
    """Decorator: the decorated function is the forward-mode (tangent) rule of ``op``."""
    return TANGENTS.register(op)


def register_lowering(op: str, target: str) -> Callable[[R], R]:
    """Decorator: the decorated function lowers ``op`` for ``target`` (``LOWERINGS``)."""
    return LOWERINGS.register(op, target)


def register_quant_annotation(op: str) -> Callable[[R], R]:
    """Decorator: the decorated object is the quantization annotation of ``op``."""
    return QUANT_ANNOTATIONS.register(op)


def declare_no_gradient(op: str, reason: str) -> None:
    """Record that ``op`` has no gradient on purpose (e.g. ``argmax``: piecewise constant)."""
    GRADIENTS.declare_none(op, reason)


def declare_no_tangent(op: str, reason: str) -> None:
    """Record that ``op`` has no tangent rule on purpose (the forward-mode twin of
    :func:`declare_no_gradient`)."""
    TANGENTS.declare_none(op, reason)
