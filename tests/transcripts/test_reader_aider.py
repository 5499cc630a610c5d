"""The aider reader on histories written the way aider/io.py appends them."""

from __future__ import annotations

from pathlib import Path

import pytest

from silas_exp.data.transcripts.readers import aider, head_of
from silas_exp.errors import SuiteError

FIX = Path(__file__).parent / "fixtures"
BASIC = FIX / "aider_basic.aider.chat.history.md"
ARCHITECT = FIX / "aider_architect.aider.chat.history.md"
SWE = (FIX / "swe_agent_fc.traj", FIX / "swe_agent_legacy.traj")


def rows(session) -> list[tuple]:
    """(kind, text-or-tool, call id, is_error) per event; result texts cut to their first line."""
    out = []
    for e in session.events:
        if e.kind == "call":
            out.append(("call", e.tool, e.call_id, e.is_error))
        elif e.kind == "result":
            out.append(("result", e.text.split("\n")[0], e.call_id, e.is_error))
        else:
            out.append((e.kind, e.text.split("\n")[0], None, False))
    return out


def write(tmp_path: Path, text: str, name: str = "t.aider.chat.history.md") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_each_run_is_a_session_with_its_banner_metadata():
    one, two = aider.read(BASIC)
    assert (one.session_id, two.session_id) == ("aider_basic-1", "aider_basic-2")
    assert one.source == two.source == "aider_basic.aider.chat.history.md"
    assert one.format == "aider"
    assert one.meta == {"started_at": "2024-07-18 09:12:44", "aider_version": "0.45.1",
                        "model": "gpt-4o", "edit_format": "diff"}
    assert two.meta["aider_version"] == "0.86.1"
    assert two.meta["model"] == "anthropic/claude-sonnet-4-20250514"
    assert one.quirks["banner_lines_skipped"] == 6
    assert one.events[0].where == "aider_basic.aider.chat.history.md:11"


def test_add_run_and_an_applied_edit_with_its_commit():
    one, _ = aider.read(BASIC)
    assert rows(one) == [
        ("user", "/add slugify/core.py", None, False),
        ("call", "add", "aider-1", False),
        ("result", "Added slugify/core.py to the chat", "aider-1", False),
        ("user", "/run pytest -q", None, False),
        ("call", "run", "aider-2", False),
        ("result", "F.                                                                       [100%]",
         "aider-2", False),
        ("user", "Fix slugify so accented letters are transliterated instead of dropped.", None,
         False),
        ("assistant", "The accents are dropped because `slugify` removes every non-ASCII character "
         "before", None, False),
        ("call", "edit", "aider-3", False),
        ("result", "applied", "aider-3", False),
        ("call", "edit", "aider-4", False),
        ("result", "applied", "aider-4", False),
        ("call", "aider", "aider-5", False),
        ("result", "Tokens: 1,874 sent, 236 received. Cost: $0.01 message, $0.01 session.",
         "aider-5", False),
        ("user", "/run pytest -q", None, False),
        ("call", "run", "aider-6", False),
        ("result", "..                                                                       [100%]",
         "aider-6", False),
    ]
    calls = {e.call_id: e for e in one.events if e.kind == "call"}
    assert calls["aider-1"].args == {"files": ["slugify/core.py"]}
    assert calls["aider-2"].args == {"command": "pytest -q"}
    assert calls["aider-3"].args == {"path": "slugify/core.py", "search": "import re",
                                     "replace": "import re\nimport unicodedata"}
    assert calls["aider-5"].args == {"after": "reply"}
    results = {e.call_id: e.text for e in one.events if e.kind == "result"}
    # aider 0.45 wrote /run output with "> " on its first line only: all of it is the result
    assert "E       AssertionError: assert 'crme-brle' == 'creme-brulee'" in results["aider-2"]
    assert results["aider-2"].count("1 failed, 1 passed in 0.04s") == 2
    assert "[Y/n/instructions] y" in results["aider-2"]
    assert results["aider-5"].splitlines()[1:] == [
        "Applied edit to slugify/core.py",
        "Commit 3f2a9c1 fix: transliterate accented characters in slugify"]
    assert one.quirks["multiline_output_lines"] == 14


