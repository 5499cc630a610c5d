"""Identities in transcripts: person names, hostnames and usernames, found
only where their context says what they are (used by :mod:`silas_exp.data.transcripts.pii`).

:func:`find` returns :class:`Found` spans, each a ``name``, ``host`` or
``user``. Contexts, per kind:

* ``name``: git trailers and headers (``Author:``, ``Commit:``,
  ``Co-authored-by:``, ``Signed-off-by:``, ``Reviewed-by:``, ``Acked-by:``,
  ``Tested-by:``, ``Reported-by:``, ``Suggested-by:``, ``Helped-by:``) before
  ``<email>`` (an aider ``(aider)`` suffix stays); ``user.name=…``;
  ``git config [--global] user.name "…"``; the line after a
  ``git config [--get] user.name`` command; ``GIT_AUTHOR_NAME=`` /
  ``GIT_COMMITTER_NAME=``; the GECOS field of ``/etc/passwd`` lines;
* ``host``: shell prompts (``jane@box:~/src$``, ``[jane@box src]$``,
  ``jane@box ~ %``), ``ssh`` / ``scp`` / ``sftp`` / ``rsync`` / ``mosh``
  targets, ssh messages (``jane@box's password:``, ``Connection to box closed``,
  ``Permanently added 'box'``), the line after ``hostname`` / ``uname -n``,
  the second field of ``uname -a``, ``Host: box`` / ``HostName box`` /
  ``Static hostname: box`` lines;
* ``user``: the user of those prompts and ssh targets; ``USER=`` /
  ``LOGNAME=`` / ``USERNAME=`` / ``SUDO_USER=``; ``uid=1000(jane)`` /
  ``gid=…`` in ``id`` output; the line after ``whoami``; ``who`` / ``last``
  rows; owner and group of ``ls -l`` rows; the USER / UID column of ``ps aux``,
  ``ps -ef``, ``w``, ``top`` and ``lsof`` tables (found from their header);
  ``chown user[:group]``, ``sudo -u user``; the first field of ``/etc/passwd``.

Kept (never reported): system and generic accounts (:data:`SYSTEM_ACCOUNTS`,
``_*`` and ``systemd-*``), common groups, tool and bot authors
(:data:`BOT_NAMES`, ``…[bot]``, model signatures such as ``Claude Opus
4.6``), well-known public hosts
(:data:`PUBLIC_HOSTS` and their subdomains), ``localhost``, IP addresses (the
``ip`` rule handles them), the ``git`` user of ``git@host`` remotes, and
anything already a placeholder.

:func:`whole_word_ok` says which learned strings may also be replaced as whole
words everywhere in a session: not shorter than 3 characters and not one of
:data:`COMMON_WORDS` (so a user called ``max`` or ``dev`` is replaced where
its context shows it, but ``max(...)`` elsewhere stays).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from silas_exp.data.transcripts import hosts

# Accounts that identify nobody: OS/service accounts and the default users of
# cloud images, CI runners and containers.
SYSTEM_ACCOUNTS = frozenset("""
root nobody nogroup daemon bin sys sync games man lp mail news uucp proxy www-data backup list
irc gnats messagebus syslog polkitd sshd postgres mysql redis mongodb nginx apache httpd git ntp
chrony avahi colord dnsmasq rtkit pulse gdm lightdm kernoops whoopsie usbmux uuidd tss landscape
pollinate fwupd-refresh tcpdump dhcpcd statd rpc rpcuser ftp docker containerd unbound geoclue
saned hplip sddm dbus operator halt shutdown adm wheel staff users everyone admin sudo
ubuntu ec2-user centos debian fedora vagrant pi guest runner jenkins circleci travis codespace
vscode node app dev developer test tester demo default build builder jovyan user
""".split())
# Words too common to replace wherever they appear, even when learned as a
# username, hostname or single-word name.
COMMON_WORDS = SYSTEM_ACCOUNTS | frozenset("""
max min will mark bill art page may june august rose dawn grant frank jack ray ken don pat rob
sue guy chase hunter ace sky home work main master data code python server local temp tmp www web
api docs src lib opt var new old ops box host laptop desktop machine mac linux windows dev-box
localhost box1 server1 db cache worker prod staging test1 example sample
""".split())
BOT_NAMES = frozenset({"claude", "claude code", "copilot", "github", "github actions", "aider",
                       "dependabot", "renovate", "renovate bot", "your name", "gpt-engineer",
                       "devin", "sweep", "openhands", "cursor"})
# assistants sign commits with their model's name: "Claude Opus 4.6", "Claude Sonnet 4.5",
# "GPT-5 Codex", "Gemini 2.5 Pro"
_MODEL_AUTHOR = re.compile(r"(?:claude|gpt|codex|gemini|copilot|o\d)(?:[ \-][\w.\-]*\d[\w.\-]*"
                           r"|[ \-](?:opus|sonnet|haiku|code|pro|flash|mini|codex))+")
PUBLIC_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "pypi.org", "pythonhosted.org",
                "npmjs.org", "npmjs.com", "docker.io", "docker.com", "anthropic.com", "openai.com",
                "huggingface.co", "googleapis.com", "google.com", "ssh.dev.azure.com",
                "heroku.com", "readthedocs.io", "python.org", "ubuntu.com", "debian.org",
                # documentation sites and model providers' APIs a session talks about
                "mozilla.org", "microsoft.com", "stackoverflow.com", "wikipedia.org",
                "mistral.ai", "cohere.com", "example.com", "example.org")
_KEEP_HOSTS = frozenset({"localhost", "localhost.localdomain", "host.docker.internal",
                         "gateway.docker.internal", "ip6-localhost"})

_USER = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9.\-]*[A-Za-z0-9])?"
_PERSON = r"[^\W\d_][\w'.\-]*(?:[ \t]+[A-Z][\w'.\-]*){0,3}"  # first word, then capitalised words
_ENV = r"(?:\([^()\n]*\)[ \t]*)*"  # (venv) (base) before a prompt
_AFTER_CMD = r"[ \t]*[)\"'`\]]*[ \t]*\r?\n[ \t]*"  # end of a command line (or of Bash(command=…))
_CMD_START = r"(?:^[ \t]*(?:[$#%>][ \t]*)?|command=|\()"
_QUOTED_OR = r"(?:\"(?P<{g}1>[^\"\n<>]+)\"|'(?P<{g}2>[^'\n<>]+)'|(?P<{g}3>{bare}))"


def _value(g: str, bare: str) -> str:
    return _QUOTED_OR.format(g=g, bare=bare)


@dataclass(frozen=True)
class Found:
    kind: str  # "name" | "host" | "user"
    start: int
    end: int
    value: str
    machine: bool = True  # a host named as a machine (prompt, ssh): its short name is learned too


def is_kept(kind: str, value: str) -> bool:
    """True for values that are never PII (see the module docstring)."""
    v = value.strip()
    if not v or "<" in v or ">" in v or v.startswith(("$", "{", "-", "%")):
        return True
    low = v.lower()
    if kind == "user":
        if v.endswith("+"):  # ps truncates long names: ``systemd+``, ``message+``
            return any(a.startswith(low[:-1]) for a in SYSTEM_ACCOUNTS | {"systemd-", "message"})
        return (low in SYSTEM_ACCOUNTS or v.isdigit() or v.startswith("_")
                or low.startswith("systemd-"))
    if kind == "host":
        if low in _KEEP_HOSTS or re.fullmatch(r"[\d.]+|[0-9a-f:]+:[0-9a-f:]*", low):
            return True
        return any(low == h or low.endswith("." + h) for h in PUBLIC_HOSTS)
    return (low in BOT_NAMES or "[bot]" in low or not any(c.isalpha() for c in v)
            or bool(_MODEL_AUTHOR.fullmatch(low)))


def whole_word_ok(value: str) -> bool:
    """May this learned string be replaced wherever it stands as a whole word?"""
    return len(value) >= 3 and value.lower() not in COMMON_WORDS and not value.isdigit()


def learned_forms(kind: str, value: str, machine: bool = True) -> list[str]:
    """The strings to remember for a found value: a host's FQDN, the first
    label of a machine's name (``build-3`` of ``build-3.corp.example.net``)
    and, under a public suffix, the registrable domain (``acme.io`` of
    ``api.acme.io``; a URL's host gives no first label: ``api`` or ``smtp``
    name a service, not someone; nor the domain's bare label, which code may
    use as an identifier)."""
    forms = [value.rstrip("+")] if not value.endswith("+") else []
    if kind == "host" and "." in value:
        if machine:
            forms.append(value.split(".", 1)[0])
        domain = hosts.registrable(value) if hosts.is_hostname(value) else None
        if domain:
            forms.append(domain)
    return [f for f in forms if f and not is_kept(kind, f)]


# (pattern, {group name: kind}); a group ``x1``/``x2``/``x3`` all mean ``x``.
_PATTERNS: tuple[tuple[re.Pattern[str], dict[str, str]], ...] = tuple(
    (re.compile(p, flags), kinds) for p, flags, kinds in (
        (r"^[ \t]*(?:author|commit|committer|co-authored-by|signed-off-by|reviewed-by|acked-by"
         r"|tested-by|reported-by|suggested-by|helped-by):[ \t]+"
         r"(?P<n>[^<>()\n:]*[^\s<>()\n:])(?:[ \t]+\([^()\n]*\))?[ \t]+<",
         re.I | re.M, {"n": "name"}),
        (r"\buser\.name[ \t]*=[ \t]*" + _value("n", _PERSON), 0, {"n": "name"}),
        (r"\bgit[ \t]+config(?:[ \t]+--\w+)*[ \t]+user\.name[ \t]+" + _value("n", r"[^\s\"'<>$-]\S*"),
         0, {"n": "name"}),
        (r"\bgit[ \t]+config(?:[ \t]+--[\w-]+)*[ \t]+user\.name" + _AFTER_CMD
         + r"(?P<n>" + _PERSON + r")[ \t]*$", re.M, {"n": "name"}),
        (r"\bGIT_(?:AUTHOR|COMMITTER)_NAME=" + _value("n", _PERSON), 0, {"n": "name"}),
        (r"^(?P<u>" + _USER + r"):[x*!]?:\d+:\d+:(?P<n>[^:,\n]*)[^:\n]*:[^:\n]*:[^:\n]*$",
         re.M, {"u": "user", "n": "name"}),
        (r"^[ \t]*" + _ENV + r"(?P<u>" + _USER + r")@(?P<h>" + _HOST + r"):(?:~|/)\S*?[ \t]*[$#]",
         re.M, {"u": "user", "h": "host"}),
        (r"^[ \t]*" + _ENV + r"\[(?P<u>" + _USER + r")@(?P<h>" + _HOST + r")[ \t]+[^\]\n]*\][$#]",
         re.M, {"u": "user", "h": "host"}),
        (r"^[ \t]*" + _ENV + r"(?P<u>" + _USER + r")@(?P<h>" + _HOST
         + r")[ \t]+(?:~|/|[\w.\-]+)\S*[ \t]+[%$#](?=\s|$)", re.M, {"u": "user", "h": "host"}),
        (r"\b(?:ssh|scp|sftp|rsync|mosh|ssh-copy-id)\b[^\n|;&]*?(?<=[\s=])(?P<u>" + _USER
         + r")@(?P<h>" + _HOST + r")", 0, {"u": "user", "h": "host"}),
        (r"(?P<u>" + _USER + r")@(?P<h>" + _HOST + r")'s password:", 0, {"u": "user", "h": "host"}),
        (r"\b(?:Connection to|connect to host|resolve hostname)[ \t]+(?P<h>" + _HOST + r")",
         0, {"h": "host"}),
        (r"Permanently added '\[?(?P<h>" + _HOST + r")", 0, {"h": "host"}),
        (_CMD_START + r"(?:hostname(?:[ \t]+-[a-zA-Z]+)?|uname[ \t]+-n)" + _AFTER_CMD
         + r"(?P<h>" + _HOST + r")[ \t]*$", re.M, {"h": "host"}),
        (r"^(?:Linux|Darwin|FreeBSD)[ \t]+(?P<h>" + _HOST + r")[ \t]+\d+\.\d+", re.M, {"h": "host"}),
        (r"^[ \t]*(?:Static hostname|Transient hostname|Hostname|HostName|Host name|Host)"
         r"(?::[ \t]*|[ \t]+)(?P<h>" + _HOST + r")(?::\d+)?[ \t]*$", re.M, {"h": "host"}),
        (_CMD_START + r"whoami" + _AFTER_CMD + r"(?P<u>" + _USER + r")[ \t]*$", re.M, {"u": "user"}),
        (r"(?<![\w$])(?:USER|LOGNAME|USERNAME|SUDO_USER)=[\"']?(?P<u>" + _USER + r")", 0,
         {"u": "user"}),
        (r"\b(?:uid|gid|euid|egid)=\d+\((?P<u>[^()\s<>]+)\)", 0, {"u": "user"}),
        (r"^(?P<u>" + _USER + r")[ \t]+(?:pts/\d+|tty[\w/]*|console|:\d(?:\.\d)?)[ \t]", re.M,
         {"u": "user"}),
        (r"^[ \t]*[-dlcbpsD][rwxsStT\-]{9}[.+@]?[ \t]+\d+[ \t]+(?P<u>\S+)[ \t]+(?P<g>\S+)[ \t]+\d",
         re.M, {"u": "user", "g": "user"}),
        (r"\bchown[ \t]+(?:-\w+[ \t]+)*(?P<u>" + _USER + r")(?::(?P<g>" + _USER + r"))?[ \t]", 0,
         {"u": "user", "g": "user"}),
        (r"\bsudo[ \t]+-u[ \t]+(?P<u>" + _USER + r")", 0, {"u": "user"}),
    ))

_TABLE_HEADER = re.compile(r"^[ \t]*(?:USER[ \t]+(?:PID|TTY)\b|UID[ \t]+PID[ \t]+PPID\b)"
                           r"|\bPID(?:[ \t]+TID[ \t]+TASKCMD)?[ \t]+USER\b", re.M)


def _table_users(text: str) -> Iterator[Found]:
    """The USER / UID column of the rows under a ``ps`` / ``w`` / ``top`` / ``lsof`` header."""
    for header in _TABLE_HEADER.finditer(text):
        first_col = not header.group(0).rstrip().endswith("USER")
        pos = text.find("\n", header.end())
        while pos != -1:
            end = text.find("\n", pos + 1)
            line_end = len(text) if end == -1 else end
            tokens = list(re.finditer(r"\S+", text[pos + 1:line_end]))
            pid = next((i for i, t in enumerate(tokens[:3]) if t.group(0).isdigit()), None)
            if pid is None:
                break
            if first_col:
                tok = tokens[0] if pid > 0 else None
            else:
                tok = next((t for t in tokens[pid + 1:] if not t.group(0).isdigit()), None)
            if tok is not None:
                yield Found("user", pos + 1 + tok.start(), pos + 1 + tok.end(), tok.group(0))
            pos = end


def _pattern_finds(text: str) -> Iterator[Found]:
    for pattern, kinds in _PATTERNS:
        for m in pattern.finditer(text):
            groups = m.groupdict()
            for group, value in groups.items():
                if value is None or (group == "n" and is_kept("user", groups.get("u") or "x")):
                    continue  # the GECOS field of a system account is no person's name
                kind = kinds[group.rstrip("123")]
                start, end = m.span(group)
                stripped = value.rstrip(" \t.")
                yield Found(kind, start, start + len(stripped), stripped)


def _skip_pair(f: Found, text: str) -> bool:
    """``git@host`` (a remote) is kept whole: its host too."""
    return f.kind == "host" and text[max(0, f.start - 4):f.start] == "git@"


def _context_hosts(text: str) -> Iterator[Found]:
    """Hosts in URLs, connection strings, host/server/origin settings and quoted
    host literals (:mod:`silas_exp.data.transcripts.hosts`)."""
    for start, end, host in hosts.spans(text):
        yield Found("host", start, end, host, machine=False)


_FINDERS: tuple[Callable[[str], Iterator[Found]], ...] = (_pattern_finds, _table_users,
                                                          _context_hosts)


def find(text: str) -> list[Found]:
    """Non-overlapping identity spans in ``text``, in order, kept values left out."""
    found = sorted((f for finder in _FINDERS for f in finder(text)
                    if not is_kept(f.kind, f.value) and not _skip_pair(f, text)),
                   key=lambda f: (f.start, -f.end))
    out: list[Found] = []
    for f in found:
        if not out or f.start >= out[-1].end:
            out.append(f)
    return out
