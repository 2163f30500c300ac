"""``relay tune``: MetaSchedule over the kernels our schedules leave furthest from peak.

* :mod:`backends.tvm.tune.database` — the persistent tuning database (one directory per
  :class:`~backends.tvm.target.Target`) that ``build(..., tuning=DB)`` reads;
* :mod:`backends.tvm.tune.decide` — keep a tuned kernel only when it beats ours;
* :mod:`backends.tvm.tune.search` — MetaSchedule glue (in-process builder, runners);
* :mod:`backends.tvm.tune.tuner` — :func:`~backends.tvm.tune.tuner.tune`, the whole run.
"""
