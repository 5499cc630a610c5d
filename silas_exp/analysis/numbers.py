"""Numbers in text: the forms every rendering of an analysis shares."""

from __future__ import annotations

import math


def num(x: float) -> str:
    """A number for sentences: two significant digits below 1, a true minus sign."""
    if math.isnan(x):
        return "—"
    text = f"{x:.0f}" if abs(x) >= 100 else f"{x:.2f}" if abs(x) >= 1 else f"{x:.2g}"
    return text.replace("-", "−")


def signed(x: float) -> str:
    return ("+" if x >= 0 else "") + num(x)
