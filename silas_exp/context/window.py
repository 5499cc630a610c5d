"""The live context window: items as the harness sees them (never ground truth)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from silas_exp.context.budget import count_tokens, item_tokens
from silas_exp.schema.eviction import ContextZone
from silas_exp.schema.session import SessionItem

MASK_TEMPLATE = "[{tool} result masked: {status}, {tokens} tokens]"


@dataclass
class LiveItem:
    """One block in the window. Everything here is visible to scorers."""

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
        tokens = item_tokens(item)
        if item.kind == "subscription":
            tokens = min(tokens, max_subscription_tokens)
        return cls(
            ctx_id=item.ctx_id, zone=item.zone, kind=item.kind, full_tokens=tokens,
            tokens=tokens, born=item.turn, last_ref=item.turn, pinned=item.pinned,
            group=item.group, tool_name=item.tool_name, status=item.status,
            relevance=item.relevance, completed_turn=item.completed_turn,
            refreshed_turns=tuple(item.refreshed_turns), snippet=item.text[:160],
            facts=tuple(item.facts), text=item.text,
        )

    def age(self, turn: int) -> int:
        """Turns since the item was last referenced (or created)."""
        return max(0, turn - self.last_ref)

    def completed(self, turn: int) -> bool:
        return self.completed_turn is not None and self.completed_turn <= turn

    def mask(self) -> None:
        placeholder = MASK_TEMPLATE.format(
            tool=self.tool_name or "tool", status=self.status or "ok", tokens=self.full_tokens
        )
        self.tokens = count_tokens(placeholder)
        self.masked = True

    def visible_text(self) -> str:
        """What the main model sees of the item: nothing while inactive, the
        placeholder while masked, else its text."""
        if not self.active:
            return ""
        if self.masked:
            return MASK_TEMPLATE.format(tool=self.tool_name or "tool", status=self.status or "ok",
                                        tokens=self.full_tokens)
        return self.text

    def restore(self) -> None:
        self.tokens, self.masked, self.active = self.full_tokens, False, True

    @property
    def evictable(self) -> bool:
        return self.zone is not ContextZone.SYSTEM and not self.pinned


class Window:
    """Ordered map of live items plus the store of evicted ones (they go to memory)."""

    def __init__(self) -> None:
        self._items: dict[str, LiveItem] = {}
        self.evicted: dict[str, LiveItem] = {}

    def __contains__(self, ctx_id: str) -> bool:
        return ctx_id in self._items

    def __iter__(self) -> Iterator[LiveItem]:
        return iter(list(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)

    def get(self, ctx_id: str) -> LiveItem | None:
        return self._items.get(ctx_id)

    def add(self, item: LiveItem) -> None:
        self._items[item.ctx_id] = item

    def evict(self, ctx_id: str) -> LiveItem:
        item = self._items.pop(ctx_id)
        self.evicted[ctx_id] = item
        return item

    def retrieve(self, ctx_id: str, turn: int) -> LiveItem:
        """Bring an evicted item back from memory (a re-retrieval)."""
        item = self.evicted.pop(ctx_id)
        item.restore()
        item.last_ref = turn
        self._items[ctx_id] = item
        return item

    def usage(self) -> int:
        return sum(it.tokens for it in self._items.values())

    def zone_usage(self, zone: ContextZone) -> int:
        return sum(it.tokens for it in self._items.values() if it.zone is zone)

    def evictable(self) -> list[LiveItem]:
        return [it for it in self._items.values() if it.evictable and it.tokens > 0]
