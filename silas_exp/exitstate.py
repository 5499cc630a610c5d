"""Process-wide facts the CLI needs to pick an exit code (see silas_exp.cli.app)."""

from __future__ import annotations

STATE = {"task_started": False, "verbose": False, "jobs_failed": False}
