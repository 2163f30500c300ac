"""The compiled executors and what they share: the VM (compiler and machine), the graph
executor, ahead-of-time Python (``aot``, with ``aot_saved`` for saved builds), and the
:class:`~backends.tvm.exec.executable.Executable` a build returns. Applying a callee (a
closure, an operator, a constructor) follows the oracle's rules through the shared helpers
of :mod:`interpreter.values` (``construct``, ``not_a_function``)."""
