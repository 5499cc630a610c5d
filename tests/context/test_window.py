"""LiveItem construction shortcuts give the state the dataclass would."""

from __future__ import annotations

import dataclasses

from silas_exp.context.window import LiveItem, Window
from silas_exp.schema.session import SessionItem


def _state(item: LiveItem) -> dict:
    return {f.name: getattr(item, f.name) for f in dataclasses.fields(LiveItem)}


def test_from_session_sets_every_field_as_init_would():
    src = SessionItem(ctx_id="t1", zone="chronicle", kind="subscription", turn=4, text="  a\n b " * 40,
                      refreshed_turns=[5, 9], facts=["f"], group="g", tool_name="grep", status="error",
                      relevance=0.7, completed_turn=6, pinned=False)
    live = LiveItem.from_session(src, max_subscription_tokens=20)
    tokens = min(live.full_tokens, 20)
    by_init = LiveItem(ctx_id="t1", zone=src.zone, kind="subscription", full_tokens=tokens, tokens=tokens,
                       born=4, last_ref=4, group="g", tool_name="grep", status="error", relevance=0.7,
                       completed_turn=6, refreshed_turns=(5, 9), snippet=src.text[:160], facts=("f",),
                       text=src.text)
    assert live == by_init and _state(live) == _state(by_init)
    assert live.__dict__ == by_init.__dict__  # a field added to LiveItem must be set here too


def test_snapshot_is_a_copy_outside_the_window():
    w = Window()
    item = LiveItem.from_session(SessionItem(ctx_id="a", zone="workspace", kind="tool_result", turn=0,
                                             text="x" * 70), 100)
    w.add(item)
    copy = item.snapshot()
    assert _state(copy) == _state(dataclasses.replace(item)) and copy._window is None
    copy.tokens = 1
    assert w.usage() == item.tokens == 20
