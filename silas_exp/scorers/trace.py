"""Which line of a scorer produced a score that breaks its contract.

A score of NaN or 1.5 is noticed only after ``score`` returned, when the line
that made it has long run. :func:`producing_line` calls ``score`` again under
a line tracer (``sys.settrace``) and watches the local variables of the
scorer's own frames (its package's files): the first line after which a
local holds the bad value — itself, or in a dict, list or array — produced
it; a value that first shows in what a frame returns was made on its return
line. Only a failing case pays for the second call. When the second call
does not give the bad value again (a scorer with state, or randomness of its
own), or the value never shows in the scorer's own frames, the line cannot
be known and the caller says so.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any


def _is(target: Any) -> Callable[[Any], bool]:
    """A test for the bad value: any NaN for a NaN, else an equal number."""
    nan = isinstance(target, numbers.Real) and math.isnan(target)

    def same(v: Any) -> bool:
        if isinstance(v, numbers.Real) and not isinstance(v, bool):
            return math.isnan(v) if nan else v == target
        if hasattr(v, "dtype") and hasattr(v, "shape"):  # a numpy array or scalar
            try:
                import numpy as np

                return bool(np.isnan(v).any() if nan else (v == target).any())
            except (TypeError, ValueError):
                return False
        return False

    return same


def _holds(value: Any, same: Callable[[Any], bool]) -> bool:
    if same(value):
        return True
    if isinstance(value, dict):
        return any(same(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(same(v) for v in value)
    return False


def producing_line(call: Callable[[], Any], target: Any, own: Callable[[str], bool]
                   ) -> tuple[str, int] | None:
    """(file, line) where ``call()`` first made ``target`` in a frame whose file
    ``own`` accepts; None when that cannot be known."""
    same = _is(target)
    last: dict[FrameType, int] = {}
    held: dict[FrameType, bool] = {}
    found: list[tuple[str, int]] = []

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if found:
            return None
        holds = any(_holds(v, same) for v in frame.f_locals.values())
        if holds and not held.get(frame, False) and frame in last:
            found.append((frame.f_code.co_filename, last[frame]))
        elif event == "return" and _holds(arg, same) and not holds:
            found.append((frame.f_code.co_filename, frame.f_lineno))
        held[frame], last[frame] = holds, frame.f_lineno
        return local

    def calls(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call" and not found and own(frame.f_code.co_filename):
            held[frame] = False
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        call()
    except Exception:
        return None
    finally:
        sys.settrace(previous)
    return found[0] if found else None
