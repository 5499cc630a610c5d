"""What the writers share: ids, a clock, file contents as the session changes
them, and the words Claude Code's tools answer with (the harness's tools use
the same)."""

from __future__ import annotations

import difflib
import hashlib
from datetime import datetime, timedelta
from typing import Any

from tests.transcripts.script import Call, numbered

MODEL = "claude-sonnet-4-5-20250929"
CLAUDE_CODE_VERSION = "2.0.31"

B62 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def short_id(seed: str, n: int, alphabet: str = B62) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:n])


def uuid(seed: str) -> str:
    h = hashlib.sha256(seed.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


class Clock:
    def __init__(self, start: str) -> None:
        self.t = datetime.fromisoformat(start)

    def tick(self, seconds: float = 7.0) -> str:
        self.t += timedelta(seconds=seconds)
        return self.t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class Files:
    """File contents as the session changes them, for the snippets tools show."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = dict(files)

    def edit(self, path: str, old: str, new: str) -> list[tuple[int, str]]:
        """Apply the edit; the numbered lines around it, as ``cat -n`` shows them."""
        text = self.files.get(path)
        if text is None or old not in text:
            return numbered(new or "", 14)
        at = text[:text.index(old)].count("\n")
        self.files[path] = text.replace(old, new, 1)
        lines = numbered(self.files[path])
        return lines[max(0, at - 3): at + max(new.count("\n"), 1) + 3]

    def write(self, path: str, content: str) -> None:
        self.files[path] = content

    def diff(self, before: dict[str, str]) -> str:
        """``git diff`` of the files changed since ``before``."""
        out = []
        for path, text in sorted(self.files.items()):
            old = before.get(path)
            if old == text:
                continue
            out.append(f"diff --git a/{path} b/{path}\n" + ("new file mode 100644\n" if old is None
                                                           else ""))
            out += difflib.unified_diff((old or "").splitlines(True), text.splitlines(True),
                                        "/dev/null" if old is None else f"a/{path}", f"b/{path}")
        return "".join(out)


def tool_text(call: Call, files: Files, cwd: str) -> str:
    """What Claude Code's (and the harness's) tools answer to ``call``."""
    a, path = call.args, f"{cwd}/{call.args.get('file_path', '')}"
    if call.tool == "Read":
        return "\n".join(f"{n:6}\u2192{line}" for n, line in numbered(call.result.rstrip("\n")))
    if call.tool == "Edit":
        if call.error:
            return f"<tool_use_error>{call.result}</tool_use_error>"
        snippet = files.edit(a["file_path"], a["old_string"], a["new_string"])
        return (f"The file {path} has been updated. Here's the result of running `cat -n` on a "
                "snippet of the edited file:\n" + "\n".join(f"{n:6}\u2192{t}" for n, t in snippet))
    if call.tool == "Write":
        files.write(a["file_path"], a["content"])
        return f"File created successfully at: {path}"
    if call.tool == "TodoWrite":
        return ("Todos have been modified successfully. Ensure that you continue to use the todo "
                "list to track your progress. Please proceed with the current tasks if applicable")
    if call.tool == "Grep":
        return "\n".join(f"{cwd}/{line}" for line in call.result.split("\n"))
    return (f"Exit code 1\n{call.result}" if call.error else call.result)


def abs_args(call: Call, cwd: str) -> dict[str, Any]:
    return {k: f"{cwd}/{v}" if k == "file_path" else v for k, v in call.args.items()}
