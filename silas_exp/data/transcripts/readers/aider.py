"""aider chat histories (``.aider.chat.history.md``), as aider appends them.

How aider writes the file (``aider/io.py``): every run appends
``# aider chat started at <time>`` — a new session here (``<stem>-1``,
``<stem>-2`` …; a run with no user message is skipped). The user's input is
written line by line as ``#### <line>  `` (a blank input line is ``####   ``,
an empty input ``#### <blank>``); aider's own output (file adds,
``Applied edit to x.py``, ``Commit 1a2b3c4 …``, confirmations, lint, token
reports) as ``> <text>  `` — a bare ``>`` is an empty line, and a multi-line
message passed to ``tool_output`` has the ``> `` on its first line only and the
two trailing spaces on its last (the ``SearchReplaceNoExactMatch`` report of a
failed edit is written that way). Everything else is the model's reply.

Mapping:

* ``#### /run cmd``, ``/test cmd``, ``!cmd`` -> the user message and a ``run``
  call (``command``) whose result is the ``>`` block after it;
* ``/add``, ``/drop``, ``/read-only`` -> the user message and an ``add`` /
  ``drop`` call (``files``; ``read_only`` for ``/read-only``) with the ``>``
  block as its result;
* ``/ask``, ``/code``, ``/architect`` + text -> a user message with the text;
  other commands -> the user message as typed;
* a ``>`` block after a reply -> an ``aider`` call (``after: reply``) with the
  block as its result (edits applied, commits, lint; an error when it reports
  a failed edit); a ``>`` block after a plain user message (aider asking to
  add a mentioned file) -> an ``aider`` call ``after: user``;
* each ``SEARCH/REPLACE`` block of a reply (file path line, then a fence; or
  the path as the fence's first line) -> an ``edit`` call (``path``,
  ``search``, ``replace``) whose result is ``applied``, or aider's report when
  it says that block failed (``is_error``);
* ``/architect`` mode logs the architect's answer again as the editor model's
  ``####`` prompt (and some versions the request itself): a user message equal
  to the previous user message or to the previous reply is not a new turn.

Quirks counted: ``architect_repeats``, ``mode_commands``, ``other_commands``,
``abbreviated_commands`` (``/ru`` for ``/run``), ``blank_inputs_skipped``,
``banner_lines_skipped`` (the start-up lines before the first input),
``multiline_output_lines`` (lines of a multi-line aider message that had no
``>``), ``unclosed_fences`` (a reply whose code fence aider's next line
closed), ``edits_unconfirmed`` (an edit with neither ``Applied edit`` nor a
failure after it; its result is still ``applied``). Kept metadata:
``aider_version``, ``model``, ``edit_format``, ``editor_model``.

aider has no tool-call ids; the reader numbers them ``aider-<n>`` (unique in
the file).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from silas_exp.data.transcripts.events import Event, RawSession, ReadOptions
from silas_exp.data.transcripts.readers import DEFAULT_OPTIONS, read_text
from silas_exp.errors import SuiteError

WHAT = "aider chat history (.aider.chat.history.md)"
SUFFIX = ".aider.chat.history.md"
HEADER = re.compile(r"^# aider chat started at (.*?)\s*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_EDIT_BLOCK = re.compile(
    r"^<<<<<<< SEARCH[ \t]*\n(?P<search>(?:.*\n)*?)^=======[ \t]*\n(?P<replace>(?:.*\n)*?)"
    r"^>>>>>>> REPLACE[ \t]*$", re.MULTILINE)
_FAILED_BLOCK = re.compile(
    r"^## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in (?P<path>.+?)"
    r"[ \t]*\n<<<<<<< SEARCH[ \t]*\n(?P<search>(?:.*\n)*?)=======", re.MULTILINE)
_EDIT_FAILED = re.compile(r"did not conform to the edit format|SearchReplaceNoExactMatch|"
                          r"SEARCH/REPLACE blocks? failed to match|Malformed .*SEARCH/REPLACE",
                          re.IGNORECASE)
_APPLIED = re.compile(r"^(Applied edit to|Did not apply edit to) (.+?)(?: \(--dry-run\))?\s*$",
                      re.MULTILINE)
_BANNER = {"aider_version": re.compile(r"^Aider v(\S+)"),
           "model": re.compile(r"^(?:Main )?[Mm]odels?: (\S+)"),
           "edit_format": re.compile(r"^(?:Main )?[Mm]odels?: \S+ with (\S+) edit format"),
           "editor_model": re.compile(r"^Editor model: (\S+)")}

_RUN, _FILES, _MODES = ("/run", "/test"), ("/add", "/drop", "/read-only"), ("/ask", "/code",
                                                                          "/architect")
_COMMANDS = ("/add", "/architect", "/ask", "/chat-mode", "/clear", "/code", "/commit", "/context",
             "/copy", "/copy-context", "/diff", "/drop", "/edit", "/editor", "/editor-model",
             "/exit", "/git", "/help", "/lint", "/load", "/ls", "/map", "/map-refresh", "/model",
             "/models", "/multiline-mode", "/paste", "/quit", "/read-only", "/reasoning-effort",
             "/report", "/reset", "/run", "/save", "/settings", "/test", "/think-tokens",
             "/tokens", "/undo", "/voice", "/weak-model", "/web")


def looks_like(path: Path, head: str) -> bool:
    return path.name.endswith(SUFFIX) or bool(re.search(r"(?m)^# aider chat started at ", head))


@dataclass
class _Block:
    kind: str  # user | quote | reply
    lineno: int
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip("\n")


def _aider_style(lines: list[str]) -> bool:
    """aider ends every ``####`` and ``>`` line with two spaces (a markdown
    line break); a file that does so marks multi-line messages by them."""
    marked = [ln for ln in lines if ln.startswith(("#### ", "> "))]
    return bool(marked) and sum(ln.endswith("  ") for ln in marked) * 2 >= len(marked)


class _Lexer:
    """Lines of one run -> user / quote / reply blocks."""

    def __init__(self, lines: list[str], first_lineno: int, styled: bool, raw: RawSession) -> None:
        self.lines, self.first, self.styled, self.raw = lines, first_lineno, styled, raw
        self.blocks: list[_Block] = []
        self.blank_before = False  # the line before this one was empty

    def _is_user(self, line: str) -> bool:
        if not (line == "####" or line.startswith(("#### ", "####\t"))):
            return False
        return not self.styled or line.endswith("  ") or not line[5:].strip()

    def _is_quote(self, line: str) -> bool:
        if not line.startswith(">"):
            return False
        if self.styled and not line.endswith("  ") and line[1:].strip():
            # without aider's line break: a reply's blockquote or its ">>>>>>> REPLACE",
            # unless aider's output is going on (the first line of a multi-line message)
            return not self.blocks or self.blocks[-1].kind != "reply"
        return True

    def _add(self, kind: str, body: str, lineno: int) -> None:
        last = self.blocks[-1] if self.blocks else None
        # each input is written after a blank line; its own blank lines are "####   "
        if last and last.kind == kind and not (kind == "user" and self.blank_before):
            self.blocks[-1].lines.append(body)
        else:
            self.blocks.append(_Block(kind, lineno, [body]))

    def _continuation(self, i: int) -> int:
        """Index of the last line of a multi-line aider message whose first line
        is ``lines[i]`` (the first later line ending in two spaces), or ``i``."""
        for j in range(i + 1, len(self.lines)):
            line = self.lines[j]
            if self._is_user(line) and line.endswith("  "):
                return i
            if line.endswith("  "):
                return j
        return i

    def run(self) -> list[_Block]:
        fence: str | None = None  # the open fence of a reply (its lines are the reply's)
        i = 0
        while i < len(self.lines):
            line, lineno = self.lines[i], self.first + i
            self.blank_before = i > 0 and not self.lines[i - 1].strip()
            if fence is not None:
                if self.styled and line.endswith("  ") and (self._is_user(line)
                                                            or line.startswith("> ")):
                    fence = None  # aider wrote the next line: the model never closed it
                    self.raw.quirks["unclosed_fences"] += 1
                    continue
                m = _FENCE.match(line)
                if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                        and not line.strip()[len(m.group(1)):].strip():
                    fence = None
                self.blocks[-1].lines.append(line)
                i += 1
                continue
            if self._is_user(line):
                self._add("user", line[5:].rstrip(), lineno)
            elif self._is_quote(line):
                self._add("quote", line[1:].removeprefix(" ").rstrip(), lineno)
                end = self._continuation(i) if (self.styled and not line.endswith("  ")
                                                and line[1:].strip()) else i
                for extra in self.lines[i + 1:end + 1]:
                    self.blocks[-1].lines.append(extra.rstrip())
                if end > i:
                    self.raw.quirks["multiline_output_lines"] += end - i
                i = end
            elif not line.strip():
                if self.blocks:
                    self.blocks[-1].lines.append("")
            else:
                self._add("reply", line, lineno)
                m = _FENCE.match(line)
                if m:
                    fence = m.group(1)
            i += 1
        return self.blocks


def _norm(text: str) -> str:
    return "\n".join(ln.rstrip() for ln in text.strip().splitlines() if ln.strip())


def _edits(reply: str) -> list[tuple[str, str, str]]:
    """(path, search, replace) of every SEARCH/REPLACE block: the path is the
    last non-fence line before the block (aider's ``diff``: the line above the
    fence; ``diff-fenced``: the fence's first line)."""
    out = []
    for m in _EDIT_BLOCK.finditer(reply + "\n"):
        before = [ln.strip() for ln in reply[:m.start()].splitlines()[-3:]]
        path = next((ln for ln in reversed(before) if ln and not _FENCE.match(ln)), "")
        path = path.strip("`*: ").removeprefix("#").strip()
        out.append((path, m["search"].rstrip("\n"), m["replace"].rstrip("\n")))
    return out


def _command(text: str, raw: RawSession) -> tuple[str, str]:
    """(canonical command word or "", the rest) of a user message."""
    if text.startswith("!"):
        return "!", text[1:].strip()
    if not text.startswith("/"):
        return "", text
    first, _, more = text.partition("\n")
    word, _, rest = first.partition(" ")
    rest = rest + ("\n" + more if more else "")
    if word not in _COMMANDS:
        matches = [c for c in _COMMANDS if c.startswith(word)]
        if len(matches) == 1:  # aider runs a unique prefix as the command
            raw.quirks["abbreviated_commands"] += 1
            word = matches[0]
    return word, rest.strip()


def _files(rest: str) -> list[str]:
    try:
        return shlex.split(rest)
    except ValueError:
        return rest.split()


class _Session:
    def __init__(self, raw: RawSession, name: str, ids: list[int]) -> None:
        self.raw, self.name, self.ids = raw, name, ids
        self.last_user: str | None = None
        self.last_reply: str | None = None
        self.pending: str | None = None  # a command's call, waiting for the next > block
        self.where = ""

    def emit(self, kind: str, text: str = "", **kw) -> None:
        self.raw.events.append(Event(kind, text, where=self.where, **kw))  # type: ignore[arg-type]

    def call(self, tool: str, args: dict) -> str:
        self.ids[0] += 1
        cid = f"aider-{self.ids[0]}"
        self.emit("call", call_id=cid, tool=tool, args=args)
        return cid

    def user(self, text: str) -> None:
        if text.strip() == "<blank>":
            self.raw.quirks["blank_inputs_skipped"] += 1
            return
        word, rest = _command(text, self.raw)
        said = rest if word in _MODES and rest else text
        if said == self.last_user or (self.last_reply is not None
                                      and _norm(said) == _norm(self.last_reply)):
            # the editor model's copy of an /architect exchange: not a new turn
            self.raw.quirks["architect_repeats"] += 1
            self.pending = None
            return
        self.last_user, self.last_reply, self.pending = said, None, None
        if word in _RUN or word == "!":
            self.emit("user", text)
            self.pending = self.call("run", {"command": rest})
        elif word in _FILES:
            self.emit("user", text)
            args: dict = {"files": _files(rest)}
            if word == "/read-only":
                args["read_only"] = True
            self.pending = self.call("drop" if word == "/drop" else "add", args)
        elif word in _MODES:
            self.raw.quirks["mode_commands"] += 1
            self.emit("user", rest or text)
        else:
            if word:
                self.raw.quirks["other_commands"] += 1
            self.emit("user", text)

    def reply(self, text: str, after: str | None) -> None:
        self.pending = None
        self.last_reply = text
        self.emit("assistant", text)
        report = after or ""
        failed = {m["search"].rstrip("\n") for m in _FAILED_BLOCK.finditer(report + "\n")}
        done = {m.group(2).strip(): m.group(0).strip() for m in _APPLIED.finditer(report)}
        for path, search, replace in _edits(text):
            cid = self.call("edit", {"path": path, "search": search, "replace": replace})
            if search in failed or (not failed and _EDIT_FAILED.search(report)):
                self.emit("result", report, call_id=cid, is_error=True)
            elif failed:  # aider names the blocks that failed; the others were applied
                self.emit("result", "applied", call_id=cid)
            elif path in done and done[path].startswith("Did not"):
                self.emit("result", done[path], call_id=cid)
            else:
                if path not in done:
                    self.raw.quirks["edits_unconfirmed"] += 1
                self.emit("result", "applied", call_id=cid)

    def quote(self, text: str, after_reply: bool) -> None:
        if self.pending:
            self.emit("result", text, call_id=self.pending)
            self.pending = None
            return
        cid = self.call("aider", {"after": "reply" if after_reply else "user"})
        self.emit("result", text, call_id=cid, is_error=bool(_EDIT_FAILED.search(text)))


def _stem(path: Path) -> str:
    name = path.name
    if name.endswith(SUFFIX):
        return name[: -len(SUFFIX)].rstrip("._-") or "aider"
    return path.stem or "aider"


def read(path: Path, options: ReadOptions = DEFAULT_OPTIONS) -> list[RawSession]:
    lines = [ln.rstrip("\r") for ln in read_text(path, WHAT).split("\n")]
    starts = [i for i, ln in enumerate(lines) if HEADER.match(ln)]
    if not starts and not any(ln.startswith("####") for ln in lines):
        raise SuiteError(f"{path.name}:1: no '# aider chat started at' header and no '#### ' "
                         f"input line; this is not an {WHAT}: pass the .aider.chat.history.md "
                         "aider wrote, or the --format of the file")
    if not starts or any(ln.strip() for ln in lines[:starts[0]]):
        starts.insert(0, -1)  # text before the first header: a run whose header was cut
    styled = _aider_style(lines)
    stem, ids = _stem(path), [0]
    out: list[RawSession] = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        raw = RawSession(f"{stem}-{k + 1}", path.name, "aider")
        if start >= 0:
            raw.meta["started_at"] = HEADER.match(lines[start]).group(1)  # type: ignore[union-attr]
        blocks = _Lexer(lines[start + 1:end], start + 2, styled, raw).run()
        run = _Session(raw, path.name, ids)
        seen_user = False
        for i, block in enumerate(blocks):
            run.where = f"{path.name}:{block.lineno}"
            if block.kind == "user":
                seen_user = True
                run.user(block.text)
            elif not seen_user:
                raw.quirks["banner_lines_skipped"] += sum(1 for ln in block.lines if ln.strip())
                for ln in block.lines:
                    for key, rx in _BANNER.items():
                        m = rx.match(ln.strip())
                        if m and key not in raw.meta:
                            raw.meta[key] = m.group(1)
            elif block.kind == "reply":
                nxt = blocks[i + 1] if i + 1 < len(blocks) else None
                run.reply(block.text, nxt.text if nxt and nxt.kind == "quote" else None)
            else:
                run.quote(block.text, after_reply=i > 0 and blocks[i - 1].kind == "reply")
        if any(e.kind == "user" for e in raw.events):
            out.append(raw)
    return out
