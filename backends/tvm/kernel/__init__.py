"""Compiled kernels: the runtime object the executors call, the compiler, the cache on disk
and the pool of compile workers.

* :mod:`backends.tvm.kernel.runtime` — :class:`Kernel` (``(*arrays, out=None)``) and
  :class:`NoLowering`;
* :mod:`backends.tvm.kernel.compile` — :func:`compile_function`;
* :mod:`backends.tvm.kernel.workers` — :func:`compile_many` and the worker processes;
* :mod:`backends.tvm.kernel.cache` — :class:`KernelCache` and the cache key;
* :mod:`backends.tvm.kernel.entries` and :mod:`backends.tvm.kernel.blobs` — the verified
  files a cache entry is made of.
"""

from backends.tvm.kernel.cache import (
    CACHE_VERSION,
    KernelCache,
    code_digest,
    default_cache,
    kernel_key,
)
from backends.tvm.kernel.compile import compile_function
from backends.tvm.kernel.runtime import COMPILE_FAILED, Kernel, NoLowering
from backends.tvm.kernel.workers import compile_many, prestart_workers, shutdown_workers

__all__ = ["CACHE_VERSION", "COMPILE_FAILED", "Kernel", "KernelCache", "NoLowering",
           "code_digest", "compile_function", "compile_many", "default_cache", "kernel_key",
           "prestart_workers", "shutdown_workers"]
