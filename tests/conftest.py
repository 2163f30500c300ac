"""Hypothesis profiles: ``ci`` (derandomized, bounded) and ``deep`` (long local runs).

Select with ``HYPOTHESIS_PROFILE=ci|deep``; the default is ``dev``. ``--update-golden``
rewrites the golden files' expectations (``tests/golden.py``).

Under pytest-xdist every worker process runs TVM kernels on one thread: the backend would
otherwise give each worker a thread per core (``backends.tvm.target.use_every_core``), and
TVM's spinning workers of two processes on two cores slow each other down.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, settings

if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("TVM_NUM_THREADS", "1")

settings.register_profile(
    "ci", max_examples=50, derandomize=True, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev", max_examples=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "deep", max_examples=2000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(   # find failures fast: no shrinking (debugging a red run)
    "triage", max_examples=100, derandomize=True, deadline=None, print_blob=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files' expectations with what the run gives "
                          "(tests/golden.py)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` run only under ``make test-slow`` (``RELAY_SLOW=1``)."""
    if os.environ.get("RELAY_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow: run with `make test-slow` (RELAY_SLOW=1)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    import golden  # tests/golden.py: this folder is on sys.path (rootdir conftest)

    golden.set_update(bool(config.getoption("--update-golden")))


@pytest.fixture
def no_shrinking() -> Iterator[None]:
    """For a test that expects a property to fail and checks *that* it is reported, not how
    small the counterexample is: Hypothesis stops at the first failing example instead of
    shrinking it (minutes for generated programs; shrinking has tests of its own:
    ``tests/conformance/test_harness.py``, ``test_mutations.py``)."""
    previous = settings._current_profile  # noqa: SLF001 - Hypothesis keeps no public getter
    settings.register_profile("no-shrink", parent=settings.get_profile(previous),
                              phases=[Phase.explicit, Phase.reuse, Phase.generate])
    settings.load_profile("no-shrink")
    try:
        yield
    finally:
        settings.load_profile(previous)
