"""Pass tests run for one fixed target: AlterOpLayout's registered pass picks its conv block
from the host CPU (``conv_block_size``), so the goldens pin ``RELAY_TARGET`` to AVX-512
(block 16) for every machine."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import pe  # noqa: F401  (registers the PartialEvaluate pass: goldens, differential tests)


@pytest.fixture(autouse=True, scope="session")
def _avx512_target() -> Iterator[None]:
    old = os.environ.get("RELAY_TARGET")
    os.environ["RELAY_TARGET"] = "avx512"
    yield
    if old is None:
        del os.environ["RELAY_TARGET"]
    else:
        os.environ["RELAY_TARGET"] = old
