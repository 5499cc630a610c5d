"""The plan of a study: cases, calls, dollars and minutes to a verdict,
predicted before the first paid call from what is free (the simulated twin of
the same cases, the baseline's per-case history, the dry run's calls per case,
the pace of the API), and checked against what the study spent."""
