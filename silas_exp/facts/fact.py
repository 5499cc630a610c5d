"""Facts planted in sessions and stated in answers.

A fact is ``kind:value`` or ``kind:value|detail`` (``modified:src/app/http.py|
retry loop honours retry-after``; ``decision:connection pooling|the server
allows 100 connections``). Probe answers state facts one per line as
``- kind: value | detail``; the offline judge compares those lines with the
probe's expected facts (case and whitespace folded)."""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("error", "command", "version", "created", "modified", "examined", "decision",
         "alternative", "todo")
TECHNICAL = ("error", "command", "version")
FILES = ("created", "modified", "examined")
_LINE = re.compile(r"^\s*[-*]\s*(?P<kind>[a-z_]+)\s*:\s*(?P<value>[^|]*?)\s*(?:\|\s*(?P<detail>.*?))?\s*$")


def norm(text: str) -> str:
    return " ".join(text.lower().split())


@dataclass(frozen=True)
class Fact:
    kind: str
    value: str
    detail: str = ""

    @classmethod
    def parse(cls, raw: str) -> Fact:
        kind, _, rest = raw.partition(":")
        value, _, detail = rest.partition("|")
        if kind not in KINDS or not value.strip():
            raise ValueError(f"fact {raw!r}: expected 'kind:value[|detail]' with kind in {KINDS}")
        return cls(kind, value.strip(), detail.strip())

    def line(self, with_detail: bool = True) -> str:
        tail = f" | {self.detail}" if self.detail and with_detail else ""
        return f"- {self.kind}: {self.value}{tail}"

    def key(self) -> tuple[str, str]:
        return self.kind, norm(self.value)


def parse_answer(text: str) -> tuple[list[Fact], int, int]:
    """(facts stated, lines that parse, non-empty lines)."""
    facts, ok, total = [], 0, 0
    for line in text.splitlines():
        if not line.strip():
            continue
        total += 1
        m = _LINE.match(line)
        if m and m["kind"] in KINDS and m["value"]:
            ok += 1
            facts.append(Fact(m["kind"], m["value"], (m["detail"] or "").strip()))
    return facts, ok, total
