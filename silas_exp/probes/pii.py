"""PII scrubbing for organic transcripts (§20.7), applied before anything is
stored or logged.

Each kind of PII is replaced by a typed placeholder a judge can still read,
and counted under its kind:

* ``secret`` -> ``<SECRET>``: Anthropic, OpenAI, GitHub, AWS and Slack keys,
  JWTs, the token after ``Bearer``, the value of ``api_key=`` / ``token:`` /
  ``password=`` style assignments, the password in ``scheme://user:pw@host``;
* ``email`` -> ``<EMAIL>`` (``git@host`` remotes are kept);
* ``home_path``: the user in ``/home/<u>/``, ``/Users/<u>/`` and
  ``C:\\Users\\<u>\\`` becomes ``<USER>``, the rest of the path stays;
* ``ip`` -> ``<IP>``: IPv4 addresses other than 127.0.0.1 and 0.0.0.0;
* ``phone`` -> ``<PHONE>``: international numbers (``+<country> ...``, 8+ digits);
* ``secret`` also: SQL password literals (``PASSWORD 'x'``, ``IDENTIFIED BY 'x'``).

:class:`Scrubber` adds what one string cannot show: person names learned
anywhere in a session (``Author:`` / ``Co-authored-by:`` / ``Signed-off-by:``
lines, ``user.name=…``, ``git config user.name "…"``) and names passed by the
user are replaced by ``<NAME>`` (kind ``name``) everywhere in it.

Version numbers (``3.11.7``, ``v1.2.3.4``), relative paths (``src/app.py``)
and hex commit hashes are left alone. Scrubbing is idempotent: placeholders
are never matched again, so scrubbing twice counts nothing new.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

T = TypeVar("T")

_SECRET = "<SECRET>"
_NOT_PLACEHOLDER = r"(?!<[A-Z]+>)"  # never re-match a value that is already a placeholder
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_KEEP_IPS = frozenset({"127.0.0.1", "0.0.0.0"})
_MIN_PHONE_DIGITS = 8
# ``api_key=...``, ``"password": "..."``, ``GITHUB_TOKEN: ...``: keep the name,
# replace the value. Values that are code (``get_token()``, ``os.environ[...]``)
# or a ``Bearer`` scheme word are left alone.
_ASSIGNMENT = (
    r"(?i)(\b(?:[a-z0-9]+[_\-])*"
    r"(?:(?:api|secret|access|private|client)[_\-]?key|token|secret|password|passwd|pwd)"
    r"['\"]?\s*[:=]\s*['\"]?)" + _NOT_PLACEHOLDER + r"(?!bearer\s)"
    r"[^\s'\",;()\[\]{}<>]{6,}+(?![(\[])"
)


@dataclass(frozen=True)
class _Rule:
    """One regex; ``replace`` returns the replacement, or None to keep the match."""

    kind: str
    pattern: re.Pattern[str]
    replace: Callable[[re.Match[str]], str | None]


def _const(text: str) -> Callable[[re.Match[str]], str | None]:
    return lambda _m: text


def _keep_prefix(placeholder: str) -> Callable[[re.Match[str]], str | None]:
    """Keep group 1 (e.g. ``api_key=``) and replace the rest of the match."""
    return lambda m: m.group(1) + placeholder


def _keep_prefix_suffix(placeholder: str) -> Callable[[re.Match[str]], str | None]:
    """Keep group 1 and group 2, replace what lies between them."""
    return lambda m: m.group(1) + placeholder + m.group(2)


def _email(m: re.Match[str]) -> str | None:
    return None if m.group(1) == "git" else "<EMAIL>"  # git@github.com is a remote, not a person


def _ip(m: re.Match[str]) -> str | None:
    return None if m.group(0) in _KEEP_IPS else "<IP>"


def _phone(m: re.Match[str]) -> str | None:
    return "<PHONE>" if sum(c.isdigit() for c in m.group(0)) >= _MIN_PHONE_DIGITS else None


def _secret(pattern: str, flags: int = 0) -> _Rule:
    return _Rule("secret", re.compile(pattern, flags), _const(_SECRET))


# Order matters: specific token shapes first, then generic assignments (which
# skip values already replaced), then the other kinds.
_RULES: tuple[_Rule, ...] = (
    _secret(r"\bsk-ant-[A-Za-z0-9_\-]{8,}"),
    _secret(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}"),
    _secret(r"\b(?:ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"),
    _secret(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    _secret(r"\bxox[abpr]-[A-Za-z0-9\-]{10,}"),
    _secret(r"\beyJ[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+"),
    _Rule("secret", re.compile(r"(?i)(\bbearer\s+)" + _NOT_PLACEHOLDER
                               + r"(?=[A-Za-z0-9._~+/=\-]*\d)[A-Za-z0-9._~+/=\-]{8,}"),
          _keep_prefix(_SECRET)),
    _Rule("secret", re.compile(_ASSIGNMENT), _keep_prefix(_SECRET)),
    _Rule("secret", re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:)" + _NOT_PLACEHOLDER
                               + r"[^/\s@]+(@)", re.IGNORECASE),
          _keep_prefix_suffix(_SECRET)),
    _Rule("email", re.compile(r"\b([A-Za-z0-9._%+\-]+)@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b"),
          _email),
    _Rule("home_path", re.compile(r"(?<![\w.\-])((?:/home|/Users)/)" + _NOT_PLACEHOLDER + r"[\w.\-]+"),
          _keep_prefix("<USER>")),
    _Rule("home_path", re.compile(r"(?i)(\b[a-z]:(\\+)Users\2)" + _NOT_PLACEHOLDER
                                  + r"(?:[^\\\r\n\"'<>|:*?]+(?=\2)|[^\\\s\"'<>|:*?]+)"),
          _keep_prefix("<USER>")),
    _Rule("ip", re.compile(rf"(?<![\w.])(?:{_OCTET}\.){{3}}{_OCTET}(?!\w|\.\d)"), _ip),
    _Rule("phone", re.compile(r"(?<![\w+])\+\d{1,3}(?:[ \-]?\(?\d{1,4}\)?){2,5}(?!\d)"), _phone),
    _Rule("secret", re.compile(r"(?i)(\b(?:password|identified\s+by)\s*\(?\s*')" + _NOT_PLACEHOLDER
                               + r"[^'\n]+(')"), _keep_prefix_suffix(_SECRET)),
)


def scrub(text: str) -> tuple[str, Counter[str]]:
    """Replace PII in ``text`` with typed placeholders.

    Returns the scrubbed text and how many replacements were made per kind
    (``secret``, ``email``, ``home_path``, ``ip``, ``phone``; kinds with no
    replacement are absent).
    """
    counts: Counter[str] = Counter()
    for rule in _RULES:

        def sub(m: re.Match[str], rule: _Rule = rule) -> str:
            out = rule.replace(m)
            if out is None:
                return m.group(0)
            counts[rule.kind] += 1
            return out

        text = rule.pattern.sub(sub, text)
    return text, counts


def scrub_obj(obj: T) -> tuple[T, Counter[str]]:
    """Scrub every string (dict keys included) in nested JSON data.

    Returns a new object of the same shape and the summed counts; numbers,
    booleans and None are returned unchanged.
    """
    counts: Counter[str] = Counter()

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            out, c = scrub(x)
            counts.update(c)
            return out
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, dict):
            return {walk(k): walk(v) for k, v in x.items()}
        return x

    return cast(T, walk(obj)), counts


_NAME_SOURCES = re.compile(
    r"(?im)^\s*(?:author|commit|co-authored-by|signed-off-by|reviewed-by):\s+"
    r"([A-Z][\w'\-]+(?:\s+[A-Z][\w'\-]+){1,3})\s+<"
    r"|user\.name\s*=\s*([^\n]{3,60}?)\s*$"
    r"|git config (?:--global )?user\.name\s+[\"']([^\"'\n]{3,60})[\"']")


class Scrubber:
    """Scrubs a whole session: the rules of :func:`scrub`, then every person
    name learned from the session (``learn``) or given (``extra_names``)."""

    def __init__(self, extra_names: Iterable[str] = ()) -> None:
        self.counts: Counter[str] = Counter()
        self.names: set[str] = {n.strip() for n in extra_names if len(n.strip()) >= 3}

    def learn(self, texts: Iterable[str]) -> None:
        for text in texts:
            for m in _NAME_SOURCES.finditer(text):
                name = next(g for g in m.groups() if g).strip()
                if len(name) >= 3 and not name.startswith("<"):
                    self.names.add(name)

    def scrub(self, text: str) -> str:
        text, counts = scrub(text)
        self.counts.update(counts)
        for name in sorted(self.names, key=len, reverse=True):
            text, n = re.subn(rf"(?<![\w<]){re.escape(name)}(?!\w)", "<NAME>", text)
            if n:
                self.counts["name"] += n
        return text

    def scrub_obj(self, obj: T) -> T:
        def walk(x: Any) -> Any:
            if isinstance(x, str):
                return self.scrub(x)
            if isinstance(x, list):
                return [walk(v) for v in x]
            if isinstance(x, dict):
                return {walk(k): walk(v) for k, v in x.items()}
            return x

        return cast(T, walk(obj))
