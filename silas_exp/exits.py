"""How an error reaches the exit status through Hydra.

Exit codes: 0 ok; 1 a job failed, a case errored from code, a sweep had
failed jobs, a gate or regression check failed; 2 bad input
(``SilasExpError.exit_code``). When each applies: ``silas_exp.run.exit_policy``.

Hydra stands between silas_exp's code and the entry point: it turns an
``Exception`` raised in a callback into a warning (and exit status 0), and one
raised anywhere else into its own printout and exit status 1 — unless
``HYDRA_FULL_ERROR=1``, which ``silas_exp.cli.app.main`` sets so that
exceptions of the sweepers, launchers and Hydra itself reach it and are
reported in one paragraph. The code Hydra calls inside a job and in the sweep
callback reports a ``SilasExpError`` to the user itself and raises
``Reported`` carrying it: a ``BaseException``, which Hydra (and joblib's
workers) pass through untouched. ``main`` exits with the carried error's code.
"""

from __future__ import annotations

from silas_exp.errors import SilasExpError

OK, FAILED, BAD_INPUT = 0, 1, 2
# "1": print tracebacks (``python -m silas_exp --verbose``), inherited by the jobs' workers
VERBOSE_ENV = "SILAS_EXP_VERBOSE"


class Reported(BaseException):
    """``error`` was reported to the user; exit with its code."""

    def __init__(self, error: SilasExpError) -> None:
        super().__init__(error)
        self.error = error

    @property
    def exit_code(self) -> int:
        return self.error.exit_code
