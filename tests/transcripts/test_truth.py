"""Ground truth derived from later use: one small session per rule, the
reference it must give (turn, item, grade) and none where nothing is used."""

from __future__ import annotations

from pathlib import Path

from silas_exp.data.transcripts.build import Scrubber, build_drafts, finish_drafts, scrub_drafts
from silas_exp.data.transcripts.events import Event, RawSession
from silas_exp.data.transcripts.facts import extract_facts
from silas_exp.data.transcripts.readers import aider
from silas_exp.data.transcripts.truth import derive_truth

FIX = Path(__file__).parent / "fixtures"


def drafts_of(*events: Event):
    raw = RawSession("s", "f", "test", list(events))
    drafts, _ = build_drafts(raw)
    scrub_drafts(drafts, Scrubber())
    finish_drafts(drafts, raw.quirks)
    extract_facts(drafts)
    return drafts


def refs(*events: Event) -> set[tuple[int, str, int]]:
    return {(r.turn, r.ctx_id, r.grade) for r in derive_truth(drafts_of(*events)).references}


def call(cid, tool, args, out, error=False):
    return [Event("call", call_id=cid, tool=tool, args=args), Event("result", out, call_id=cid,
                                                                    is_error=error)]


def test_edit_after_read_is_grade_3():
    got = refs(Event("user", "fix it"), *call("a", "Read", {"file_path": "src/app.py"}, "x = 1"),
               *call("b", "Edit", {"file_path": "/repo/src/app.py", "old_string": "1"}, "ok"))
    assert got == {(1, "s-t0-1", 3)}  # the read (turn 0); the edit is the next step, turn 1


def test_reread_and_run_of_a_file_are_grade_2():
    got = refs(Event("user", "go"), *call("a", "Write", {"file_path": "tests/test_x.py"}, "ok"),
               Event("user", "run it"), *call("b", "Bash", {"command": "pytest tests/test_x.py"}, "1 passed"))
    assert got == {(1, "s-t0-1", 2)}


def test_identifier_acted_on_is_grade_3_and_quoted_is_grade_2():
    events = [Event("user", "why?"),
              *call("a", "Bash", {"command": "pytest"}, "E   KeyError: 'retry_after'", error=True),
              Event("assistant", "indexing retry_after fails")]
    assert refs(*events) == {(1, "s-t0-1", 2)}  # quoted in the next step's message
    derived = derive_truth(drafts_of(*events, *call("b", "Grep", {"pattern": "retry_after"}, "c")))
    # the grep in the same step acts on it: the step keeps the higher grade
    assert {(r.turn, r.ctx_id, r.grade) for r in derived.references} == {(1, "s-t0-1", 3)}
    assert derived.rules["quoted"] == 1 and derived.rules["acted_on"] == 1


def test_same_command_again_is_a_rerun_grade_1():
    got = refs(Event("user", "test"), *call("a", "Bash", {"command": "make check"}, "2 errors"),
               Event("user", "again"), *call("b", "Bash", {"command": "make check"}, "0 errors"))
    assert got == {(1, "s-t0-1", 1)}


def test_back_reference_to_a_decision_is_grade_1():
    got = refs(Event("user", "which database?"),
               Event("assistant", "Let's go with PostgreSQL for the ledger service."),
               Event("user", "unrelated: how are you?"),
               Event("user", "As we discussed earlier, set up the ledger tables."))
    assert (2, "s-t0-1", 1) in got and len(got) == 1


def test_common_strings_and_same_turn_use_give_nothing():
    noise = "\n".join(f"shared_helper_value = {i}" for i in range(3))
    events = [Event("user", "look")]
    for i in range(12):  # shared_helper_value is in every item: not distinctive
        events += call(f"c{i}", "Bash", {"command": f"echo {i}"}, noise)
        events.append(Event("user", f"step {i} shared_helper_value"))
    got = refs(*events)
    assert not any(g == 2 for _, _, g in got)
    assert refs(Event("user", "x"), *call("a", "Read", {"file_path": "a.py"}, "v"),
                Event("assistant", "now a.py")) == set()  # a path named in a message is no use


def test_facts_are_shown_by_their_item():
    drafts = drafts_of(Event("user", "go"),
                       *call("a", "Read", {"file_path": "src/app.py"}, "x"),
                       *call("b", "Bash", {"command": "pytest -q | tail -3"}, "ValueError: bad", error=True),
                       Event("assistant", "I'll use a guard clause instead of try/except."),
                       *call("c", "Write", {"file_path": "src/new.py", "content": "y"}, "ok"),
                       *call("d", "TodoWrite", {"todos": [{"content": "add docs", "status": "pending"}]}, "ok"))
    facts = [f for d in drafts for f in d.facts]
    assert "examined:src/app.py" in facts and "created:src/new.py" in facts
    assert "error:ValueError: bad" in facts and "todo:add docs" in facts
    assert "decision:I'll use a guard clause instead of try/except." in facts
    assert not any(f.startswith("command:") for f in facts)  # "|" cannot be shown verbatim in a fact


def test_error_fact_is_the_line_that_says_what_failed():
    # aider reports a failed edit after its token report, in one block of its output
    report = ("Tokens: 2.4k sent, 171 received. Cost: $0.0098 message, $0.02 session.\n"
              "The LLM did not conform to the edit format.\n"
              "https://aider.chat/docs/troubleshooting/edit-errors.html\n"
              "# 1 SEARCH/REPLACE block failed to match!")
    drafts = drafts_of(Event("user", "fix it"),
                       *call("a", "aider", {"after": "reply"}, report, error=True),
                       *call("b", "Bash", {"command": "./run"}, "\nSegmentation fault (core dumped)",
                             error=True))
    assert [f for d in drafts for f in d.facts if f.startswith("error:")] == [
        "error:The LLM did not conform to the edit format.",
        "error:Segmentation fault (core dumped)"]  # nothing says "failed": the first line


def test_aider_failed_edit_gives_the_failure_as_its_error():
    _, two = aider.read(FIX / "aider_basic.aider.chat.history.md")
    drafts, _ = build_drafts(two)
    finish_drafts(drafts, two.quirks)
    extract_facts(drafts)
    errors = {f for d in drafts for f in d.facts if f.startswith("error:")}
    assert errors == {"error:The LLM did not conform to the edit format."}
