"""Many kernels at once: :func:`compile_many`, what ``build`` uses.

Distinct cache keys only, compiled in this process and in worker processes (:class:`_Worker`,
each a ``python`` process reading pickled requests on its standard input), which write cache
entries that this process loads (:mod:`backends.tvm.kernel.cache`).
"""

from __future__ import annotations

import atexit
import copyreg
import io
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from backends.tvm.kernel import entries
from backends.tvm.kernel.cache import (
    KernelCache,
    _types_signature,
    code_digest,
    default_cache,
)
from backends.tvm.kernel.compile import (
    _build_library,
    _compile_failed,
    _link,
    _meta,
    compile_function,
)
from backends.tvm.kernel.runtime import NoLowering
from backends.tvm.target import (
    Target,
    TargetSpec,
    normalize_target,
)
from backends.tvm.te_build import LoweringFailed
from semantics.expr import Attrs, Call, Constant, Function
from semantics.types import Type
from semantics.visitor import post_order

__all__ = ["compile_many", "prestart_workers", "shutdown_workers"]


def compile_many(requests: Sequence[tuple[Function, Sequence[Type]]], *,
                 target: TargetSpec = None, cache: KernelCache | None = None,
                 jobs: int | None = None,
                 progress: Callable[[int, int], None] | None = None) -> int:
    """Compile every kernel of ``requests`` that the cache does not hold, in parallel.

    The kernels go into ``cache`` (memory, and its directory): a following
    :func:`compile_function` for any of the requests finds them there. Requests with
    equal keys (the same kernel twice in a model) are compiled once; kernels already on
    disk are not loaded here (the executors load them when they ask for them).

    Parallelism: ``jobs`` compilations at a time (default: ``$RELAY_TVM_JOBS``, else by the
    number of kernels, the CPUs and the load, see :func:`_default_jobs`): this process
    compiles, and
    ``jobs - 1`` worker processes (:class:`_Worker`: started once, kept for later builds)
    compile the others, each writing its kernel's library into the cache directory (a
    temporary one for a memory-only cache) where this process loads it from. The workers
    compile for the :class:`~backends.tvm.target.Target` computed here, with the same code,
    so their kernels are the
    ones this process would build (tested byte for byte). A request the workers cannot take
    (a function too deep to pickle, a worker that died) is compiled here.

    Args:
        requests: ``(primitive function, argument types)`` pairs, as for
            :func:`compile_function`.
        target: as for :func:`compile_function`.
        cache: the kernel cache (None: :func:`default_cache`).
        jobs: the number of simultaneous compilations (1: all in this process).
        progress: called as ``progress(done, total)`` once before the first compilation
            (``done`` 0) and after each one, failed or not (``total``: the distinct
            kernels the cache did not hold); from this process's threads, one at a time.
    Returns:
        The number of kernels compiled (not counting those the cache held, nor failures).
    """
    spec = normalize_target(target)
    store = default_cache() if cache is None else cache
    todo: dict[str, tuple[Function, Sequence[Type]]] = {}
    for func, types in requests:
        if store.by_identity(func, types, spec).kernel is not None:
            continue
        try:
            key = store.key_of(func, types, spec)
        except LoweringFailed:
            continue
        if key in todo or store.holds(key):
            continue
        todo[key] = (func, types)
    if not todo:
        return 0
    jobs = _default_jobs(len(todo)) if jobs is None else max(1, int(jobs))
    groups = _twins_together(list(todo.items()))
    tick = _Progress(progress, len(todo))
    if jobs <= 1 or len(groups) < 2:
        compiled = 0
        for group in groups:
            for _, (func, types) in group:
                compiled += _compile_here(func, types, spec, store)
                tick()
        return compiled
    return _compile_parallel(groups, spec, store, jobs, tick)


Work = list[tuple[str, tuple[Function, Sequence[Type]]]]
"""Requests by key: ``[(key, (function, argument types)), ...]``."""


