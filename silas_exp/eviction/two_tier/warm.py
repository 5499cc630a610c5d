"""The background compile ``ahead.start`` runs: ``python -m
silas_exp.eviction.two_tier.warm PARENT_PID`` compiles the replay's loops into
numba's cache and dies with the sweep that started it. Its own module, so that
``ahead`` (imported by the loop) never imports the loop back."""
from __future__ import annotations

import sys

if __name__ == "__main__":
    from silas_exp.eviction.two_tier import ahead, compiled

    ahead.die_with(int(sys.argv[1]))
    compiled.warm_up()
