"""Hostnames in the places a transcript shows them as hosts: URLs and
connection strings (``https://api.acme.io/v1``, ``postgres://u:p@db.acme.internal``),
``.env`` and config values whose key names a host (``SMTP_HOST=``,
``CORS_ORIGINS=``, ``host:``, ``mail_server =`` …, comma-separated lists
too), and a quoted string that is a hostname and nothing else
(``smtplib.SMTP("smtp.acme.io", 587)``). Used by :mod:`.identities`; every
host found is scrubbed everywhere in its session, with its registrable domain.

What a hostname is comes from the Public Suffix List (``publicsuffixlist``,
which ships the list in its wheel and never fetches it): the name must end in
a public suffix and have a registrable domain (``acme.io`` of
``api.acme.io``). Private-use names that no public suffix covers
(``.internal``, ``.local``, ``.lan``, ``.corp``, ``.home.arpa``) are hosts
too. The context is still hand-written: the list alone would take code for
hosts (``self.name``, ``app.py`` and ``collections.abc`` all end in a public
suffix), so a dotted word outside these contexts is never touched.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

PRIVATE_TLDS = frozenset({"internal", "local", "lan", "corp", "intranet", "localdomain",
                          "home.arpa", "private"})
# file names and code that the contexts above can still show (``"main.py"``):
# a quoted value ending in one of these is a file, not a host
_FILE_SUFFIXES = frozenset({"py", "sh", "md", "rs", "so", "pl", "zip", "mov", "js", "ts", "php",
                            "sql", "json", "yaml", "yml", "toml", "txt", "lock", "cfg", "ini",
                            "name", "abc", "app"})

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?"
_NAME = rf"{_LABEL}(?:\.{_LABEL})+"
_URL = re.compile(rf"(?i)\b[a-z][a-z0-9+.\-]*://(?:[^/\s@<>'\"]*@)?(?P<h>{_NAME})(?![\w\-])")
_KEY = (r"[A-Za-z0-9_.\-]*(?:host|hostname|hosts|server|domain|domains|origin|origins|endpoint"
        r"|smtp|relay|mx|fqdn)[A-Za-z0-9_\-]*")
_ASSIGN = re.compile(rf"(?im)(?<![\w.])(?P<k>{_KEY})['\"]?[ \t]*(?:=|:|[ \t])[ \t]*['\"]?"
                     r"(?P<v>[^\s'\"]+)")
_QUOTED = re.compile(rf"(?P<q>['\"])(?P<h>{_NAME})(?P=q)")


@lru_cache(maxsize=1)
def _psl():
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()


def _private_tld(name: str) -> bool:
    low = name.lower()
    return any(low.endswith("." + t) for t in PRIVATE_TLDS)


def is_hostname(name: str) -> bool:
    """A name under a public suffix with a registrable domain, or under a private-use one."""
    if not re.fullmatch(_NAME, name) or name.replace(".", "").isdigit():
        return False
    return _private_tld(name) or _psl().privatesuffix(name.lower(), accept_unknown=False) is not None


def registrable(name: str) -> str | None:
    """``acme.io`` of ``api.acme.io`` (None under a private-use suffix)."""
    return None if _private_tld(name) else _psl().privatesuffix(name.lower(), accept_unknown=False)


def spans(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, host) of every host the contexts above show."""
    for m in _URL.finditer(text):
        if is_hostname(m.group("h")):
            yield m.start("h"), m.end("h"), m.group("h")
    for m in _ASSIGN.finditer(text):
        start = m.start("v")
        for part in re.finditer(r"[^,;]+", m.group("v")):
            value = part.group(0)
            host = value.split(":")[0] if "://" not in value else ""
            if host and is_hostname(host) and host.rsplit(".", 1)[-1].lower() not in _FILE_SUFFIXES:
                yield start + part.start(), start + part.start() + len(host), host
    for m in _QUOTED.finditer(text):
        host = m.group("h")
        if is_hostname(host) and host.rsplit(".", 1)[-1].lower() not in _FILE_SUFFIXES:
            yield m.start("h"), m.end("h"), host
