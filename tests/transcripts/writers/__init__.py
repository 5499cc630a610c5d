"""A :class:`~tests.transcripts.script.Script` written in each transcript
format's real on-disk shape, as the tool itself writes it:

* ``claude-code`` — ``<session uuid>.jsonl``: one record per line with
  ``uuid`` / ``parentUuid`` / ``sessionId`` / ``cwd`` / ``version``; one API
  message written as one record per content block (thinking, text, each
  ``tool_use``) sharing ``message.id`` and ``requestId``; each
  ``tool_result`` in a user record of its own with its ``toolUseResult``; a
  ``file-history-snapshot`` before each prompt;
* ``aider`` — ``.aider.chat.history.md`` as aider 0.86 appends it
  (``aider/io.py``): ``#### `` input lines, ``> `` tool output ending in two
  spaces, the reply as written, SEARCH/REPLACE blocks, a failed block's
  report as one multi-line ``tool_output``. aider's model calls no tools:
  reads are ``/add``, shell commands and greps are ``/run`` typed before the
  message (whose output aider 0.86 does not log, only "Added N lines of
  output to the chat."), edits are blocks of the reply, a failed run is
  followed by aider's "What's wrong? Fix" prompt, and the todo list has no
  counterpart;
* ``swe-agent`` — ``<instance>.traj`` of SWE-agent 1.x function calling: the
  issue, then one step per tool call (``str_replace_editor``, ``bash``,
  ``submit``), each in ``trajectory`` (thought, action, observation, query)
  and in ``history`` (assistant ``tool_calls``, ``tool`` observation); the
  repository is ``/testbed`` and only the first user message (the issue)
  exists;
* ``openai`` — chat JSONL, one message a line: assistant ``tool_calls``
  (arguments as a JSON string) answered by ``role: tool`` messages;
* ``silas`` — the harness's session JSON, items with its own
  ``ContextItem`` field names (``content``, ``token_count``, ``turn_number``,
  ``source``).

One module per format (as :mod:`silas_exp.data.transcripts.readers`), each with
``<format>(script) -> (file name, text)``; ``write`` puts one in a folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.transcripts.script import Script
from tests.transcripts.writers.aider import aider
from tests.transcripts.writers.claude_code import claude_code
from tests.transcripts.writers.openai import openai
from tests.transcripts.writers.silas import silas
from tests.transcripts.writers.swe_agent import swe_agent

FORMATS = ("claude-code", "aider", "swe-agent", "openai", "silas")
WRITERS: dict[str, Callable[[Script], tuple[str, str]]] = {
    "claude-code": claude_code, "aider": aider, "swe-agent": swe_agent, "openai": openai,
    "silas": silas}


def write(fmt: str, script: Script, folder: Path) -> Path:
    """The script in format ``fmt``, written under ``folder/<fmt>/`` (each tool's file name)."""
    name, text = WRITERS[fmt](script)
    path = folder / fmt / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_all(script: Script, folder: Path) -> dict[str, Path]:
    return {fmt: write(fmt, script, folder) for fmt in FORMATS}
