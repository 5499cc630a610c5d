"""A coding session as a script, before any tool wrote it down: what the user
asked, what the model said and which tools it called with what results.
:mod:`tests.transcripts.writers` renders it in each transcript format's own
on-disk shape.

The session (a retry bug in an HTTP client, then a tidy-up of one module per
round) is long enough to put the window under eviction pressure, and holds
what the importer derives things from: files read and then edited, a failed
test run quoted back, a failed edit retried, commands run again, decisions
("I'll use …", "let's go with …"), open tasks, a new file, and PII (a home
path, a git author and e-mail, an API key in a settings file).

Tool names and arguments are Claude Code's (``Read``, ``Edit``, ``Write``,
``Bash``, ``Grep``, ``TodoWrite``); paths are relative to ``Script.cwd``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MODULES = ("auth", "cookies", "proxies", "timeouts", "pooling", "redirects", "streaming",
           "encoding", "hooks", "adapters", "caching", "metrics", "retries", "sessions")


@dataclass(frozen=True)
class Call:
    """A tool call and what it printed. Writers put Edit, Write and TodoWrite
    results in their own tool's words; a failed Edit's ``result`` is Claude
    Code's message."""

    tool: str  # Read | Edit | Write | Bash | Grep | TodoWrite
    args: dict[str, Any]  # paths relative to the script's cwd
    result: str = ""
    error: bool = False


@dataclass(frozen=True)
class Step:
    """One model call: its thinking and text, then its tool calls (run in parallel)."""

    text: str = ""
    calls: tuple[Call, ...] = ()
    thinking: str = ""


@dataclass(frozen=True)
class Exchange:
    user: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Script:
    sid: str  # a short name; writers derive each format's own ids from it
    cwd: str
    system: str
    exchanges: tuple[Exchange, ...]
    started: str = "2026-10-03T09:00:00"
    files: dict[str, str] = field(default_factory=dict)  # path -> content before the session


def numbered(text: str, start: int = 1) -> list[tuple[int, str]]:
    return list(enumerate(text.split("\n"), start))


def _client() -> str:
    body = [
        '"""HTTP client with retries."""',
        "",
        "import time",
        "",
        "from httpkit.settings import load_settings",
        "",
        "",
        "def fetch(session, url, attempts=3):",
        "    for attempt in range(attempts):",
        "        resp = session.get(url)",
        "        if resp.status_code == 429:",
        f"            {BAD}",
        "            time.sleep(delay)",
        "            continue",
        "        return resp",
        "    raise RetryBudgetExceeded(url, attempts)",
        "",
    ]
    body += [f"    stats_{i} = collect_stat_{i}(resp)  # bookkeeping step {i}" for i in range(24)]
    return "\n".join(body) + "\n"


def _module(name: str) -> str:
    cls = name.title()
    body = [
        f'"""{cls} support for httpkit sessions."""',
        "",
        "import logging",
        "",
        "log = logging.getLogger(__name__)",
        "",
        "",
        f"class {cls}Handler:",
        f"    def handle_{name}(self, request):",
        "        pass",
        "",
        f"    def apply_{name}(self, request, response):",
    ]
    body += [f"        response.stats_{i} = collect_stat_{i}(request)  # step {i}"
             for i in range(34)]
    body += ["        return response", ""]
    return "\n".join(body)


def _pytest(target: str, failure: str | None, passed: int, root: str) -> str:
    """pytest's output for ``target``: ``failure`` is ``<test id> - <error>``."""
    head = ("============================= test session starts ==============================\n"
            "platform linux -- Python 3.12.4, pytest-8.3.2, pluggy-1.5.0\n"
            f"rootdir: {root}\nconfigfile: pyproject.toml\n"
            f"collected {passed + bool(failure)} items\n\n")
    if failure is None:
        return head + f"{target} {'.' * passed}{' ' * 40}[100%]\n\n{passed} passed in 0.12s"
    test, error = failure.split(" - ", 1)
    return head + (
        f"{target} F{'.' * passed}{' ' * 40}[100%]\n\n"
        "=================================== FAILURES ===================================\n"
        f"______________________ {test.split('::')[-1]} ______________________\n\n"
        f"E   {error}\n\n{target}:14: {error.split(':')[0]}\n"
        "=========================== short test summary info ============================\n"
        f"FAILED {failure}\n1 failed, {passed} passed in 0.21s")


