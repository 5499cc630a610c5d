"""Numbers in text: the forms every output shares (reports, tables, the
console, run descriptions). A measured value shows four significant digits (a
count of tokens or ms, 1,000 and more, shows whole units), with a true minus
sign; a declared margin shows as declared."""

from __future__ import annotations

import math

DIGITS = 4


def num(x: float | None) -> str:
    """A measured value: ``0.7030``, ``−0.005130``, ``9,454``; ``—`` when missing."""
    if x is None or math.isnan(x):
        return "—"
    if math.isinf(x):
        return ("−" if x < 0 else "") + "∞"
    text = f"{x:,.0f}" if abs(x) >= 10 ** DIGITS / 10 else f"{x:#.{DIGITS}g}"
    return text.rstrip(".").replace("-", "−")


def signed(x: float | None) -> str:
    """A difference: ``+0.003100``, ``−0.07070``."""
    return ("+" if x is not None and x >= 0 else "") + num(x)


def interval(estimate: float, low: float, high: float) -> str:
    """``−0.07070 [−0.1010, −0.04340]``."""
    return f"{signed(estimate)} [{signed(low)}, {signed(high)}]"


def declared(x: float) -> str:
    """A declared value (a margin, a threshold) as it was declared: ``0.03``."""
    return "—" if math.isnan(x) else f"{x:.{DIGITS}g}".replace("-", "−")


def p_value(p: float) -> str:
    return "—" if math.isnan(p) else ("<0.001" if p < 0.001 else f"{p:.3f}")


def rounded(x: float) -> float:
    """A value as ``num`` shows it (four significant digits, whole units from
    1,000), for logs and tables that show every digit of what they are given."""
    if math.isnan(x) or math.isinf(x):
        return x
    return float(round(x)) if abs(x) >= 10 ** DIGITS / 10 else float(f"{x:.{DIGITS}g}")


def percent(share: float) -> str:
    """A confidence or a level: ``95%``, ``95.69%``, ``2.155%``."""
    return f"{share * 100:.{DIGITS}g}%"