def _twins_together(work: Work) -> list[Work]:
    """``work`` as groups of requests that may be twins (the same operators, attributes,
    argument types and constant shapes: the same layer with other weights), the groups
    costliest first (:func:`_cost`).

    A twin compiles in a few milliseconds in the process that compiled its first one
    (``backends.tvm.kernel.compile._Twins``): :func:`_compile_parallel` gives a group to one
    process. Costliest first: the processes finish together (the last groups are small).
    """
    groups: dict[Any, Work] = {}
    for item in work:
        groups.setdefault(_twin_signature(*item[1]), []).append(item)
    return sorted(groups.values(), key=lambda g: -_cost(g[0][1][0]))


def _cost(func: Function) -> int:
    """A rough rank of a kernel's compile time: its operator calls, plus two for each
    constant of 4 or more dimensions (a convolution's weight: its kernels are the largest)."""
    cost = 0
    for node in post_order(func.body, descend=lambda n: not isinstance(n, Function)):
        if isinstance(node, Call):
            cost += 1
        elif isinstance(node, Constant) and node.data.ndim >= 4:
            cost += 2
    return cost


def _twin_signature(func: Function, types: Sequence[Type]) -> Any:
    """What two twins share (see :func:`_twins_together`): each node's kind, operator and
    attributes, constants by dtype and shape only, in post-order; and the argument types."""
    parts: list[Any] = []
    for node in post_order(func.body, descend=lambda n: not isinstance(n, Function)):
        if isinstance(node, Constant):
            parts.append(("const", node.data.dtype.str, node.data.shape))
        elif isinstance(node, Call):
            parts.append(("call", getattr(node.op, "name", None), repr(node.attrs)))
        else:
            parts.append(type(node).__name__)
    return (tuple(parts), _types_signature(types))


class _Progress:
    """Counts finished compilations for a ``progress(done, total)`` callback (thread-safe)."""

    def __init__(self, callback: Callable[[int, int], None] | None, total: int):
        self.callback = callback
        self.total = total
        self.done = 0
        self.lock = threading.Lock()
        if callback is not None:
            callback(0, total)

    def __call__(self) -> None:
        if self.callback is None:
            return
        with self.lock:
            self.done += 1
            self.callback(self.done, self.total)


def prestart_workers(cache: KernelCache | None = None, jobs: int | None = None) -> int:
    """Start the compile workers now when a build is likely to compile (the number started).

    A worker started as a new interpreter takes seconds to import TVM; ``build`` calls this
    before its pass pipeline runs, so that the import overlaps the passes. It starts workers
    only for an explicit ``jobs`` (or ``$RELAY_TVM_JOBS``) above 1, or by default where
    workers are not forked (a forked worker is ready at once: :func:`compile_many` forks it
    when it has enough kernels, :func:`_default_jobs`), and only when the cache's directory
    holds no kernel at all (a first build: everything will compile); otherwise
    :func:`compile_many` starts them when it finds kernels to compile.
    """
    store = default_cache() if cache is None else cache
    if jobs is None and _env_jobs() is None and _forking():
        return 0
    jobs = _default_jobs() if jobs is None else max(1, int(jobs))
    if jobs <= 1 or not store.disk:
        return 0
    try:
        with os.scandir(store.directory) as entries:
            if any(e.name.endswith(".json") for e in entries):
                return 0
    except OSError:
        pass                              # no directory yet: a first build
    return len(_workers(jobs - 1))


PARALLEL_FROM = 8
"""The fewest kernels a build compiles in parallel by default (:func:`_default_jobs`)."""


MAX_DEFAULT_JOBS = 4
"""The most simultaneous compilations by default (this process and three workers)."""


def _env_jobs() -> int | None:
    env = os.environ.get("RELAY_TVM_JOBS", "").strip()
    return int(env) if env.isdigit() and int(env) > 0 else None


