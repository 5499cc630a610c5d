"""The study loop: adaptive repeats and sequential looks over blocks of cases,
their persisted state (``adaptive.json``) and the stopping rule. The silas
sweeper (``hydra_plugins/silas_sweeper``, a thin Hydra facade) and tuning's
certification (``silas_exp.tune``) both run it.

* ``state``: ``AdaptiveState``, the plan of looks and the stops, on disk; how a
  report reads a sweep as its study decided it.
* ``looks``: the stopping rule at one look (``review``, ``close_decided``).
* ``loop``: the rounds, launched through a caller's launch function.
* ``control``: the one step that adds the control arm to a sweep.
"""
