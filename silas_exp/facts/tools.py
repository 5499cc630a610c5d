"""What a tool call does, read from its tool name and arguments, for every
format: ``read`` (Read, view, open, cat, aider /add …), ``edit``
(Edit, str_replace, apply_patch …), ``write`` (Write, create …), ``run``
(Bash, /run …), ``todo`` (TodoWrite) or ``other``; and the file paths and
command it names. Ground truth (:mod:`.truth`) and facts (:mod:`.facts`) both
read calls through here."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

Action = Literal["read", "edit", "write", "run", "todo", "other"]

_BY_TOOL: dict[str, Action] = {
    **dict.fromkeys(("read", "read_file", "view", "cat", "open", "notebookread", "add",
                     "read-only", "goto", "scroll_up", "scroll_down", "view_file"), "read"),
    **dict.fromkeys(("edit", "multiedit", "str_replace", "apply_patch", "edit_file", "notebookedit",
                     "insert", "replace", "patch"), "edit"),
    **dict.fromkeys(("write", "create", "write_file", "create_file"), "write"),
    **dict.fromkeys(("bash", "run", "shell", "execute", "run_command", "terminal", "exec",
                     "execute_bash", "python", "test"), "run"),
    **dict.fromkeys(("todowrite", "todo_write", "update_todos"), "todo"),
}
# str_replace_editor / text_editor carry the action in a "command" argument
_EDITOR_COMMANDS: dict[str, Action] = {"view": "read", "create": "write", "str_replace": "edit",
                                       "insert": "edit", "undo_edit": "edit"}
_PATH_KEYS = ("file_path", "path", "filename", "file", "notebook_path", "target_file")
_COMMAND_KEYS = ("command", "cmd", "input", "code")

FILE_EXTENSIONS = (
    "py pyi pyx ipynb js jsx mjs cjs ts tsx go rs java kt scala rb php c h cc cpp hpp cs swift m "
    "sh bash zsh fish ps1 md rst txt json jsonl yaml yml toml ini cfg conf lock xml html htm css "
    "scss sql csv tsv proto graphql vue svelte lua pl r jl dart ex exs erl hs ml tf env"
).split()
PATH = re.compile(
    r"(?<![\w/.\-<>])((?:~|\.{1,2})?/?(?:[\w.\-<>]+/)*[\w\-]+(?:\.[\w\-]+)*\.(?:"
    + "|".join(FILE_EXTENSIONS) + r")|(?:[\w.\-<>]+/)*(?:Makefile|Dockerfile|Justfile))(?![\w/])")


@dataclass(frozen=True)
class CallInfo:
    action: Action
    paths: tuple[str, ...]
    command: str | None  # the shell command of a run call (first line)


def path_key(path: str) -> str:
    """Paths compare by their last two parts: ``/repo/src/app.py`` and
    ``src/app.py`` are the same file to an agent that uses both."""
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    return "/".join(parts[-2:])


def paths_in(text: str) -> list[str]:
    """File paths named in free text, in order, without repeats."""
    seen: dict[str, None] = {}
    for m in PATH.finditer(text):
        p = m.group(1)
        if p.startswith("./"):
            p = p[2:]
        seen.setdefault(p, None)
    return list(seen)


def _first_line(value: Any) -> str:
    return str(value).strip().splitlines()[0].strip() if str(value).strip() else ""


def classify(tool: str | None, args: dict[str, Any]) -> CallInfo:
    if tool is None:
        return CallInfo("other", (), None)
    name = tool.lower().split("__")[-1]  # mcp__server__tool -> tool
    action: Action = _BY_TOOL.get(name, "other")
    if name in ("str_replace_editor", "text_editor", "str_replace_based_edit_tool"):
        action = _EDITOR_COMMANDS.get(str(args.get("command", "")), "other")
    command = None
    if action == "run":
        command = next((_first_line(args[k]) for k in _COMMAND_KEYS if k in args), None)
    paths: list[str] = []
    for key in _PATH_KEYS:
        if isinstance(args.get(key), str) and args[key]:
            paths.append(args[key])
    files = args.get("files")
    if isinstance(files, list):
        paths += [f for f in files if isinstance(f, str)]
    if not paths:  # SWE-agent "open src/x.py 40", aider "/run pytest tests/test_x.py"
        for key in _COMMAND_KEYS:
            if isinstance(args.get(key), str):
                paths = paths_in(args[key])
                break
    if name == "search_file" and paths:  # SWE-agent: search_file TERM FILE reads that file
        action = "read"
    return CallInfo(action, tuple(dict.fromkeys(paths)), command)