def _default_jobs(kernels: int | None = None) -> int:
    """``$RELAY_TVM_JOBS``; else, for :data:`PARALLEL_FROM` kernels or more (or an unknown
    number), one compilation per CPU this process may use that the load average leaves
    free — ``1 + round(cpus - load)``, at least 1 and at most :data:`MAX_DEFAULT_JOBS` and
    ``cpus`` —; else 1 (every kernel compiled in this process).

    Measured on a shared 2-CPU machine (issue 35, ResNet-18's 24 kernels at -O3, new
    processes): a forked worker halves the compile phase when the second CPU is free
    (kernels 6-9 s -> 3.5 s); when another process keeps it busy (load 2 and more), a worker
    only competes for the same CPU, so the load average decides. A model of a few kernels
    compiles in this process: a worker would not pay for its start.
    """
    env = _env_jobs()
    if env is not None:
        return env
    if kernels is not None and kernels < PARALLEL_FROM:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:
        return 1
    return max(1, min(cpus, MAX_DEFAULT_JOBS, 1 + int(cpus - load + 0.5)))


def _forking() -> bool:
    return FORK and os.environ.get("RELAY_TVM_FORK", "1").strip() != "0"


def _compile_here(func: Function, types: Sequence[Type], spec: Target,
                  store: KernelCache) -> bool:
    try:
        compile_function(func, types, target=spec, cache=store)
    except NoLowering:
        return False
    return True


def _compile_parallel(groups: list[Work], spec: Target, store: KernelCache, jobs: int,
                      tick: Callable[[], None]) -> int:
    """Share ``groups`` (costliest first) between this process and ``jobs - 1`` worker
    processes, each fed by a thread of this process: each takes the next group from the
    front of the queue and compiles its requests in turn."""
    import collections

    directory, scratch = store.shared_directory()
    queue = collections.deque(groups)
    here: list[Work] = []                   # groups a worker cannot take (not picklable)
    lock = threading.Lock()
    results: dict[str, tuple[Any, ...]] = {}

    def feed(worker: _Worker) -> None:
        while True:
            with lock:
                if not queue:
                    return
                group = queue.popleft()
            for i, (key, item) in enumerate(group):
                payload = _payload(item[0], item[1], spec, key, directory)
                outcome = worker.run(payload) if payload is not None else None
                if outcome is None:     # not picklable, or the worker died: done here
                    with lock:
                        (queue if payload is not None else here).append(group[i:])
                    if payload is not None:
                        return
                    break
                with lock:
                    results[key] = outcome
                tick()

    feeders = [threading.Thread(target=feed, args=(w,), daemon=True,
                                name="relay-kernel-feeder") for w in _workers(jobs - 1)]
    for t in feeders:
        t.start()
    compiled = 0
    try:
        while True:
            with lock:
                group = queue.popleft() if queue else None
            if group is None:
                break
            for _, (func, types) in group:
                compiled += _compile_here(func, types, spec, store)
                tick()
        for t in feeders:
            t.join()
        for group in [*queue, *here]:       # handed back: a worker died, or no pickle
            for _, (func, types) in group:
                compiled += _compile_here(func, types, spec, store)
                tick()
        queue.clear()
        for key, outcome in results.items():
            if outcome[0] == "ok":
                compiled += store.adopt(key, directory) is not None
            elif outcome[0] == "failed":
                store.remember_failure(key, NoLowering(outcome[1], outcome[2]))
    finally:
        if scratch is not None:
            for t in feeders:
                t.join()
            shutil.rmtree(scratch, ignore_errors=True)
    return compiled


class _FunctionPickler(pickle.Pickler):
    """Pickles Relay functions (``Attrs`` by its items: its ``__getattr__`` defeats pickle)."""

    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[Attrs] = lambda a: (Attrs, (a._items,))


def _payload(func: Function, types: Sequence[Type], spec: Target, key: str,
             directory: Path) -> bytes | None:
    """The pickled request for a worker, or None when the function is too deep to pickle."""
    buf = io.BytesIO()
    try:
        _FunctionPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(
            (func, list(types), spec, key, str(directory), code_digest()))
    except (RecursionError, pickle.PicklingError, TypeError, AttributeError):
        return None
    return buf.getvalue()


