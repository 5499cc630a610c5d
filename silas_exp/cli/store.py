"""The MLflow store a ``silas-exp`` command reads (its ``--tracking-uri``)."""

from __future__ import annotations


def reader(args):
    from silas_exp.tracking.reader import MlflowRunReader

    return MlflowRunReader(args.tracking_uri)
