"""The gate: promote, demote and ``regress``, in one place."""
