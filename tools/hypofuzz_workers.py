"""Run HypoFuzz's own fuzz workers on slow tests, without its hub.

``hypothesis fuzz`` (HypoFuzz 25.11) starts a hub and N workers; the hub sleeps 60 s and
exits if no worker has yet published the tests it fuzzes. A worker publishes only after its
first batch (collection, then 100 inputs of one test), so when one input takes seconds — a
generated Relay program checked against the oracle, a TVM build — the hub gives up after a
minute and the campaign stops after one test (docs/conformance.md, "Long campaigns").

This script starts the same workers (``hypofuzz.hypofuzz.FuzzWorker``: its corpus, its
coverage-guided mutator, its reports in the example database) but assigns the tests itself:
worker ``i`` of ``N`` fuzzes the collected tests ``i, i+N, i+2N, ...`` until stopped. The
example database (``RELAY_FUZZ_DB``) is where workers and machines meet, exactly as under
``hypothesis fuzz``; ``hypothesis fuzz --dashboard-only -- tests/fuzz`` reads it.

    python tools/hypofuzz_workers.py -n 2 -- tests/fuzz [pytest args, e.g. -k tvm]

It uses HypoFuzz's worker class directly (not part of its documented interface; written
against hypofuzz 25.11.1).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from multiprocessing import Process


def _run_worker(index: int, count: int, pytest_args: Sequence[str]) -> None:
    import hypofuzz.entrypoint  # noqa: F401 - registers the "hypofuzz" provider
    from hypofuzz import detection
    from hypofuzz.collection import collect_tests
    from hypofuzz.hypofuzz import FuzzWorker

    detection._in_hypofuzz_run = True  # noqa: SLF001 - what `hypothesis fuzz` sets
    nodeids = sorted(t.nodeid for t in collect_tests(list(pytest_args)).fuzz_targets)
    mine = nodeids[index::count] or nodeids  # more workers than tests: share them all
    print(f"worker {index}: fuzzing {len(mine)} of {len(nodeids)} tests", flush=True)
    state = {
        "hub_state": {"nodeids": mine},
        "worker_state": {"nodeids": {}, "current_lifetime": 0.0,
                         "expected_lifetime": 0.0, "valid_nodeids": []},
    }
    FuzzWorker(pytest_args=list(pytest_args), shared_state=state).start()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--numprocesses", type=int, default=1)
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args(argv)
    count = max(1, args.numprocesses)
    if count == 1:
        _run_worker(0, 1, args.pytest_args)
        return 0
    procs = [Process(target=_run_worker, args=(i, count, args.pytest_args))
             for i in range(count)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return max((p.exitcode or 0) for p in procs)


if __name__ == "__main__":
    sys.exit(main())
