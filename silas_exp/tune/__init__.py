"""Tuning studies (``experiment=tune``): Optuna searches one scorer's settings
on the training cases of a suite, and the winner is certified with the verdict
rule on held-out cases before anything is proposed (DESIGN §3, the winner's
curse). ``split`` is the train / holdout split that jobs apply; ``space``,
``study``, ``certify`` and ``report`` are the sweeper's side
(``hydra_plugins/silas_tune``). See docs/tuning.md."""
