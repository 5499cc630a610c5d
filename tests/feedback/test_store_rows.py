"""The feedback store writes each candidate's features as the JSON of its row."""

from __future__ import annotations

import json

import numpy as np
import pytest

from silas_exp.feedback.store import json_rows


@pytest.mark.parametrize("shape", [(0, 17), (1, 17), (25, 17), (5, 1), (3, 0)])
def test_json_rows_match_row_by_row_encoding(shape):
    rng = np.random.default_rng(sum(shape))
    m = rng.normal(size=shape) * 10.0 ** rng.integers(-12, 12, size=shape)
    if m.size:
        m.flat[0], m.flat[-1] = np.nan, -np.inf
    if m.size > 2:
        m.flat[1] = -0.0
    assert json_rows(m) == [json.dumps(row.tolist()) for row in m]
