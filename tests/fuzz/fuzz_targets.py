"""The kit's differential properties as plain Hypothesis tests, for long fuzzing campaigns.

Each property here is an ordinary ``@given`` test (``tests/fuzz/test_fuzz.py`` collects
them), so the same functions run three ways, unchanged:

* under ``pytest`` as a quick smoke test (``RELAY_FUZZ_EXAMPLES`` programs each, default 3);
* under HypoFuzz (``make fuzz`` on every core: ``tools/hypofuzz_workers.py``, which
  starts HypoFuzz's workers without the hub of ``hypothesis fuzz``), a coverage-guided
  fuzzer that runs them for hours, across processes;
* to replay what the fuzzer found: HypoFuzz saves each failure in the example database as
  a choice sequence; ``tools/hypofuzz_workers.py --replay`` runs them again through
  HypoFuzz's provider (plain ``pytest`` replays the database first too, but its provider
  drew another, passing program from the one failure of the first campaign).

The properties (one test each): every registered pass of ``passes`` (the kit's generated
programs, compared with the oracle by :func:`conformance.harness.check_program`),
``passes.optimize`` at ``-O0`` to ``-O3``, automatic differentiation (forward and reverse
mode agree, and the primal value equals the function's), the partial evaluator, and the
TVM backend (a VM build at ``-O0`` and ``-O3``; programs it declines are rejected, not
failures).

The example database is the one place where processes and machines meet:
``RELAY_FUZZ_DB`` names it — a directory (on a shared file system for several machines:
Hypothesis's ``DirectoryBasedExampleDatabase`` is safe for concurrent writers) or
``redis://host:port/db`` (``RedisExampleDatabase``; needs the ``redis`` package). HypoFuzz
only fuzzes tests whose database is the default one, so ``tests/fuzz/conftest.py`` makes it
the default (:func:`use_shared_database`) when ``RELAY_FUZZ_DB`` is set; unset, every
process on one machine shares Hypothesis's default ``.hypothesis/examples``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, reject, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from conformance.harness import TransformDeclined, check_program
from conformance.strategies.programs import well_typed_modules
from semantics.module import IRModule

__all__ = ["fuzz_database", "fuzz_settings", "pass_target", "targets", "ad_target",
           "DB_ENV", "use_shared_database"]

DB_ENV = "RELAY_FUZZ_DB"


def fuzz_database(spec: str) -> ExampleDatabase:
    """The example database named by ``spec``: a directory or ``redis://host:port/db``."""
    if spec.startswith("redis://"):
        import redis  # type: ignore[import-not-found,import-untyped,unused-ignore]
        from hypothesis.extra.redis import RedisExampleDatabase

        return RedisExampleDatabase(redis.Redis.from_url(spec))
    return DirectoryBasedExampleDatabase(spec)


def use_shared_database() -> None:
    """Make ``$RELAY_FUZZ_DB`` the default example database (a profile derived from the
    current one); nothing when it is unset."""
    spec = os.environ.get(DB_ENV)
    if not spec:
        return
    current = settings._current_profile  # noqa: SLF001 - Hypothesis keeps no public getter
    settings.register_profile("relay-fuzz", parent=settings.get_profile(current or "default"),
                              database=fuzz_database(spec))
    settings.load_profile("relay-fuzz")


def fuzz_settings() -> settings:
    """Settings of every fuzz target: no deadline; under pytest ``RELAY_FUZZ_EXAMPLES``
    examples (HypoFuzz ignores the count and runs on); the default database."""
    return settings(
        max_examples=int(os.environ.get("RELAY_FUZZ_EXAMPLES", "3")), deadline=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much, HealthCheck.large_base_example,
                               HealthCheck.differing_executors])


def _named(body: Callable[..., None], test_name: str) -> Callable[..., None]:
    """Give ``body`` its test's name and its own example-database key (the bodies share
    their source, from which Hypothesis derives the key)."""
    body.__name__ = body.__qualname__ = test_name
    body._hypothesis_internal_add_digest = test_name.encode()  # type: ignore[attr-defined]
    return body


def _differential(transform: Callable[[IRModule], Any], name: str, *,
                  allow_errors: bool = False, signed_zeros: bool = True) -> Callable[..., None]:
    def body(program: Any) -> None:
        try:
            check_program(transform, program[0], program[1], name=name,
                          allow_errors=allow_errors, signed_zeros=signed_zeros,
                          alternates=getattr(program, "alternates", ()))
        except TransformDeclined:
            reject()

    return body


def pass_target(pass_name: str) -> Callable[..., None]:
    """The differential property of one registered pass (by our function name)."""
    import passes

    p = next(p for p in passes.list_passes() if p.func_name == pass_name)
    body = _named(_differential(p, p.name), f"test_pass_{pass_name}")
    return fuzz_settings()(given(program=well_typed_modules())(body))


def optimize_target(level: int) -> Callable[..., None]:
    import passes

    body = _named(_differential(lambda m: passes.optimize(m, level), f"-O{level}"),
                  f"test_optimize_O{level}")
    return fuzz_settings()(given(program=well_typed_modules())(body))


def tvm_target(opt_level: int) -> Callable[..., None]:
    """The TVM backend (a VM build) against the oracle; declined programs are rejected."""

    def build(mod: IRModule) -> Any:
        from backends.tvm import build as tvm_build

        return tvm_build(mod, opt_level=opt_level, executor="vm")

    body = _named(_differential(build, f"tvm-vm-O{opt_level}", allow_errors=True,
                                signed_zeros=False),
                  f"test_tvm_vm_O{opt_level}")
    # No finite float extremes: the backend's reductions reassociate (docs/conformance.md).
    return fuzz_settings()(given(program=well_typed_modules(finite_extremes=False))(body))


def ad_target() -> Callable[..., None]:
    """Forward and reverse mode agree on differentiable programs, and ``grad(f)``'s primal
    value is ``f``'s value."""
    import numpy as np

    import ad
    from conformance.strategies import differentiable_programs
    from interpreter import evaluate

    def body(p: Any) -> None:
        value = evaluate(p.function, *p.args)
        rev = evaluate(ad.grad(p.function), *p.args)
        fwd = evaluate(ad.grad(p.function, mode="forward"), *p.args)
        np.testing.assert_allclose(rev[0], value, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(rev[0], fwd[0], rtol=1e-5, atol=1e-6)
        for a, b in zip(rev[1], fwd[1], strict=True):
            np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-4)

    _named(body, "test_ad_forward_reverse_agree")
    return fuzz_settings()(given(p=differentiable_programs())(body))


def targets() -> dict[str, Callable[..., None]]:
    """Every fuzz target by test name (built on call: their settings take the default
    example database current at that moment)."""
    import passes
    import pe  # noqa: F401 - registers PartialEvaluate

    out: dict[str, Callable[..., None]] = {}
    for p in passes.list_passes():
        t = pass_target(p.func_name)
        out[t.__name__] = t
    for level in range(4):
        t = optimize_target(level)
        out[t.__name__] = t
    t = ad_target()
    out[t.__name__] = t
    for level in (0, 3):
        t = tvm_target(level)
        out[t.__name__] = t
    return out