def _edit(path: str, old: str, new: str, failed: bool = False) -> Call:
    message = f"String to replace not found in file.\nString: {old}" if failed else ""
    return Call("Edit", {"file_path": path, "old_string": old, "new_string": new}, message, failed)


def _bash(command: str, output: str, failed: bool = False, description: str = "") -> Call:
    args = {"command": command} | ({"description": description} if description else {})
    return Call("Bash", args, output, failed)


BAD = "delay = int(resp.headers['retry_after'])"
GOOD = "delay = int(resp.headers.get('Retry-After', '1'))"
CLIENT = "src/httpkit/client.py"
SETTINGS = "config/settings.toml"
TODOS = [{"content": f"Fix the Retry-After lookup in {CLIENT}", "status": "in_progress",
          "activeForm": "Fixing the Retry-After lookup"},
         {"content": "Add a test for HTTP 503 retries", "status": "pending",
          "activeForm": "Adding a test for HTTP 503 retries"},
         {"content": "Tidy the handler modules", "status": "pending",
          "activeForm": "Tidying the handler modules"}]


def _bug_fix(files: dict[str, str], cwd: str, author: str) -> list[Exchange]:
    """The retry bug: read, a failing test quoted back, a failed edit retried,
    the tests run again, a git author and a committed API key."""
    tests = "python -m pytest tests/test_client.py -q"
    email = f"{author.lower().replace(' ', '.')}@example.org"
    crash = "tests/test_client.py::test_retry_after - KeyError: 'retry_after'"
    log = ("commit 4c1d2e7a9b3f5e6d8c0a1b2c3d4e5f60718293a4\n"
           f"Author: {author} <{email}>\nDate:   Tue Sep 30 17:12:09 2026 +0200\n\n"
           "    retry: honour the server's delay on 429\n")
    return [
        Exchange(f"The client crashes on 429 responses, please fix {CLIENT}", (
            Step("Let me look at the client and reproduce the crash first.",
                 (Call("TodoWrite", {"todos": TODOS}), Call("Read", {"file_path": CLIENT},
                                                            files[CLIENT])),
                 thinking="The crash is probably in the retry path; read it before changing it."),
            Step("", (_bash(tests, _pytest("tests/test_client.py", crash, 1, cwd), failed=True,
                            description="Run the client tests"),)),
            Step("The 429 test fails with KeyError: 'retry_after': fetch() indexes a header "
                 "the server never sends."),
        )),
        Exchange("What do you think is wrong?", (
            Step("The server sends the header as Retry-After, and requests' headers are "
                 "case-insensitive but not underscore-insensitive. I'll use "
                 "resp.headers.get('Retry-After', '1') instead of indexing retry_after.",
                 (_edit(CLIENT, f"        {BAD}", f"        {GOOD}", failed=True),)),
            Step("The line is indented by twelve spaces; retry with the exact text.",
                 (_edit(CLIENT, f"            {BAD}", f"            {GOOD}"),)),
        )),
        Exchange("Run the tests again", (
            Step("", (_bash(tests, _pytest("tests/test_client.py", None, 2, cwd),
                            description="Run the client tests again"),)),
            Step("Both client tests pass now."),
        )),
        Exchange("Who changed that line last? And where does the client get its key?", (
            Step("", (_bash(f"git log -1 -- {CLIENT}", log,
                            description="Show the last commit of the client"),
                      Call("Read", {"file_path": SETTINGS}, files[SETTINGS]))),
            Step("Commit 4c1d2e7 added the retry_after lookup. The client reads api_key from "
                 f"{SETTINGS} through load_settings; we should use an environment variable "
                 "rather than a key committed to the repository."),
        )),
    ]


