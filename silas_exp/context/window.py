"""The live context window: items as the harness sees them (never ground truth)."""

from __future__ import annotations

import weakref
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from silas_exp.context.budget import count_tokens
from silas_exp.schema.eviction import ContextZone
from silas_exp.schema.session import SessionItem

MASK_TEMPLATE = "[{tool} result masked: {status}, {tokens} tokens]"


def mask_placeholder(tool_name: str | None, status: str | None, full_tokens: int) -> str:
    """What a masked tool result shows instead of its text."""
    return MASK_TEMPLATE.format(tool=tool_name or "tool", status=status or "ok", tokens=full_tokens)

# an enum member read off its class costs a look-up through the enum's metaclass
# (~0.1 us on CPython 3.11); the loops below read it once per item
_SYSTEM = ContextZone.SYSTEM


@lru_cache(maxsize=8192)
def one_line(text: str, width: int = 80) -> str:
    """``text`` with its whitespace runs collapsed to single spaces, cut at
    ``width`` (how a snippet is shown in a prompt line); a replay shows the
    same snippets turn after turn, so the result is cached."""
    return " ".join(text.split())[:width]


@dataclass
class LiveItem:
    """One block in the window. Everything here is visible to scorers.

    ``tokens`` is a property (see below): setting it keeps the totals of the
    window holding the item exact."""

    # a weak reference to the Window holding the item (not a field: copies start
    # outside any window); weak, so a window and its items form no reference
    # cycle and are freed as soon as the replay lets go of them
    _window = None

    ctx_id: str
    zone: ContextZone
    kind: str
    full_tokens: int
    tokens: int
    born: int
    last_ref: int
    pinned: bool = False
    group: str | None = None
    tool_name: str | None = None
    status: str | None = None
    relevance: float | None = None
    completed_turn: int | None = None
    refreshed_turns: tuple[int, ...] = ()
    snippet: str = ""
    masked: bool = False
    active: bool = True
    facts: tuple[str, ...] = field(default=())
    text: str = field(default="", repr=False)  # full text (probes show it to the main model)

    @classmethod
    def from_session(cls, item: SessionItem, max_subscription_tokens: int) -> LiveItem:
        # the session item's fields read from its __dict__, where pydantic keeps them
        # (a subscript costs about half an attribute look-up on a model)
        src = item.__dict__
        tokens, kind, turn, text = src["tokens"], src["kind"], src["turn"], src["text"]
        if tokens is None:  # budget.item_tokens inlined: once per session item
            tokens = count_tokens(text)
        if kind == "subscription":
            tokens = min(tokens, max_subscription_tokens)
        # the state __init__ would set, without its cost per field (a replay builds
        # one LiveItem per session item); the item starts outside any window. Set
        # attribute by attribute, in __init__'s order, never through __dict__: the
        # values then stay inline in the object, which every later read of an
        # attribute finds about twice as fast as in a dict (CPython 3.11)
        live = object.__new__(cls)
        live.ctx_id, live.zone, live.kind, live.full_tokens = src["ctx_id"], src["zone"], kind, tokens
        live._tokens, live.born, live.last_ref, live.pinned = tokens, turn, turn, src["pinned"]
        live.group, live.tool_name, live.status = src["group"], src["tool_name"], src["status"]
        live.relevance, live.completed_turn = src["relevance"], src["completed_turn"]
        live.refreshed_turns, live.snippet = tuple(src["refreshed_turns"]), text[:160]
        live.masked, live.active, live.facts, live.text = False, True, tuple(src["facts"]), text
        return live

    def __getstate__(self) -> dict:
        """Copies and pickles start outside any window (their token changes are their own)."""
        state = dict(self.__dict__)
        state.pop("_window", None)
        return state

    def snapshot(self) -> LiveItem:
        """A copy outside any window, as ``dataclasses.replace(self)`` makes one,
        without a pass through ``__init__``."""
        copy = object.__new__(LiveItem)
        copy.__dict__.update(self.__getstate__())
        return copy

    def age(self, turn: int) -> int:
        """Turns since the item was last referenced (or created)."""
        return max(0, turn - self.last_ref)

    def completed(self, turn: int) -> bool:
        return self.completed_turn is not None and self.completed_turn <= turn

    def mask(self) -> None:
        self.tokens = count_tokens(mask_placeholder(self.tool_name, self.status, self.full_tokens))
        self.masked = True

    def visible_text(self) -> str:
        """What the main model sees of the item: nothing while inactive, the
        placeholder while masked, else its text."""
        if not self.active:
            return ""
        if self.masked:
            return mask_placeholder(self.tool_name, self.status, self.full_tokens)
        return self.text

    def restore(self) -> None:
        self.tokens, self.masked, self.active = self.full_tokens, False, True

    @property
    def evictable(self) -> bool:
        """Neither system nor pinned (``Window.evictable`` reads the same two
        fields inline: change both together)."""
        return self.zone is not _SYSTEM and not self.pinned


