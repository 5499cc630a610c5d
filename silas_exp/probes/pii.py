"""PII scrubbing for organic transcripts (§20.7), applied before anything is
stored or logged. Regexes are written here because the kinds are few and the
replacements must stay readable to a judge (typed placeholders)."""

from __future__ import annotations

import re
from collections import Counter

_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("secret", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}"), "<SECRET>"),
    ("secret", re.compile(r"\bsk-[A-Za-z0-9]{16,}"), "<SECRET>"),
    ("secret", re.compile(r"\b(?:ghp|gho|ghs|ghu)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"), "<SECRET>"),
    ("secret", re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "<SECRET>"),
    ("secret", re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}"), "<SECRET>"),
    ("secret", re.compile(r"\beyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"), "<SECRET>"),
    ("secret", re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{12,}"), r"\1<SECRET>"),
    ("secret", re.compile(r"(?i)(\b(?:api[_-]?key|token|secret|password|passwd)\b\s*[:=]\s*['\"]?)"
                          r"[^\s'\"]{6,}"), r"\1<SECRET>"),
    ("email", re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"), "<EMAIL>"),
    ("home_path", re.compile(r"(/home/|/Users/)[^/\s]+"), r"\1<USER>"),
    ("home_path", re.compile(r"(?i)(C:\\Users\\)[^\\\s]+"), r"\1<USER>"),
    ("ip", re.compile(r"\b(?!127\.0\.0\.1\b)(?!0\.0\.0\.0\b)(?:\d{1,3}\.){3}\d{1,3}\b"), "<IP>"),
    ("phone", re.compile(r"\+\d{1,3}[ \-]?\(?\d{1,4}\)?(?:[ \-]?\d{2,4}){2,4}\b"), "<PHONE>"),
)


def scrub(text: str) -> tuple[str, Counter[str]]:
    counts: Counter[str] = Counter()
    for kind, pattern, repl in _RULES:
        text, n = pattern.subn(repl, text)
        counts[kind] += n
    return text, +counts


def scrub_obj(obj):
    """Scrub every string in nested JSON data; returns (new object, counts)."""
    counts: Counter[str] = Counter()

    def walk(x):
        if isinstance(x, str):
            out, c = scrub(x)
            counts.update(c)
            return out
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        return x

    return walk(obj), +counts