def _tidy(r: int, m: str, files: dict[str, str], cwd: str) -> Exchange:
    """One module tidied: read, grep, edit; every third round a test still
    uses what was removed, fails, is fixed and rerun."""
    path, test = f"src/httpkit/{m}.py", f"tests/test_{m}.py"
    used = r % 3 == 1
    grep = f"{path}:9:    def handle_{m}(self, request):"
    if used:
        grep += f"\n{test}:14:    assert handler.handle_{m}(request) is None"
    steps = [
        Step(f"Reading {path}.", (Call("Read", {"file_path": path}, files[path]),)),
        Step("", (Call("Grep", {"pattern": f"handle_{m}", "output_mode": "content", "-n": True},
                       grep),)),
        Step(f"handle_{m} is a stub that does nothing; let's go with removing it"
             + (f" and updating {test}." if used else "."),
             (_edit(path, f"    def handle_{m}(self, request):\n        pass\n\n", ""),)),
    ]
    if used:
        cmd = f"python -m pytest {test} -q"
        fail = (f"{test}::test_{m}_roundtrip - AttributeError: '{m.title()}Handler' object "
                f"has no attribute 'handle_{m}'")
        steps += [
            Step("", (_bash(cmd, _pytest(test, fail, 2, cwd), failed=True),)),
            Step(f"{test} still calls handle_{m}; I'll assert on apply_{m} instead of "
                 "restoring the stub.",
                 (_edit(test, f"    assert handler.handle_{m}(request) is None",
                        f"    assert handler.apply_{m}(request, response)"),)),
            Step("", (_bash(cmd, _pytest(test, None, 3, cwd)),)),
        ]
    return Exchange(f"Now look at {path} and tidy it up", tuple(steps))


def _closing(files: dict[str, str]) -> list[Exchange]:
    """A new file, a look back at the fix, and the todo list with tasks still open."""
    compat = "src/httpkit/_compat.py"
    todos = [{**TODOS[0], "status": "completed"}, TODOS[1],
             {"content": "Document the retry policy in README.md", "status": "pending",
              "activeForm": "Documenting the retry policy"}]
    return [
        Exchange("Add a small compat module for the sleep function so tests can patch it", (
            Step(f"I'll create {compat} with a sleep wrapper.",
                 (Call("Write", {"file_path": compat, "content":
                                 '"""Indirection tests can patch."""\n\nimport time\n\n\n'
                                 "def sleep(seconds):\n    time.sleep(seconds)\n"}),)),
        )),
        Exchange("As we discussed earlier, is the Retry-After fix still in place?", (
            Step("", (Call("Read", {"file_path": CLIENT}, files[CLIENT].replace(BAD, GOOD)),)),
            Step("Yes: client.py still reads Retry-After with a default of 1 second.",
                 (Call("TodoWrite", {"todos": todos}),)),
        )),
    ]


def coding_script(sid: str = "httpkit", rounds: int = 10, user: str = "dana",
                  author: str = "Dana Whitfield") -> Script:
    """The session with ``rounds`` tidy-up rounds (at most ``len(MODULES)``), run by
    ``user`` (the home folder) on a repository whose last commit is ``author``'s."""
    cwd = f"/home/{user}/src/httpkit"
    files = {CLIENT: _client(), SETTINGS: '[client]\nbase_url = "https://api.example.net"\n'
             'api_key = "sk-live-7f3Kq9Zx2Lm8Vb4Nc6Rt"\ntimeout = 30\n'}
    files |= {f"src/httpkit/{m}.py": _module(m) for m in MODULES[:rounds]}
    exchanges = [*_bug_fix(files, cwd, author),
                 *(_tidy(r, m, files, cwd) for r, m in enumerate(MODULES[:rounds])),
                 *_closing(files)]
    return Script(sid, cwd, "You are a coding agent working in the user's repository.",
                  tuple(exchanges), files=files)
