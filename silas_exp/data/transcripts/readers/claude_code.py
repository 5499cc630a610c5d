"""Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``).

One JSON record per line. What the reader does with them (quirk counted):

* ``assistant`` records: Claude Code writes one API message as several records,
  one per content block, sharing ``message.id``; their blocks are taken in
  order as one message (``merged_records``), a block repeated under the same
  id only once. ``thinking`` blocks are dropped (``thinking_blocks_dropped``);
* ``user`` records: text starts a turn; ``tool_result`` blocks are results
  (``toolUseResult`` duplicates them and is ignored); ``isMeta`` records
  (caveats, injected context) are dropped (``meta_records_dropped``);
  ``[Request interrupted by user…]`` is no turn (``interrupts``);
* slash commands (``<command-name>/x</command-name>``): ``/clear`` ends the
  session and starts a new one ``<stem>-2`` … (``context_resets``); other
  commands are a user message ``/x args`` (``slash_commands``) and their
  ``<local-command-stdout>`` (``<local-command-stderr>``: an error) a
  ``slash_command`` call with its result; the output of ``/clear`` and
  ``/compact`` is dropped (``slash_command_outputs_dropped``);
* a compaction ends the session too (``compactions``, counted once however
  it is written: a ``system`` record with ``subtype: compact_boundary``, the
  ``/compact`` command, or both) and the continuation summary
  (``isCompactSummary``) is the new session's first user message. Claude Code
  writes a manual one as boundary, summary, caveat, ``/compact``, its output;
* other ``system``, ``summary``, ``file-history-snapshot`` … records are
  skipped (``<type>_records_skipped``);
* sidechains (``isSidechain``: a subagent's records) are dropped
  (``sidechain_records_dropped``) or, with ``--sidechains separate``, become
  sessions ``<stem>-sidechain-<n>``, one per subagent chain;
* a ``uuid`` seen before is skipped (``duplicate_records``).

Kept metadata: Claude Code ``version`` and the first ``model``; ``cwd`` and
``gitBranch`` are not kept (they can hold names).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from silas_exp.data.transcripts.events import Event, RawSession, ReadOptions
from silas_exp.data.transcripts.readers import DEFAULT_OPTIONS, jsonl_records, read_text

WHAT = "Claude Code session JSONL"
_COMMAND = re.compile(r"<command-name>\s*(/?[^<\s]+)\s*</command-name>")
_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_OUTPUT = re.compile(r"<local-command-(stdout|stderr)>(.*?)</local-command-\1>", re.DOTALL)
_TOOL_USE_ERROR = re.compile(r"<tool_use_error>(.*?)</tool_use_error>", re.DOTALL)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
INTERRUPT = "[Request interrupted by user"
CAVEAT = "<local-command-caveat>"
RESETS = ("/clear", "/compact")


def looks_like(path: Path, head: str) -> bool:
    return '"sessionId"' in head and ('"parentUuid"' in head or '"isSidechain"' in head) \
        or '"type":"summary"' in head and '"leafUuid"' in head \
        or '"type":"file-history-snapshot"' in head and '"messageId"' in head


class _Sessions:
    def __init__(self, path: Path, options: ReadOptions) -> None:
        self.path, self.options = path, options
        self.stem = path.stem
        self.main: list[RawSession] = [RawSession(self.stem, path.name, "claude-code")]
        self.side: dict[str, RawSession] = {}  # chain root uuid -> session
        self.chain_of: dict[str, str] = {}  # sidechain record uuid -> chain root uuid
        self.seen_uuids: set[str] = set()
        self.blocks_seen: dict[str, set[str]] = {}  # message id -> block keys
        self.meta: dict[str, str] = {}
        self.where = ""
        self.command: str | None = None  # the slash command whose output may follow
        self.compacted = False  # a compaction began the current session, no turn since

    @property
    def current(self) -> RawSession:
        return self.main[-1]

    def reset(self, quirk: str) -> None:
        cur = self.current
        cur.quirks[quirk] += 1
        if any(e.kind in ("user", "assistant", "call") for e in cur.events):
            self.main.append(RawSession(f"{self.stem}-{len(self.main) + 1}", self.path.name,
                                        "claude-code"))

    def compaction(self) -> None:
        if not self.compacted:
            self.reset("compactions")
            self.compacted = True

    def target(self, rec: dict[str, Any]) -> RawSession | None:
        if not rec.get("isSidechain"):
            return self.current
        if self.options.sidechains == "drop":
            self.current.quirks["sidechain_records_dropped"] += 1
            return None
        parent, uid = rec.get("parentUuid"), str(rec.get("uuid"))
        root = self.chain_of.get(str(parent)) or uid
        self.chain_of[uid] = root
        if root not in self.side:
            self.side[root] = RawSession(f"{self.stem}-sidechain-{len(self.side) + 1}",
                                         self.path.name, "claude-code")
        return self.side[root]

    def emit(self, raw: RawSession, kind: str, text: str = "", **kw: Any) -> None:
        raw.events.append(Event(kind, text, where=self.where, **kw))  # type: ignore[arg-type]

    # -- records -------------------------------------------------------------

    def record(self, rec: dict[str, Any]) -> None:
        uid = rec.get("uuid")
        if isinstance(uid, str):
            if uid in self.seen_uuids:
                self.current.quirks["duplicate_records"] += 1
                return
            self.seen_uuids.add(uid)
        kind = rec.get("type")
        if isinstance(rec.get("version"), str):
            self.meta.setdefault("claude_code_version", rec["version"])
        if kind == "system" and rec.get("subtype") == "compact_boundary":
            self.compaction()
            return
        if kind not in ("user", "assistant"):
            self.current.quirks[f"{kind or 'untyped'}_records_skipped"] += 1
            return
        raw = self.target(rec)
        if raw is None:
            return
        message = rec.get("message")
        if not isinstance(message, dict):
            raw.quirks["records_without_message_skipped"] += 1
            return
        if kind == "assistant":
            self.assistant(raw, message)
        else:
            self.user(raw, rec, message)

    def assistant(self, raw: RawSession, message: dict[str, Any]) -> None:
        if raw is self.current:
            self.compacted = False
        if isinstance(message.get("model"), str) and message["model"] != "<synthetic>":
            self.meta.setdefault("model", message["model"])
        mid = str(message.get("id") or id(message))
        if mid in self.blocks_seen:
            raw.quirks["merged_records"] += 1
        seen = self.blocks_seen.setdefault(mid, set())
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            key = f"{btype}:{block.get('id') or block.get('text') or block.get('thinking')}"
            if key in seen:
                continue
            seen.add(key)
            if btype in ("thinking", "redacted_thinking"):
                raw.quirks["thinking_blocks_dropped"] += 1
            elif btype == "text" and str(block.get("text", "")).strip():
                self.emit(raw, "assistant", str(block["text"]))
            elif btype == "tool_use":
                self.emit(raw, "call", call_id=str(block.get("id")), tool=str(block.get("name")),
                          args=block.get("input") or {})

    def user(self, raw: RawSession, rec: dict[str, Any], message: dict[str, Any]) -> None:
        if rec.get("isMeta"):
            raw.quirks["meta_records_dropped"] += 1
            return
        content = message.get("content")
        if isinstance(content, str):
            self.user_text(raw, rec, content)
            return
        if not isinstance(content, list):
            raw.quirks["records_without_message_skipped"] += 1
            return
        texts = []
        for block in content or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                # Claude Code wraps a refused or failed call's message in this tag
                text = _TOOL_USE_ERROR.sub(r"\1", _text(block.get("content")))
                self.emit(raw, "result", text,
                          call_id=str(block.get("tool_use_id")), is_error=bool(block.get("is_error")))
            elif block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            else:
                texts.append(f"[{block.get('type')}]")
        if texts:
            self.user_text(raw, rec, "\n".join(texts))

    def user_text(self, raw: RawSession, rec: dict[str, Any], text: str) -> None:
        main = raw is self.current
        if text.lstrip().startswith(INTERRUPT):
            raw.quirks["interrupts"] += 1
            return
        if text.lstrip().startswith(CAVEAT):  # a caveat written without isMeta
            raw.quirks["meta_records_dropped"] += 1
            return
        if rec.get("isCompactSummary") and main:
            self.compaction()
            self.emit(self.current, "user", text)
            return
        command = _COMMAND.search(text)
        if command:
            name = command.group(1) if command.group(1).startswith("/") else "/" + command.group(1)
            self.command = name
            if name == "/clear" and main:
                self.reset("context_resets")
                self.compacted = False
                return
            if name == "/compact" and main:
                self.compaction()
                return
            args = _ARGS.search(text)
            raw.quirks["slash_commands"] += 1
            self.emit(raw, "user", f"{name} {args.group(1).strip() if args else ''}".strip())
            self.compacted = self.compacted and not main  # a turn in the main chain
            return
        outputs = _OUTPUT.findall(text)
        if outputs:
            self.command_output(raw, outputs)
            return
        self.emit(raw, "user", text)
        self.compacted = self.compacted and not main

    def command_output(self, raw: RawSession, outputs: list[tuple[str, str]]) -> None:
        command, self.command = self.command, None
        if command in RESETS:
            raw.quirks["slash_command_outputs_dropped"] += 1
            return
        text = "\n".join(_ANSI.sub("", out).strip() for _, out in outputs if out.strip())
        cid = f"slash-{len(raw.events)}"
        self.emit(raw, "call", call_id=cid, tool="slash_command", args={"command": command or ""})
        self.emit(raw, "result", text, call_id=cid,
                  is_error=any(stream == "stderr" and out.strip() for stream, out in outputs))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for b in content or []:
        if isinstance(b, dict):
            parts.append(str(b.get("text", "")) if b.get("type") == "text" else f"[{b.get('type')}]")
    return "\n".join(parts)


def read(path: Path, options: ReadOptions = DEFAULT_OPTIONS) -> list[RawSession]:
    text = read_text(path, WHAT)
    sessions = _Sessions(path, options)
    for lineno, rec in jsonl_records(path, text, WHAT):
        sessions.where = f"{path}:{lineno}"
        sessions.record(rec)
    kept: list[RawSession] = []
    carry: Counter[str] = Counter()
    for s in sessions.main:  # an empty part (nothing before a /clear …) gives its counts on
        if s.events:
            s.quirks.update(carry)
            carry = Counter()
            kept.append(s)
        elif kept:
            kept[-1].quirks.update(s.quirks)
        else:
            carry.update(s.quirks)
    out = kept + list(sessions.side.values())
    if not out:
        sessions.main[0].quirks = carry
        out = sessions.main[:1]
    for s in out:
        s.meta.update(sessions.meta)
    return out
