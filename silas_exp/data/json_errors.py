"""What a JSON syntax error most likely means, for messages about files the
user wrote or exported (suites, cases, transcripts)."""

from __future__ import annotations

import json


def json_hint(exc: json.JSONDecodeError) -> str:
    """What a JSON syntax error most likely means, read from where it stopped."""
    before = exc.doc[:exc.pos].rstrip()
    rest = exc.doc[exc.pos:]
    if not rest.strip() or exc.msg.startswith("Unterminated string") and '"' not in rest[1:]:
        return ("The file ends before its JSON does: it was cut short (an interrupted copy or "
                "write?); restore the whole file.")
    if exc.msg.startswith("Expecting property name") and before.endswith(","):
        return "Remove the trailing comma before the closing brace."
    if exc.msg.startswith("Expecting value") and before.endswith(","):
        return "Remove the trailing comma before the closing bracket."
    if exc.msg.startswith("Expecting property name"):
        return "Put the key in double quotes (JSON has no single quotes or bare keys)."
    if exc.msg.startswith("Expecting ',' delimiter"):
        return "A comma is missing between two values, or a string's quote is not closed."
    if exc.msg.startswith("Unterminated string"):
        return "A string's closing quote is missing."
    if exc.msg.startswith("Invalid control character"):
        return "Write the line break inside the string as \\n."
    return "Fix the syntax at that place."
