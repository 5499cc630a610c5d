"""aider: ``.aider.chat.history.md`` as aider 0.86 appends it (``aider/io.py``)."""

from __future__ import annotations

import math
import shlex
from pathlib import Path

from tests.transcripts.script import Call, Script
from tests.transcripts.writers._common import short_id


class _Aider:
    """Appends what aider 0.86's ``InputOutput`` writes for each event."""

    def __init__(self, s: Script) -> None:
        self.s, self.out = s, [f"\n# aider chat started at {s.started.replace('T', ' ')}\n\n"]
        self.in_chat: set[str] = set()
        self.created: set[str] = set()  # new files of the reply being applied
        self.sent, self.cost, self.commits = 2_100, 0.0, 0
        for line in (f"{s.cwd.rsplit('/src/', 1)[0]}/.local/bin/aider --model sonnet",
                     "Aider v0.86.1",
                     "Main model: anthropic/claude-sonnet-4-5-20250929 with diff edit format, "
                     "infinite output", "Weak model: anthropic/claude-haiku-4-5-20251001",
                     "Git repo: .git with 31 files", "Repo-map: using 4096 tokens, auto refresh"):
            self.tool(line)

    def tool(self, text: str) -> None:  # tool_output / confirm_ask: one "> " for the whole text
        self.out.append(f"> {text.strip()}  \n")

    def user(self, text: str) -> None:
        self.out.append("\n#### " + "  \n#### ".join(text.splitlines()) + "  \n")

    def reply(self, parts: list[str]) -> None:
        self.out.append("\n" + "\n\n".join(parts).strip() + "\n\n")
        received = sum(len(p) for p in parts) // 4
        self.sent += 350 + received
        cost = (self.sent * 3 + received * 15) / 1e6
        self.cost += cost
        self.tool(f"Tokens: {_k(self.sent)} sent, {_k(received)} received. "
                  f"Cost: ${_cost(cost)} message, ${_cost(self.cost)} session.")

    def command(self, call: Call) -> bool:
        """A read or run the user types before the message; False: nothing to type."""
        if call.tool == "Read":
            return self.add(call.args["file_path"])
        if call.tool not in ("Bash", "Grep"):
            return False
        cmd = call.args["command"] if call.tool == "Bash" else \
            f"grep -rn {shlex.quote(call.args['pattern'])} src tests"
        self.user(f"/run {cmd}")
        tokens = len(call.result) / 4 / 1000
        self.tool(f"Add {tokens:.1f}k tokens of command output to the chat? (Y)es/(N)o [Yes]: y")
        n = len(call.result.strip().splitlines())
        self.tool(f"Added {n} line{'s' if n != 1 else ''} of output to the chat.")
        return True

    def add(self, path: str) -> bool:
        if path in self.in_chat:
            return False  # aider keeps an added file in the chat: nothing to read again
        self.in_chat.add(path)
        self.user(f"/add {path}")
        self.tool(f"Added {path} to the chat")
        return True

    def commit(self, paths: list[str]) -> None:
        """What aider prints after applying a reply's edits: new files confirmed,
        edits applied, the auto-commit."""
        if not paths:
            return
        for p in sorted(self.created):  # confirm_ask("Create new file?", subject=path)
            self.tool(p)
            self.tool("Create new file? (Y)es/(N)o [Yes]: y")
        self.in_chat |= self.created
        self.created.clear()
        for p in dict.fromkeys(paths):
            self.tool(f"Applied edit to {p}")
        self.commits += 1
        names = ", ".join(dict.fromkeys(Path(p).name for p in paths))
        commit = short_id(f"{self.s.sid}/commit{self.commits}", 7, "0123456789abcdef")
        self.tool(f"Commit {commit} refactor: update {names}")


def _k(n: int) -> str:
    return str(n) if n < 1000 else f"{n / 1000:.1f}k" if n < 10_000 else f"{round(n / 1000)}k"


def _cost(v: float) -> str:
    return f"{v:.2f}" if v >= 0.01 else f"{v:.{max(2, 2 - int(math.log10(v)))}f}"


def _block(call: Call) -> str:
    path = call.args["file_path"]
    search, replace = (call.args["old_string"], call.args["new_string"]) if call.tool == "Edit" \
        else ("", call.args["content"])
    return (f"{path}\n```python\n<<<<<<< SEARCH\n{_ended(search)}=======\n{_ended(replace)}"
            ">>>>>>> REPLACE\n```")


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _failed_report(call: Call, files: dict[str, str]) -> str:
    """``EditBlockCoder.apply_edits``' ValueError for one failed block."""
    path, search, replace = (call.args[k] for k in ("file_path", "old_string", "new_string"))
    wanted = search.strip()
    similar = [ln for ln in files.get(path, "").split("\n") if ln.strip() == wanted]
    hint = (f"Did you mean to match some of these actual lines from {path}?\n\n```\n"
            + "\n".join(similar) + "\n```\n\n") if similar else ""
    return (f"# 1 SEARCH/REPLACE block failed to match!\n\n"
            f"## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in "
            f"{path}\n<<<<<<< SEARCH\n{_ended(search)}=======\n{_ended(replace)}>>>>>>> REPLACE"
            f"\n\n{hint}The SEARCH section must exactly match an existing block of lines including "
            "all white space, comments, indentation, docstrings, etc\n")


def aider(s: Script) -> tuple[str, str]:
    """(file name, text) of the chat history. An exchange becomes: the reads and
    runs the model made before answering, typed by the user (``/add``, ``/run``);
    ``/add`` of the files the answer edits; the user's message; the reply with
    the edits as SEARCH/REPLACE blocks (a failed block is reported and the model
    answers again with no new input); the runs after it typed by the user, and
    aider's "What's wrong? Fix" when one failed and the model went on. An
    exchange with no model text and no edit is its commands alone."""
    a = _Aider(s)
    for ex in s.exchanges:
        user: str | None = ex.user
        parts: list[str] = []  # the reply being written: text and edit blocks
        edited: list[str] = []
        for i, step in enumerate(ex.steps):
            edits = [c for c in step.calls if c.tool in ("Edit", "Write")]
            runs = [c for c in step.calls if c.tool in ("Bash", "Grep", "Read")]
            if user is not None and not parts and not edits and step.calls:
                for c in runs:  # what the model looked at first: the user's commands
                    a.command(c)
                continue
            if user is not None and (step.text or edits):
                for c in (c for st in ex.steps[i:] for c in st.calls if c.tool == "Edit"):
                    a.add(c.args["file_path"])
                a.user(user)
                user = None
            parts += [step.text] if step.text else []
            for c in edits:
                parts.append(_block(c))
                if c.error:  # only an Edit fails: aider reports the block
                    a.reply(parts)
                    a.tool("The LLM did not conform to the edit format.")
                    a.tool("https://aider.chat/docs/troubleshooting/edit-errors.html")
                    a.tool(_failed_report(c, s.files))
                    parts = []
                else:
                    edited.append(c.args["file_path"])
                    if c.tool == "Write":
                        a.created.add(c.args["file_path"])
            if runs:
                if parts:
                    a.reply(parts)
                    a.commit(edited)
                    parts, edited = [], []
                for c in runs:
                    a.command(c)
                if i + 1 < len(ex.steps):
                    user = "What's wrong? Fix" if any(c.error for c in runs) else "Go on."
        if parts:
            a.reply(parts)
            a.commit(edited)
    return ".aider.chat.history.md", "".join(a.out)
