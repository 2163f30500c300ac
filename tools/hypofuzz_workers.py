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
    python tools/hypofuzz_workers.py -n 1 --slice 170 -- tests/fuzz  # time-sliced
    python tools/hypofuzz_workers.py --summary -- tests/fuzz   # what the database holds
    python tools/hypofuzz_workers.py --replay -- tests/fuzz    # run saved failures again

``--slice S`` time-slices the tests: each worker fuzzes one test for ``S`` seconds, then
the next. A HypoFuzz worker runs 100 inputs of one test before it picks another; a TVM
build under HypoFuzz's coverage tracer (``sys.settrace`` before Python 3.12) can take a
minute or more, so without slicing one test would hold a worker for hours.

``--summary`` prints, per test, what HypoFuzz's latest report in the database says
(inputs run by outcome, behaviours and fingerprints seen, fuzzing time) and the failures
saved (replay them with ``pytest tests/fuzz -k <test>`` and the same ``RELAY_FUZZ_DB``).

It uses HypoFuzz's worker class directly (not part of its documented interface; written
against hypofuzz 25.11.1).
"""

from __future__ import annotations

import argparse
import itertools
import signal
import sys
import time
from collections.abc import Sequence
from multiprocessing import Process


def _stop(signum: int, frame: object) -> None:
    # KeyboardInterrupt, not SystemExit: Hypothesis takes a SystemExit raised inside a
    # test for the test's failure, and re-raises a KeyboardInterrupt. Once: `timeout`
    # signals the whole process group, and the parent then stops its workers again.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def _run_worker(index: int, count: int, pytest_args: Sequence[str],
                nodeids: Sequence[str] | None = None) -> None:
    """One HypoFuzz worker: on ``nodeids``, else on its share (``index`` of ``count``) of
    the collected tests. On SIGTERM it saves its current test's report and stops."""
    import hypofuzz.entrypoint  # noqa: F401 - registers the "hypofuzz" provider
    from hypofuzz import detection
    from hypofuzz.hypofuzz import FuzzWorker

    detection._in_hypofuzz_run = True  # noqa: SLF001 - what `hypothesis fuzz` sets
    if nodeids is None:
        collected = _collect(pytest_args)
        nodeids = collected[index::count] or collected  # more workers than tests: share
        print(f"worker {index}: fuzzing {len(nodeids)} of {len(collected)} tests",
              flush=True)
    state = {
        "hub_state": {"nodeids": list(nodeids)},
        "worker_state": {"nodeids": {}, "current_lifetime": 0.0,
                         "expected_lifetime": 0.0, "valid_nodeids": []},
    }
    worker = FuzzWorker(pytest_args=list(pytest_args), shared_state=state)
    signal.signal(signal.SIGTERM, _stop)
    try:
        worker.start()
    except KeyboardInterrupt:
        pass                            # stopped at the end of its slice
    finally:
        current = worker._current_target  # noqa: SLF001
        if current is not None:
            current.save_report()       # the inputs run since its last report
            # HypoFuzz writes through a background thread: let it finish.
            background = getattr(getattr(current.provider, "db", None), "_db", None)
            join = getattr(background, "_join", None)
            if join is not None:
                join(10.0)


def _collect(pytest_args: Sequence[str]) -> list[str]:
    from hypofuzz.collection import collect_tests

    return sorted(t.nodeid for t in collect_tests(list(pytest_args)).fuzz_targets)


def rotate(count: int, pytest_args: Sequence[str], slice_seconds: float) -> None:
    """Time-slice the tests: ``count`` workers at a time, each on one test for
    ``slice_seconds``, then the next ``count`` tests, round and round until stopped.
    (A worker keeps one test for 100 inputs; with inputs of seconds to minutes, one slow
    test would otherwise hold a worker for hours.) Each test's corpus is in the database,
    so every slice resumes where the last one on that test stopped."""
    nodeids = _collect(pytest_args)
    print(f"rotating {len(nodeids)} tests, {count} at a time, {slice_seconds:.0f} s each",
          flush=True)
    signal.signal(signal.SIGTERM, _stop)      # stopped: stop the workers too
    procs: list[Process] = []
    try:
        for turn in itertools.count():
            chosen = [nodeids[(turn * count + i) % len(nodeids)] for i in range(count)]
            procs = [Process(target=_run_worker, args=(i, count, pytest_args, [nodeid]))
                     for i, nodeid in enumerate(chosen)]
            print(f"{time.strftime('%H:%M:%S')} fuzzing {', '.join(chosen)}", flush=True)
            for p in procs:
                p.start()
            deadline = time.monotonic() + slice_seconds
            for p in procs:
                p.join(max(0.0, deadline - time.monotonic()))
            _stop_all(procs)
    finally:
        _stop_all(procs)


def _stop_all(procs: list[Process]) -> None:
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(30)
        if p.is_alive():        # stuck in native code: no report from this slice
            p.kill()
            p.join()


