"""silas_exp's Hydra sweeper plugin (``hydra/sweeper=silas``)."""
