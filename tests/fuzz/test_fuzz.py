"""The fuzz targets of ``tests/fuzz/fuzz_targets.py``, collected by pytest and HypoFuzz.

``pytest tests/fuzz`` runs each differential property on ``RELAY_FUZZ_EXAMPLES`` programs
(default 3: a smoke test) and first replays every failing example saved in the shared
database (``RELAY_FUZZ_DB``); HypoFuzz (``make fuzz``, through
``tools/hypofuzz_workers.py``) fuzzes them without end. The TVM targets are left out
when TVM is not installed.
"""

from __future__ import annotations

import importlib.util

from fuzz_targets import targets

_HAVE_TVM = importlib.util.find_spec("tvm") is not None

for _name, _test in targets().items():
    if _name.startswith("test_tvm") and not _HAVE_TVM:
        continue
    globals()[_name] = _test
