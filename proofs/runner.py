"""Running the proof obligations: load every obligation module, select by name, discharge.

Apart from :mod:`proofs.core` (the registry, verdicts and solver helpers) so that the
obligation modules, which register with the core, are imported by the runner only: no
import cycle between the core and the modules.
"""

from __future__ import annotations

import time

from proofs.core import (
    UNKNOWN,
    Obligation,
    ObligationDef,
    Verdict,
    registered_now,
)
from semantics.errors import RelayArgumentTypeError, RelayArgumentValueError

__all__ = ["registered", "select", "discharge", "run", "UnknownObligation"]


def registered() -> dict[str, ObligationDef]:
    """All registered obligations by name (loads the obligation modules first)."""
    _load()
    return registered_now()


def _load() -> None:
    from proofs import (  # noqa: F401  (they register)
        quantize,
        quantize_realize,
        relation_obligations,
        rewrites,
        soundness,
        soundness_binders,
    )


class UnknownObligation(RelayArgumentValueError, KeyError):
    """``only`` names no obligation (also a ``KeyError``, as a lookup by name)."""


def select(only: str | None) -> list[ObligationDef]:
    """The obligation named ``only``, else those under the class ``only.``, else those whose
    name starts with ``only`` (all when None).

    Raises:
        UnknownObligation: nothing matches ``only`` (a ``RelayArgumentValueError`` and a
            ``KeyError``). RelayArgumentTypeError: ``only`` is not a string.
    """
    defs = registered()
    if only is None:
        return list(defs.values())
    if not isinstance(only, str):
        raise RelayArgumentTypeError(f"only must be an obligation name or prefix (a string), "
                                     f"not {type(only).__name__} {only!r}")
    if only in defs:                       # an exact name is that one obligation
        return [defs[only]]
    picked = [d for n, d in defs.items() if n.startswith(only + ".")]
    if not picked:                         # else a plain prefix ("relation.Conv")
        picked = [d for n, d in defs.items() if n.startswith(only)]
    if not picked:
        raise UnknownObligation(f"no obligation named {only!r} (try a class: quantize, "
                                f"relation, rewrite, soundness)")
    return picked


def discharge(d: ObligationDef) -> Obligation:
    """Run one obligation's check, timing it; an exception in the check is ``unknown``."""
    start = time.perf_counter()
    try:
        v = d.check()
    except Exception as exc:   # a broken check must surface as "not proved", not crash
        v = Verdict(UNKNOWN, "", "error", f"check raised {type(exc).__name__}: {exc}")
    return Obligation(d.name, v.status, v.counterexample, v.method,
                      time.perf_counter() - start, d.statement, v.detail)


def run(only: str | None = None) -> list[Obligation]:
    """Discharge every registered obligation (or those selected by ``only``).

    Args:
        only: an obligation name, or a prefix such as ``relation`` or ``rewrite.fold_scale``.
    Returns:
        One :class:`Obligation` per selected obligation, in registration order.
    Raises:
        UnknownObligation: ``only`` matches nothing. RelayArgumentTypeError: not a string.
    """
    return [discharge(d) for d in select(only)]
