"""LiveItem construction shortcuts give the state the dataclass would; a window
and its items free without the cycle collector."""

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
    # in __init__'s order: the class's shared attribute layout, values inline in the object
    assert list(live.__dict__) == list(by_init.__dict__)


def test_snapshot_is_a_copy_outside_the_window():
    w = Window()
    item = LiveItem.from_session(SessionItem(ctx_id="a", zone="workspace", kind="tool_result", turn=0,
                                             text="x" * 70), 100)
    w.add(item)
    copy = item.snapshot()
    assert _state(copy) == _state(dataclasses.replace(item)) and copy._window is None
    copy.tokens = 1
    assert w.usage() == item.tokens == 20


def test_a_window_and_its_items_are_freed_without_the_cycle_collector():
    """Items refer to their window weakly: once nothing else holds the window,
    reference counting frees it (a replay leaves no cyclic garbage per case),
    while the items still keep its token totals exact as long as it lives."""
    import gc
    import weakref

    w = Window()
    items = [LiveItem.from_session(SessionItem(ctx_id=f"i{k}", zone="chronicle", kind="tool_result",
                                               turn=0, text="y" * 70), 100) for k in range(5)]
    for it in items:
        w.add(it)
    items[0].mask()
    assert w.usage() == sum(it.tokens for it in items)
    w.evict("i1")
    assert w.usage() == sum(it.tokens for it in items if it.ctx_id != "i1")
    gone = weakref.ref(w)
    gc.disable()
    try:
        del w
        assert gone() is None
    finally:
        gc.enable()
    items[2].tokens = 3  # an item outside any living window: nothing to tell
    assert items[2].tokens == 3