def _worker_compile(payload: bytes) -> tuple[Any, ...]:
    """In a worker: compile one request into its directory as a cache entry.

    Returns ``("ok",)``, or ``("failed", op, reason)`` for :class:`NoLowering`.
    """
    func, types, spec, key, directory, digest = pickle.loads(payload)
    if digest != code_digest():
        # The backend's sources changed since the requesting process read them: this
        # worker would build another kernel than the key names. The requester compiles it.
        return ("error", "the backend's sources differ from the requesting process's")
    workdir = Path(tempfile.mkdtemp(dir=directory))
    try:
        lib, lowered, name, needs_alignment, report = _build_library(func, types, spec, key,
                                                                     None, reuse=True)
        so = workdir / "kernel.so"
        try:
            _link(lib, so)
        except Exception as err:  # noqa: BLE001 - TVM's errors have no common public base
            raise _compile_failed(lowered.ops, err) from err
        entries.write_entry(Path(directory), key, so,
                                 _meta(lowered, name, needs_alignment, report))
    except NoLowering as err:
        return ("failed", err.op, err.reason)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return ("ok",)


_HEADER = 8


_REFUSED_IMPORTS = ("torch", "ml_dtypes")
"""Modules a compile worker refuses to import (:func:`_worker_main`): they cost 2.8 of its
4 s of start-up, and compiling needs neither."""


