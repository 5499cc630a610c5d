"""silas_exp's tuning sweeper plugin (``hydra/sweeper=silas_tune``)."""
