"""`python -m silas_exp --help`, the README and the docs state the same defaults
as the composed config: how many repeats a variant runs per case, and how a
budget setting is given."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import REPO

WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def _help() -> str:
    done = subprocess.run([sys.executable, "-m", "silas_exp", "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _number(word: str) -> int:
    return int(word) if word.isdigit() else WORDS[word.lower()]


# every way the help and the docs state the default number of repeats
DEFAULT_STATEMENTS = [
    r"`repeats`\s+times(?:\s+per\s+case)?\s+\(default\s+(\w+)",  # README, docs/plugins.md, --help
    r"the default is\s+\*\*(\w+) repeats? per case\*\*",  # docs/analysis.md
]
SPEC_STATEMENT = r"repeats=(\d+)`?[^\n]*?§20\.6's default"  # the spec's own default, not ours


def stated(text: str, patterns: list[str]) -> list[int]:
    return [_number(m) for p in patterns for m in re.findall(p, text)]


def test_help_and_docs_state_the_composed_default_of_repeats(compose):
    default = int(compose().repeats)
    shown = _help()
    composed = re.search(r"^repeats: (\S+)$", shown, re.M)
    assert composed is not None and int(composed.group(1)) == default  # the config on the screen
    where = {"--help": shown, **{p.name: p.read_text() for p in
                                 [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]}}
    found = {name: stated(text, DEFAULT_STATEMENTS) for name, text in where.items()}
    assert found["--help"] and found["README.md"] and found["analysis.md"], found
    assert {name: n for name, ns in found.items() for n in ns if n != default} == {}, found
    spec = [n for text in where.values() for n in stated(text, [SPEC_STATEMENT])]
    assert spec and set(spec) == {5}  # §20.6 says five: named as the spec's, never as ours


def test_the_help_example_of_a_budget_setting_works(compose):
    example = re.search(r"(\+?budget\.\w+=[\d.]+)", _help())
    assert example is not None and example.group(1).startswith("+"), example
    assert compose(example.group(1)).budget  # composes as shown
