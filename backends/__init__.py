"""Backends: compiling Relay programs for real hardware (paper §3.1.3, §4.4.2, §4.7).

``backends.tvm`` lowers the ``Primitive=1`` functions that :func:`passes.fuse_ops` produces to
TVM tensor expressions, compiles them for the host CPU and runs the rest of the program with
its executors.  The oracle (:mod:`interpreter`) stays the definition every backend is tested
against.
"""