def _read_exactly(stream: Any, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = stream.read(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _worker_main() -> None:
    """The loop of a compile worker process started as a new interpreter (see :class:`_Worker`).

    Reads length-prefixed pickled requests on stdin and answers each with a pickled
    outcome on the original stdout; anything else written to stdout (by TVM, say) goes to
    stderr. ``tvm_ffi`` imports torch when it can (about 1.5 s) and ``ml_dtypes`` for
    numpy's bfloat16 and float8 dtypes (about 1.3 s); a worker converts neither torch
    tensors nor arrays of those dtypes (no kernel of ours has them; a request that needed
    them would fail to unpickle and be compiled by the requesting process), so both imports
    are refused here. Ends at the end of its input.
    """
    for refused in _REFUSED_IMPORTS:
        sys.modules.setdefault(refused, None)  # type: ignore[arg-type]
    inp = os.fdopen(os.dup(0), "rb")
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    import tvm  # noqa: F401 - imported before the first request arrives

    _serve(inp, out)


def _serve(inp: Any, out: Any) -> None:
    """Answer the requests read from ``inp`` on ``out`` until ``inp`` ends."""
    while True:
        head = _read_exactly(inp, _HEADER)
        if head is None:
            return
        body = _read_exactly(inp, int.from_bytes(head, "little"))
        if body is None:
            return
        try:
            outcome = _worker_compile(body)
        except Exception as err:  # noqa: BLE001 - report, and stay alive for the next one
            outcome = ("error", f"{type(err).__name__}: {err}")
        data = pickle.dumps(outcome)
        out.write(len(data).to_bytes(_HEADER, "little") + data)
        out.flush()


FORK = sys.platform.startswith("linux") and hasattr(os, "fork")
"""Whether compile workers are forked from this process (Linux) rather than started as new
interpreters. A forked worker is ready at once and shares this process's imported modules
(a new interpreter spends ~2.3 s of CPU importing TVM and ``semantics``, on the cores the
build wants; issue 35). It only lowers, schedules and compiles (TVM and LLVM are
initialised the same way in any process; it never runs a kernel, so TVM's thread pool is
never needed), and it ends with ``os._exit``. ``$RELAY_TVM_FORK=0`` starts new
interpreters instead."""


class _Forked:
    """A forked worker process, with the part of ``subprocess.Popen``'s interface
    :class:`_Worker` uses (``stdin``, ``stdout``, ``poll``, ``wait``, ``kill``)."""

    def __init__(self, others: list[_Worker]) -> None:
        req_r, req_w = os.pipe()
        ans_r, ans_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:                                      # the worker
            code = 0
            try:
                os.close(req_w)
                os.close(ans_r)
                for w in others:                          # the siblings' pipes are not ours
                    for stream in (w.proc.stdin, w.proc.stdout):
                        try:
                            os.close(stream.fileno())
                        except (OSError, ValueError, AttributeError):
                            pass
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                _serve(os.fdopen(req_r, "rb"), os.fdopen(ans_w, "wb"))
            except BaseException:  # noqa: BLE001 - a worker never returns into the caller
                code = 1
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(ans_w)
        self.pid = pid
        self.stdin: Any = os.fdopen(req_w, "wb")
        self.stdout: Any = os.fdopen(ans_r, "rb")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = -1
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"compile worker {self.pid}", timeout or 0.0)
            time.sleep(0.01)
        assert self.returncode is not None
        return self.returncode

    def kill(self) -> None:
        try:
            os.kill(self.pid, 9)
        except ProcessLookupError:
            pass
        self.wait()


class _Worker:
    """A compile worker: a process running :func:`_serve`.

    Forked from this process where :data:`FORK` allows (:class:`_Forked`), else a new
    ``python`` process running :func:`_worker_main`, started with the same interpreter,
    ``sys.path`` (as ``PYTHONPATH``) and environment as this process, plus
    ``TVM_NUM_THREADS=1`` (it runs no kernels), so it imports the same lowering rules and
    schedules; the target comes with each request. Unlike ``multiprocessing``'s ``spawn``,
    neither ever re-imports the user's main module.
    """

    def __init__(self, others: list[_Worker] | None = None) -> None:
        self.lock = threading.Lock()
        self.proc: Any
        if _forking():
            self.proc = _Forked(list(others or ()))
            return
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        env["TVM_NUM_THREADS"] = "1"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from backends.tvm.kernel.workers import _worker_main; "
                                   "_worker_main()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, close_fds=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, payload: bytes) -> tuple[Any, ...] | None:
        """Send one request and wait for its outcome (None: the worker is gone)."""
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        with self.lock:
            try:
                stdin.write(len(payload).to_bytes(_HEADER, "little") + payload)
                stdin.flush()
                head = _read_exactly(stdout, _HEADER)
                body = _read_exactly(stdout, int.from_bytes(head, "little")) if head else None
            except (OSError, ValueError):
                return None
        if body is None:
            return None
        outcome = pickle.loads(body)
        return None if outcome[0] == "error" else outcome

    def stop(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


_WORKERS: list[_Worker] = []


_WORKERS_LOCK = threading.Lock()


def _workers(n: int) -> list[_Worker]:
    """``n`` live compile workers (started on first use, kept for later builds).

    A forked child does not share its parent's workers (their pipes are the parent's):
    it starts its own.
    """
    with _WORKERS_LOCK:
        if _OWNER and _OWNER[0] != os.getpid():
            _WORKERS.clear()
        _OWNER[:] = [os.getpid()]
        _WORKERS[:] = [w for w in _WORKERS if w.alive()]
        while len(_WORKERS) < n:
            try:
                _WORKERS.append(_Worker(_WORKERS))
            except OSError:
                break
        if _WORKERS and not _EXIT_HOOK:
            atexit.register(shutdown_workers)
            _EXIT_HOOK.append(True)
        return list(_WORKERS[:n])


_EXIT_HOOK: list[bool] = []


_OWNER: list[int] = []


def shutdown_workers() -> None:
    """Stop the compile worker processes (they start again when needed)."""
    with _WORKERS_LOCK:
        workers, _WORKERS[:] = list(_WORKERS), []
        if _OWNER and _OWNER[0] != os.getpid():
            return                        # a forked child: the workers are the parent's
    for w in workers:
        w.stop()
