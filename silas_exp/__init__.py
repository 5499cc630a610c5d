"""silas_exp: declarative ablation runner for the Silas context-eviction machinery."""

import os

# One BLAS thread per process, unless the environment says otherwise. Every
# matrix here is tiny (a dozen features, a few hundred candidates), so BLAS
# threads never help; they spin while waiting for work, and on a 2-core machine
# shared with the background uploader, a second worker or anything else, that
# spinning tripled the CPU time of calibrating jobs (scipy's L-BFGS-B). Set
# before numpy is first imported; the uploader and joblib workers inherit it.
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ.setdefault(_var, "1")

from silas_exp.resolvers import register as _register_resolvers  # noqa: E402

__version__ = "0.1.0"
_register_resolvers()