def test_failed_search_replace_block_is_an_error_and_the_retry_applies():
    _, two = aider.read(BASIC)
    edits = [(e.call_id, e.args["path"], e.args["search"].strip()) for e in two.events
             if e.kind == "call" and e.tool == "edit"]
    assert edits == [("aider-9", "slugify/cli.py", 'parser.add_argument("text")'),
                     ("aider-10", "slugify/cli.py", "args = parser.parse_args(argv)\n"
                      "    print(slugify(args.text))"),
                     ("aider-12", "slugify/cli.py",
                      'parser.add_argument("text", help="the text to slugify")'),
                     ("aider-15", "slugify/core.py", "def slugify(text):")]
    res = {e.call_id: e for e in two.events if e.kind == "result"}
    assert res["aider-9"].is_error and "SearchReplaceNoExactMatch" in res["aider-9"].text
    # the whole multi-line report is aider's, including its ">>>>>>> REPLACE" and fence
    assert "Just reply with fixed versions of the block above that failed to match." \
        in res["aider-9"].text
    assert ">>>>>>> REPLACE" in res["aider-9"].text
    assert (res["aider-10"].text, res["aider-10"].is_error) == ("applied", False)
    assert res["aider-11"].is_error  # aider's own block that reported the failure
    assert (res["aider-12"].text, res["aider-12"].is_error) == ("applied", False)
    assert two.quirks["edits_unconfirmed"] == 0
    # the retry is the model's second reply in the same turn: no user message before it
    i = next(i for i, e in enumerate(two.events)
             if e.kind == "assistant" and e.text.startswith("slugify/cli.py"))
    assert [(e.kind, e.call_id) for e in two.events[i - 2:i + 1]] == [
        ("call", "aider-11"), ("result", "aider-11"), ("assistant", None)]


def test_commands_modes_and_multiline_input():
    _, two = aider.read(BASIC)
    users = [e.text for e in two.events if e.kind == "user"]
    assert users == ["/add slugify/cli.py", "does the cli accept more than one word?",
                     'Let it take several words and join them with spaces.\n\n'
                     'Also add a --sep option, default "-".',
                     "/test pytest -q tests/test_cli.py", "!git log --oneline -3"]
    assert two.quirks["mode_commands"] == 1
    assert two.quirks["architect_repeats"] == 1  # /ask logs the question a second time
    calls = {e.call_id: (e.tool, e.args) for e in two.events if e.kind == "call"}
    assert calls["aider-14"] == ("run", {"command": "pytest -q tests/test_cli.py"})
    assert calls["aider-17"] == ("run", {"command": "git log --oneline -3"})
    res = {e.call_id: e.text for e in two.events if e.kind == "result"}
    assert res["aider-14"] == "Added 9 lines of output to the chat."
    assert res["aider-17"].startswith("c41d9e2 (HEAD -> main) feat: slugify takes a separator")
    # a failing /test sends its output to the model: the reply follows the run's result
    kinds = [(e.kind, e.call_id) for e in two.events]
    assert kinds[kinds.index(("result", "aider-14")) + 1] == ("assistant", None)


def test_architect_copies_are_not_new_turns():
    (s,) = aider.read(ARCHITECT)
    assert s.session_id == "aider_architect-1"
    assert s.meta["edit_format"] == "architect"
    assert s.meta["editor_model"] == "anthropic/claude-sonnet-4-20250514"
    assert [e.text for e in s.events if e.kind == "user"] == [
        "/add slugify/core.py tests/test_core.py",
        'Collapse repeated separators: slugify("a  --  b") should give "a-b", not "a-----b".',
        "make the maximum slug length configurable, default 80"]
    # the editor's prompt (the architect's plan, twice) and the /architect request's copy
    assert s.quirks["architect_repeats"] == 3 and s.quirks["mode_commands"] == 1
    assert [e.kind for e in s.events] == [
        "user", "call", "result",
        "user", "assistant", "call", "result", "assistant", "call", "result", "call", "result",
        "call", "result",
        "user", "assistant", "call", "result", "assistant", "call", "result", "call", "result",
        "call", "result"]
    edits = [(e.args["path"]) for e in s.events if e.kind == "call" and e.tool == "edit"]
    assert edits == ["slugify/core.py", "tests/test_core.py", "slugify/core.py",
                     "slugify/core.py"]
    confirm = next(e for e in s.events if e.kind == "result" and e.call_id == "aider-2")
    assert confirm.text.endswith("Edit the files? (Y)es/(N)o [Yes]: y")


