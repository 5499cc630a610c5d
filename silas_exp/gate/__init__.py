"""The gate: promote, demote and ``regress``, in one place, behind the
interfaces of ``ports`` (a run reader, a baseline store, what the tracking
backend shows of the gate). Nothing here imports mlflow.

* ``promote``: a study's variant made the suite's baseline (code,
  configuration and results), demoted, shown.
* ``check``: ``regress`` — its two sides, the code each runs, what it refuses.
* ``sequential``: the check's looks, on the study's own loop.
* ``revision``: which code a side runs; a past commit from a cached worktree.
* ``jobs``: the jobs a check runs, here or with a worktree's code.
* ``report``: the verdict rule's decision, the §20.5 flags, ``regress.md``.
* ``store``: the suite folder as the baseline store, and the record's reader.
"""