def summary(pytest_args: Sequence[str]) -> None:
    """Per test: HypoFuzz's latest report and its saved failures, from the database."""
    from hypofuzz.collection import collect_tests
    from hypofuzz.database import HypofuzzDatabase
    from hypofuzz.database.models import FailureState
    from hypothesis import settings

    targets = sorted(collect_tests(list(pytest_args)).fuzz_targets, key=lambda t: t.nodeid)
    database = settings().database
    if database is None:
        raise SystemExit("no example database (settings().database is None)")
    db = HypofuzzDatabase(database)
    print(f"{'test':<44} {'inputs':>7} {'valid':>6} {'invalid':>7} {'behav':>6} "
          f"{'fprint':>6} {'seconds':>8} {'failures':>8}")
    totals = [0, 0]
    for t in targets:
        reports = db.reports.fetch(t.database_key)
        failures = sum(len(list(db.failures(state=s).fetch(t.database_key)))
                       for s in (FailureState.SHRUNK, FailureState.UNSHRUNK))
        fatal = db.fatal_failures.fetch(t.database_key)
        name = t.nodeid.split("::")[-1]
        if not reports:
            print(f"{name:<44} {'not fuzzed':>7}" + ("  FATAL" if fatal else ""))
            continue
        # Reports accumulate per worker; the latest of each worker, summed.
        latest: dict[str, object] = {}
        for r in sorted(reports, key=lambda r: r.elapsed_time):
            latest[r.worker_uuid] = r
        runs = list(latest.values())
        counts = [sum(r.status_counts[s] for r in runs)  # type: ignore[attr-defined]
                  for s in sorted(runs[0].status_counts)]  # type: ignore[attr-defined]
        inputs = sum(counts)
        invalid = counts[0] + counts[1]          # OVERRUN, INVALID
        totals[0] += inputs
        totals[1] += failures
        print(f"{name:<44} {inputs:>7} {inputs - invalid:>6} {invalid:>7} "
              f"{max(r.behaviors for r in runs):>6} "  # type: ignore[attr-defined]
              f"{max(r.fingerprints for r in runs):>6} "  # type: ignore[attr-defined]
              f"{sum(r.elapsed_time for r in runs):>8.0f} "  # type: ignore[attr-defined]
              f"{failures:>8}" + ("  FATAL: " + fatal.traceback.splitlines()[-1]
                                  if fatal else ""))
    print(f"total: {totals[0]} inputs, {totals[1]} failures saved")


def replay(pytest_args: Sequence[str]) -> int:
    """Run every failure saved in the database again, through HypoFuzz's own provider (a
    choice sequence it saved is read differently by Hypothesis's default provider, so plain
    ``pytest`` may draw another, passing program); print each one's traceback and program.
    Returns 1 when one still fails, else 0."""
    import math

    import hypofuzz.entrypoint  # noqa: F401 - registers the "hypofuzz" provider
    from hypofuzz import detection
    from hypofuzz.collection import collect_tests
    from hypofuzz.database import HypofuzzDatabase
    from hypofuzz.database.models import FailureState
    from hypothesis import settings
    from hypothesis.internal.conjecture.data import Status

    detection._in_hypofuzz_run = True  # noqa: SLF001 - what `hypothesis fuzz` sets
    targets = sorted(collect_tests(list(pytest_args)).fuzz_targets, key=lambda t: t.nodeid)
    database = settings().database       # after collection: conftest installs RELAY_FUZZ_DB
    if database is None:
        raise SystemExit("no example database (settings().database is None)")
    db = HypofuzzDatabase(database)
    still, seen = 0, 0
    for t in targets:
        saved = [(s, c) for s in (FailureState.SHRUNK, FailureState.UNSHRUNK)
                 for c in db.failures(state=s).fetch(t.database_key)]
        if not saved:
            continue
        t._enter_fixtures()  # noqa: SLF001 - HypoFuzz's worker does the same
        try:
            for state, choices in saved:
                seen += 1
                observations: list[object] = []
                data = t.new_conjecture_data(choices=choices)
                t.stop_shrinking_at = math.inf
                t._execute_once(data, observability_callback=observations.append)  # noqa: SLF001
                name = f"{t.nodeid} ({state.name.lower()}, {len(choices)} choices)"
                if data.status is not Status.INTERESTING:
                    print(f"{name}: passes now (fixed; or the generator changed since it was "
                          "saved, so the same choices draw another program)")
                    continue
                still += 1
                print(f"{name}: FAILS")
                for o in observations:
                    trace = getattr(getattr(o, "metadata", None), "traceback", None)
                    if trace:
                        print(trace)
        finally:
            t._exit_fixtures()  # noqa: SLF001
    print(f"{seen} saved failures replayed, {still} still failing")
    return 1 if still else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--numprocesses", type=int, default=1)
    parser.add_argument("--slice", type=float, default=None, metavar="SECONDS",
                        help="time-slice the tests: each worker fuzzes one test for "
                             "SECONDS, then the next (for tests whose inputs are slow)")
    parser.add_argument("--summary", action="store_true",
                        help="print what the example database holds, and exit")
    parser.add_argument("--replay", action="store_true",
                        help="run every saved failure again (exit 1 if one still fails)")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args(argv)
    if args.replay:
        return replay(args.pytest_args)
    if args.summary:
        summary(args.pytest_args)
        return 0
    count = max(1, args.numprocesses)
    if args.slice:
        try:
            rotate(count, args.pytest_args, args.slice)
        except KeyboardInterrupt:
            print(f"{time.strftime('%H:%M:%S')} stopped", flush=True)
        return 0
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