def _get_tokens(item: LiveItem) -> int:
    return item._tokens


def _set_tokens(item: LiveItem, value: int) -> None:
    held_by = item._window
    if held_by is not None and (window := held_by()) is not None:
        window._resized(item, value - item._tokens)
    item._tokens = value


# An item's tokens change in place (masking, deactivation, restore, or a
# strategy's own edits); the window holding it is told each time, so its
# running totals never need a recount.
LiveItem.tokens = property(_get_tokens, _set_tokens)  # type: ignore[assignment]


class Window:
    """Ordered map of live items plus the store of evicted ones (they go to memory).

    Keeps running token totals (overall and per zone) and the items grouped by
    kind and by zone in window order, so usage costs O(1) and a look-up by kind
    or zone visits only that group."""

    def __init__(self) -> None:
        self._items: dict[str, LiveItem] = {}
        # the items grouped by kind and by zone, each group in window order
        self._by_kind: dict[str, dict[str, LiveItem]] = defaultdict(dict)
        self._by_zone: dict[ContextZone, dict[str, LiveItem]] = defaultdict(dict)
        self._zone_tokens: dict[ContextZone, int] = defaultdict(int)
        self._total = 0
        self.evicted: dict[str, LiveItem] = {}

    def __contains__(self, ctx_id: str) -> bool:
        return ctx_id in self._items

    def __iter__(self) -> Iterator[LiveItem]:
        return iter(list(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)

    def get(self, ctx_id: str) -> LiveItem | None:
        return self._items.get(ctx_id)

    def of_kind(self, kind: str) -> list[LiveItem]:
        """The items of one kind, in window order."""
        group = self._by_kind.get(kind)
        return list(group.values()) if group else []

    def kind_view(self, kind: str):
        """The items of one kind, in window order, as a live view of the window's
        group, not a copy: for a loop that neither adds nor evicts while it runs
        (changing an item's tokens is fine)."""
        group = self._by_kind.get(kind)
        return group.values() if group else ()

    def _resized(self, item: LiveItem, delta: int) -> None:
        self._total += delta
        self._zone_tokens[item.zone] += delta

    def add(self, item: LiveItem) -> None:
        # the group and token bookkeeping written out: a replay adds and evicts
        # items by the thousand
        ctx_id, zone = item.ctx_id, item.zone
        old = self._items.get(ctx_id)
        self._items[ctx_id] = item
        if old is None:
            self._by_kind[item.kind][ctx_id] = item
            self._by_zone[zone][ctx_id] = item
        else:  # same ctx_id again: the new item takes the old one's place
            self._resized(old, -old._tokens)
            old._window = None
            self._regroup()
        item._window = weakref.ref(self)  # one ref object per window, reused by CPython
        self._total += item._tokens
        self._zone_tokens[zone] += item._tokens

    def _regroup(self) -> None:
        self._by_kind.clear()
        self._by_zone.clear()
        for ctx_id, it in self._items.items():
            self._by_kind[it.kind][ctx_id] = it
            self._by_zone[it.zone][ctx_id] = it

    def evict(self, ctx_id: str) -> LiveItem:
        item = self._items.pop(ctx_id)
        zone = item.zone
        del self._by_kind[item.kind][ctx_id]
        del self._by_zone[zone][ctx_id]
        self._total -= item._tokens
        self._zone_tokens[zone] -= item._tokens
        item._window = None
        self.evicted[ctx_id] = item
        return item

    def retrieve(self, ctx_id: str, turn: int) -> LiveItem:
        """Bring an evicted item back from memory (a re-retrieval)."""
        item = self.evicted.pop(ctx_id)
        item.restore()
        item.last_ref = turn
        self.add(item)
        return item

    def usage(self) -> int:
        return self._total

    def zone_usage(self, zone: ContextZone) -> int:
        return self._zone_tokens[zone]

    def evictable(self, zone: ContextZone | None = None) -> list[LiveItem]:
        """Evictable items holding tokens, in window order (of one zone if given)."""
        items = self._items.values() if zone is None else self._by_zone.get(zone, {}).values()
        # LiveItem.tokens and .evictable read directly: no property call per item
        return [it for it in items
                if it._tokens > 0 and it.zone is not _SYSTEM and not it.pinned]
