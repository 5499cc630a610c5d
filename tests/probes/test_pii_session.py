"""Session-wide scrubbing: names learned from git output or given by the user
are removed everywhere; SQL password literals are secrets; idempotent."""

from __future__ import annotations

from silas_exp.data.transcripts.pii import Scrubber, scrub

GIT_LOG = """commit 4c1d2e7a9b
Author: Jane Doe <jane@example.com>
Date:   Fri Oct 3 14:02:11 2026 +0200

    fix: read Retry-After

    Co-authored-by: Amir Khan <amir@example.org>"""


def test_names_learned_from_git_output_are_scrubbed_everywhere():
    s = Scrubber()
    s.learn([GIT_LOG, "$ git config user.name\nuser.name=Lee Park"])
    assert s.scrub("thanks Jane Doe, Amir Khan and Lee Park") == "thanks <NAME>, <NAME> and <NAME>"
    assert s.scrub(GIT_LOG).splitlines()[1] == "Author: <NAME> <<EMAIL>>"
    assert s.counts["name"] == 5 and s.counts["email"] == 2


def test_extra_names_and_sql_passwords():
    s = Scrubber(extra_names=["Bob Stone"])
    out = s.scrub("Bob Stone ran: CREATE USER app WITH PASSWORD 'hunter2'; "
                  "GRANT ALL ON db.* TO 'u' IDENTIFIED BY 'pw12';")
    assert out == ("<NAME> ran: CREATE USER app WITH PASSWORD '<SECRET>'; "
                   "GRANT ALL ON db.* TO 'u' IDENTIFIED BY '<SECRET>';")
    assert dict(s.counts) == {"name": 1, "secret": 2}
    again = Scrubber(extra_names=["Bob Stone"])
    assert again.scrub(out) == out and not again.counts and scrub(out) == (out, {})
