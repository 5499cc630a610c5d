"""aider chat histories (``.aider.chat.history.md``), as aider appends them.

Each aider run starts with ``# aider chat started at <time>``: a new session
(``<stem>-1``, ``<stem>-2`` …; a run with no user message is skipped). Lines
starting ``#### `` are the user's input; lines starting ``>`` are aider's own
output (file adds, ``Applied edit to x.py``, commits, ``/run`` output, lint);
the rest is the model's reply. Mapping (quirk counted):

* ``#### /run cmd``, ``/test cmd``, ``!cmd`` -> the user message and a ``run``
  call (``command``) whose result is the ``>`` block after it;
* ``/add``, ``/drop``, ``/read-only`` -> the user message and a call of that
  name (``files``) with the ``>`` block as its result;
* ``/ask``, ``/code``, ``/architect`` + text -> a user message with the text
  (``mode_commands``); other commands -> a user message (``other_commands``);
* a ``>`` block after a reply -> an ``aider`` call with the block as result
  (edits applied, commits, lint); each ``SEARCH/REPLACE`` block in the reply is
  an ``edit`` call (``path``, ``search``, ``replace``) whose result is
  ``applied``, or the error when aider reports the edit failed;
* ``/architect`` mode logs the request again for the editor model: a user
  message identical to the previous one is not a new turn
  (``architect_repeats``);
* the start-up banner (``> Aider v…``, model, repo map) is skipped
  (``banner_lines_skipped``).

aider has no tool-call ids; the reader numbers them ``aider-<n>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from silas_exp.transcripts.events import Event, RawSession, ReadOptions
from silas_exp.transcripts.readers import DEFAULT_OPTIONS, read_text

WHAT = "aider chat history (.aider.chat.history.md)"
HEADER = re.compile(r"^# aider chat started at (.*)$")
_EDIT = re.compile(r"(?m)^(?P<path>[^\n`]*\S)[ \t]*\n```[^\n]*\n<<<<<<< SEARCH[ \t]*\n(?P<search>.*?)"
                   r"^=======[ \t]*\n(?P<replace>.*?)^>>>>>>> REPLACE", re.DOTALL)
_EDIT_FAILED = re.compile(r"did not conform|SearchReplaceNoExactMatch|failed to match|"
                          r"Failed to apply edit|doesn't exist|must exactly match", re.IGNORECASE)
_FILE_COMMANDS = ("/add", "/drop", "/read-only")
_MODE_COMMANDS = ("/ask", "/code", "/architect", "/chat-mode")


def looks_like(path: Path, head: str) -> bool:
    return path.name.endswith(".aider.chat.history.md") or bool(
        re.search(r"(?m)^# aider chat started at ", head))


@dataclass
class _Block:
    kind: str  # user | quote | reply
    lines: list[str]
    lineno: int

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip("\n")


def _blocks(lines: list[str], start: int) -> list[_Block]:
    out: list[_Block] = []
    fence = False  # inside a ``` block of a reply, ">>>>>>> REPLACE" is code, not aider output
    for n, line in enumerate(lines, start):
        if fence or (line.startswith("```") and out and out[-1].kind == "reply"):
            if line.startswith("```"):
                fence = not fence
            out[-1].lines.append(line)
            continue
        if line.startswith("####"):  # aider ends these lines with two spaces (markdown breaks)
            kind, body = "user", line[4:].removeprefix(" ").rstrip()
        elif line.startswith(">"):
            kind, body = "quote", line[1:].removeprefix(" ").rstrip()
        elif not line.strip():
            if out:
                out[-1].lines.append("")
            continue
        else:
            kind, body = "reply", line
        if out and out[-1].kind == kind:
            out[-1].lines.append(body)
        else:
            out.append(_Block(kind, [body], n))
    return out


class _Run:
    def __init__(self, raw: RawSession, path: Path) -> None:
        self.raw, self.path = raw, path
        self.calls = 0
        self.last_user: str | None = None
        self.pending: str | None = None  # call id waiting for the next > block
        self.where = ""

    def emit(self, kind: str, text: str = "", **kw) -> None:
        self.raw.events.append(Event(kind, text, where=self.where, **kw))  # type: ignore[arg-type]

    def call(self, tool: str, args: dict) -> str:
        self.calls += 1
        cid = f"aider-{self.calls}"
        self.emit("call", call_id=cid, tool=tool, args=args)
        return cid

    def user(self, text: str) -> None:
        word, _, rest = text.partition(" ")
        said = rest.strip() if word in _MODE_COMMANDS else text
        if said == self.last_user:  # the editor model's copy of an /architect request
            self.raw.quirks["architect_repeats"] += 1
            return
        self.last_user = said
        if word in ("/run", "/test") or text.startswith("!"):
            cmd = rest.strip() if word in ("/run", "/test") else text[1:].strip()
            self.emit("user", text)
            self.pending = self.call("run", {"command": cmd})
        elif word in _FILE_COMMANDS:
            self.emit("user", text)
            self.pending = self.call(word[1:], {"files": rest.split()})
        elif word in _MODE_COMMANDS:
            self.raw.quirks["mode_commands"] += 1
            self.emit("user", rest.strip() or text)
        else:
            if word.startswith("/"):
                self.raw.quirks["other_commands"] += 1
            self.emit("user", text)

    def reply(self, text: str, after: _Block | None) -> None:
        self.emit("assistant", text)
        failed = after is not None and after.kind == "quote" and bool(_EDIT_FAILED.search(after.text))
        for m in _EDIT.finditer(text + "\n"):
            cid = self.call("edit", {"path": m["path"].strip(), "search": m["search"].rstrip("\n"),
                                     "replace": m["replace"].rstrip("\n")})
            self.emit("result", after.text if failed and after else "applied", call_id=cid,
                      is_error=failed)

    def quote(self, text: str) -> None:
        if self.pending:
            self.emit("result", text, call_id=self.pending)
            self.pending = None
            return
        cid = self.call("aider", {"after": "reply"})
        self.emit("result", text, call_id=cid, is_error=bool(_EDIT_FAILED.search(text)))


def read(path: Path, options: ReadOptions = DEFAULT_OPTIONS) -> list[RawSession]:
    lines = [ln.rstrip("\r") for ln in read_text(path, WHAT).split("\n")]
    starts = [i for i, ln in enumerate(lines) if HEADER.match(ln)] or [-1]
    if starts[0] > 0 and any(ln.strip() for ln in lines[:starts[0]]):
        starts.insert(0, -1)  # text before the first header: a run whose header was cut
    stem = path.name.removesuffix(".md").removesuffix(".aider.chat.history") or path.stem
    out: list[RawSession] = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        raw = RawSession(f"{stem}-{k + 1}", path.name, "aider")
        run = _Run(raw, path)
        blocks = _blocks(lines[start + 1:end], start + 2)
        seen_user = False
        for i, block in enumerate(blocks):
            run.where = f"{path}:{block.lineno}"
            if block.kind == "user":
                seen_user = True
                run.user(block.text)
            elif not seen_user:
                raw.quirks["banner_lines_skipped"] += len(block.lines)
            elif block.kind == "reply":
                run.pending = None
                run.reply(block.text, blocks[i + 1] if i + 1 < len(blocks) else None)
            else:
                run.quote(block.text)
        if seen_user:
            out.append(raw)
    if not out:
        from silas_exp.errors import SuiteError

        raise SuiteError(f"{path}:1: no user message (no '#### ' line) in any aider run; pass an "
                         "aider chat history with at least one exchange")
    return out
