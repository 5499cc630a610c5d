"""silas_exp: declarative ablation runner for the Silas context-eviction machinery."""

import os

# One BLAS thread per process, unless the environment says otherwise. Every
# matrix here is small (a dozen features, a few hundred candidates): with a core
# to spare a second OpenBLAS thread saves ~10 % of a sweep's jobs for ~40 % more
# CPU, but on a busy machine (the background uploader, a second worker, anyone
# else) its threads spin waiting for work, which tripled the CPU time of
# calibrating jobs (scipy's L-BFGS-B). Set before numpy is first imported; the
# uploader and joblib workers inherit it. bench/README.md has the figures.
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ.setdefault(_var, "1")

from silas_exp.resolvers import register as _register_resolvers  # noqa: E402

__version__ = "0.1.0"
_register_resolvers()