HAND_WRITTEN = """\
# aider chat started at 2024-05-01 10:00:00

> Aider v0.40.0

#### <blank>

#### /dr old.py
> Removed old.py from the chat

#### /read-only docs/api.md "notes/my plan.md"
> Added docs/api.md to read-only files.

#### rename fetch to get
####
#### and keep an alias

Done:

api.py
```python
<<<<<<< SEARCH
def fetch():
=======
def get():
>>>>>>> REPLACE
```

> Applied edit to api.py
>
> Commit 1a2b3c4 refactor: rename fetch to get

#### /undo
> Removed: 1a2b3c4 refactor: rename fetch to get

# aider chat started at 2024-05-01 11:00:00

> Aider v0.40.0

# aider chat started at 2024-05-01 12:00:00

#### !ls
> api.py
"""


def test_hand_written_history_without_line_break_spaces(tmp_path):
    p = write(tmp_path, HAND_WRITTEN, "proj.aider.chat.history.md")
    one, three = aider.read(p)  # the run with no input is skipped
    assert (one.session_id, three.session_id) == ("proj-1", "proj-3")
    assert rows(one) == [
        ("user", "/dr old.py", None, False),
        ("call", "drop", "aider-1", False),
        ("result", "Removed old.py from the chat", "aider-1", False),
        ("user", '/read-only docs/api.md "notes/my plan.md"', None, False),
        ("call", "add", "aider-2", False),
        ("result", "Added docs/api.md to read-only files.", "aider-2", False),
        ("user", "rename fetch to get", None, False),
        ("assistant", "Done:", None, False),
        ("call", "edit", "aider-3", False),
        ("result", "applied", "aider-3", False),
        ("call", "aider", "aider-4", False),
        ("result", "Applied edit to api.py", "aider-4", False),
        ("user", "/undo", None, False),
        ("call", "aider", "aider-5", False),
        ("result", "Removed: 1a2b3c4 refactor: rename fetch to get", "aider-5", False),
    ]
    assert one.events[6].text == "rename fetch to get\n\nand keep an alias"
    assert one.events[1].args == {"files": ["old.py"]}
    assert one.events[4].args == {"files": ["docs/api.md", "notes/my plan.md"], "read_only": True}
    assert one.events[11].text == ("Applied edit to api.py\n\n"
                                   "Commit 1a2b3c4 refactor: rename fetch to get")
    assert one.events[13].args == {"after": "user"}
    q = one.quirks
    assert (q["blank_inputs_skipped"], q["abbreviated_commands"], q["other_commands"]) == (1, 1, 1)
    assert one.meta["aider_version"] == "0.40.0"
    assert rows(three) == [("user", "!ls", None, False), ("call", "run", "aider-6", False),
                           ("result", "api.py", "aider-6", False)]


def test_exact_repeat_of_the_previous_request_is_not_a_second_turn(tmp_path):
    p = write(tmp_path, "# aider chat started at 2024-05-01 10:00:00\n\n#### add a --verbose flag\n"
              "\nOk, here is the plan.\n\n#### add a --verbose flag\n\nDone.\n")
    (s,) = aider.read(p)
    assert [e.kind for e in s.events] == ["user", "assistant", "assistant"]
    assert s.quirks["architect_repeats"] == 1


def test_edit_failure_without_block_details_marks_every_edit(tmp_path):
    p = write(tmp_path, "# aider chat started at 2024-05-01 10:00:00\n\n#### fix it\n\n"
              "a.py\n```\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n\n"
              "> The LLM did not conform to the edit format.\n")
    (s,) = aider.read(p)
    res = [e for e in s.events if e.kind == "result"]
    assert [(r.call_id, r.is_error) for r in res] == [("aider-1", True), ("aider-2", True)]
    assert res[0].text == "The LLM did not conform to the edit format."


def test_looks_like_its_own_files_only():
    for path in (BASIC, ARCHITECT):
        assert aider.looks_like(path, head_of(path))
    for path in SWE:
        assert not aider.looks_like(path, head_of(path))


@pytest.mark.parametrize(("data", "message"), [
    (b"", r"t\.aider\.chat\.history\.md:1: the file is empty; pass a"),
    (b"\n \n", r"the file is empty"),
    (b"#### fix \xff\xfe it\n", r"not UTF-8 text \(byte 9\); re-export"),
    (b"# Notes\n\nsome markdown\n", r"t\.aider\.chat\.history\.md:1: no '# aider chat started at' "
                                    r"header .*pass the \.aider\.chat\.history\.md"),
])
def test_unreadable_files_are_clear_errors(tmp_path, data, message):
    p = tmp_path / "t.aider.chat.history.md"
    p.write_bytes(data)
    with pytest.raises(SuiteError, match=message):
        aider.read(p)
