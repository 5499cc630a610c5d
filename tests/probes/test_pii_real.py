"""What real transcripts leak (git authors, prompts, hostnames, ps / ls / id
output, SQL passwords) is scrubbed; code and placeholders in secret-looking
assignments are kept; identities learned once are scrubbed session-wide."""

from __future__ import annotations

import pytest

from silas_exp.data.transcripts.pii import Scrubber, scrub, scrub_obj

GIT_LOG = """$ git log -2
commit 9fceb02d0ae598e95dc970b74767f19372d61af8
Author: Jane Doe <jane@example.com>
Date:   Fri Oct 3 14:02:11 2026 +0200

    fix: read Retry-After (v1.2.3)

    Co-authored-by: Amir Khan <amir@example.org>
    Signed-off-by: Jane Doe <jane@example.com>
    Reviewed-by: Lee Park <lee.park@example.net>
    Co-Authored-By: Claude <noreply@anthropic.com>"""

PS_AUX = """$ ps aux | head -5
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.0  0.1 167744 11520 ?        Ss   09:12   0:02 /sbin/init
systemd+     612  0.0  0.0  90284  6016 ?        Ssl  09:12   0:00 /lib/systemd/systemd-timesyncd
jane        4242  1.2  2.3 812344 190220 pts/0   Sl+  10:01   0:07 python -m httpkit.server
postgres     901  0.0  0.3 215424 28000 ?        Ss   09:12   0:00 postgres: checkpointer"""

PS_EF = """UID          PID    PPID  C STIME TTY          TIME CMD
root           1       0  0 09:12 ?        00:00:02 /sbin/init
jdoe        4242    4100  1 10:01 pts/0    00:00:07 python -m httpkit.server"""

LSOF = """COMMAND   PID USER   FD   TYPE DEVICE SIZE/OFF NODE NAME
python3 4242 jane    3u  IPv4  51234      0t0  TCP *:8000 (LISTEN)"""

LS_L = """$ ls -l
total 12
drwxr-xr-x  2 jane jane  4096 Oct  3 14:02 src
-rw-r--r--  1 jane staff  812 Oct  3 14:02 README.md
-rw-r--r--  1 root root   120 Oct  3 14:02 setup.cfg"""

SSH = """$ ssh -p 2222 deploy@build-3.corp.example.net 'uptime'
Warning: Permanently added 'build-3.corp.example.net' (ED25519) to the list of known hosts.
deploy@build-3.corp.example.net's password:
 14:02:11 up 3 days,  2:01,  1 user,  load average: 0.00, 0.01, 0.05
Connection to build-3.corp.example.net closed."""

SQL = """CREATE USER app WITH PASSWORD 'hunter2';
ALTER ROLE app PASSWORD 'p4ss';
GRANT ALL ON db.* TO 'u'@'%' IDENTIFIED BY 'pw12';
SET PASSWORD = 'newpw';
SET PASSWORD FOR 'bob'@'localhost' = PASSWORD('old');
ALTER USER 'x'@'%' IDENTIFIED WITH mysql_native_password BY 'abc';"""

SQL_SCRUBBED = """CREATE USER app WITH PASSWORD '<SECRET>';
ALTER ROLE app PASSWORD '<SECRET>';
GRANT ALL ON db.* TO 'u'@'%' IDENTIFIED BY '<SECRET>';
SET PASSWORD = '<SECRET>';
SET PASSWORD FOR 'bob'@'localhost' = PASSWORD('<SECRET>');
ALTER USER 'x'@'%' IDENTIFIED WITH mysql_native_password BY '<SECRET>';"""

ID = "uid=1000(jane) gid=1000(jane) groups=1000(jane),4(adm),27(sudo),999(docker)"


def test_git_log_author_and_trailers_become_names():
    out, counts = scrub(GIT_LOG)
    assert out.splitlines()[1:4] == ["commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
                                     "Author: <NAME> <<EMAIL>>",
                                     "Date:   Fri Oct 3 14:02:11 2026 +0200"]
    assert out.splitlines()[-4:] == ["    Co-authored-by: <NAME> <<EMAIL>>",
                                     "    Signed-off-by: <NAME> <<EMAIL>>",
                                     "    Reviewed-by: <NAME> <<EMAIL>>",
                                     "    Co-Authored-By: Claude <<EMAIL>>"]  # a tool, not a person
    assert "(v1.2.3)" in out
    assert dict(counts) == {"name": 4, "email": 5}


@pytest.mark.parametrize("signature", ["Claude Opus 4.6", "Claude Sonnet 4.5", "GPT-5 Codex",
                                       "Gemini 2.5 Pro"])
def test_model_signatures_in_trailers_are_not_people(signature):
    """Seen in a real Claude Code session: every commit ends with the model's trailer."""
    text = f"git commit -m 'fix'\n\nCo-Authored-By: {signature} <noreply@anthropic.com>"
    out, counts = scrub(text)
    assert f"Co-Authored-By: {signature} <<EMAIL>>" in out and "name" not in counts
    assert "<NAME>" in scrub("Co-Authored-By: Claude Monet <claude@example.org>")[0]


def test_aider_author_suffix_stays():
    assert scrub("Author: Jane Doe (aider) <jane@example.com>")[0] == "Author: <NAME> (aider) <<EMAIL>>"


@pytest.mark.parametrize(("text", "expected"), [
    ("$ git config user.name\nJane Doe\n$ git status",
     "$ git config user.name\n<NAME>\n$ git status"),
    ("$ git config --get user.name\nJane Doe", "$ git config --get user.name\n<NAME>"),
    ('git config --global user.name "Jane Doe"', 'git config --global user.name "<NAME>"'),
    ("$ git config --list\nuser.name=Jane Doe\ncore.editor=vim",
     "$ git config --list\nuser.name=<NAME>\ncore.editor=vim"),
    ('GIT_AUTHOR_NAME="Jane Doe" GIT_COMMITTER_NAME=Jane git commit -m wip',
     'GIT_AUTHOR_NAME="<NAME>" GIT_COMMITTER_NAME=<NAME> git commit -m wip'),
])
def test_git_config_names(text, expected):
    assert scrub(text)[0] == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("jane@dev-box-7:~/src/httpkit$ pytest -q\n3 passed",
     "<USER>@<HOST>:~/src/httpkit$ pytest -q\n3 passed"),
    ("[jane@dev-box-7 httpkit]$ ls", "[<USER>@<HOST> httpkit]$ ls"),
    ("(venv) jane@Janes-MacBook-Pro httpkit % git status",
     "(venv) <USER>@<HOST> httpkit % git status"),
    ("root@3f4e5a6b7c8d:/app# ls", "root@<HOST>:/app# ls"),  # root is kept
])
def test_shell_prompts(text, expected):
    assert scrub(text)[0] == expected


def test_hostname_uname_and_host_lines():
    text = ("$ hostname\ndev-box-7\n$ uname -a\n"
            "Linux dev-box-7 5.15.0-91-generic #101-Ubuntu SMP x86_64 GNU/Linux")
    assert scrub(text)[0] == ("$ hostname\n<HOST>\n$ uname -a\n"
                              "Linux <HOST> 5.15.0-91-generic #101-Ubuntu SMP x86_64 GNU/Linux")
    assert scrub("   Static hostname: dev-box-7\n         Icon name: computer-vm")[0] == (
        "   Static hostname: <HOST>\n         Icon name: computer-vm")
    # public hosts in an HTTP request stay; a private one does not
    assert scrub("GET /v1/x HTTP/1.1\nHost: api.github.com")[0] == "GET /v1/x HTTP/1.1\nHost: api.github.com"
    assert scrub("Host: build-3.corp.example.net")[0] == "Host: <HOST>"


def test_ssh_user_and_host():
    out, counts = scrub(SSH)
    assert out.splitlines() == [
        "$ ssh -p 2222 <USER>@<HOST> 'uptime'",
        "Warning: Permanently added '<HOST>' (ED25519) to the list of known hosts.",
        "<USER>@<HOST>'s password:",
        " 14:02:11 up 3 days,  2:01,  1 user,  load average: 0.00, 0.01, 0.05",
        "Connection to <HOST> closed.",
    ]
    assert dict(counts) == {"user": 2, "host": 4}


def test_git_remotes_and_public_urls_are_kept():
    text = ("$ ssh -T git@github.com\n$ git remote add origin git@github.com:jane-org/httpkit.git\n"
            "see https://pypi.org/project/httpx/ and https://docs.python.org/3/ on 127.0.0.1:8000")
    assert scrub(text) == (text, {})


def test_ps_aux_user_column():
    out, counts = scrub(PS_AUX)
    lines = out.splitlines()
    assert lines[3].startswith("systemd+     612")  # a truncated system account
    assert lines[4].startswith("<USER>        4242  1.2")
    assert lines[5].startswith("postgres     901")
    assert dict(counts) == {"user": 1}


def test_ps_ef_and_lsof_user_columns():
    assert scrub(PS_EF)[0].splitlines()[2].startswith("<USER>        4242    4100")
    assert scrub(LSOF)[0].splitlines()[1] == (
        "python3 4242 <USER>    3u  IPv4  51234      0t0  TCP *:8000 (LISTEN)")


def test_ls_l_owner_and_group():
    out, counts = scrub(LS_L)
    assert out.splitlines()[2:] == ["drwxr-xr-x  2 <USER> <USER>  4096 Oct  3 14:02 src",
                                    "-rw-r--r--  1 <USER> staff  812 Oct  3 14:02 README.md",
                                    "-rw-r--r--  1 root root   120 Oct  3 14:02 setup.cfg"]
    assert dict(counts) == {"user": 3}


def test_id_who_whoami_and_env_users():
    assert scrub(ID)[0] == ("uid=1000(<USER>) gid=1000(<USER>) "
                            "groups=1000(<USER>),4(adm),27(sudo),999(docker)")
    assert scrub("jane     pts/0        2026-10-03 14:02 (10.0.0.7)")[0] == (
        "<USER>     pts/0        2026-10-03 14:02 (<IP>)")
    assert scrub("$ whoami\njdoe")[0] == "$ whoami\n<USER>"
    assert scrub("USER=jane\nLOGNAME=jane\nHOME=/home/jane\nSHELL=/bin/bash")[0] == (
        "USER=<USER>\nLOGNAME=<USER>\nHOME=/home/<USER>\nSHELL=/bin/bash")
    assert scrub("sudo chown -R jane:www-data /srv/app")[0] == "sudo chown -R <USER>:www-data /srv/app"


def test_sql_password_literals():
    out, counts = scrub(SQL)
    assert out == SQL_SCRUBBED and dict(counts) == {"secret": 6}
    assert scrub("mysql -u root -phunter2 mydb")[0] == "mysql -u root -p<SECRET> mydb"
    assert scrub("ALTER ROLE app PASSWORD 'changeme'")[0] == "ALTER ROLE app PASSWORD 'changeme'"


@pytest.mark.parametrize("text", [
    "client = Client(apiKey=plain_api_key)",
    "token = get_token",
    "user = User(password=self.password)",
    "api_key: API_KEY_ENV_VAR_NAME",
    "token = settings.GITHUB_TOKEN",
    "password: SecretStr",
    "const apiKey = process.env.API_KEY",
    "token: string;",
    "PWD=/srv/app",
])
def test_code_values_are_not_secrets(text):
    assert scrub(text) == (text, {})


def test_high_entropy_values_stay_secrets():
    assert scrub("api_key=a8f5f167f44f4964e6c998dee827110c")[0] == "api_key=<SECRET>"
    assert scrub("password=hunter2")[0] == "password=<SECRET>"
    assert scrub('"token": "aB3xY9kLmN0pQrSt"')[0] == '"token": "<SECRET>"'


@pytest.mark.parametrize("text", [
    "api_key=<your-key>", "API_KEY=YOUR_API_KEY", "token=xxx", "token=xxxxxxxx",
    "password=***", "password=********", "password=changeme", "token=...",
    "API_KEY=${API_KEY}", "TOKEN=$TOKEN", "token: {{ secrets.X }}", "password=example",
    "password: dummy", "password=test", "secret=secret", "api_key=your-api-key-here",
    "OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxx", "ANTHROPIC_API_KEY=sk-ant-...",
])
def test_placeholder_values_are_kept(text):
    assert scrub(text) == (text, {})


def test_learned_identities_are_scrubbed_across_the_session():
    s = Scrubber()
    session = [GIT_LOG, "jane@dev-box-7:~/src$ ps aux", PS_AUX,
               "I pushed it, Jane Doe. The server on dev-box-7 runs as jane.",
               "$ sudo chown jane:jane /srv/app && tail /var/log/dev-box-7.log"]
    s.learn(session)
    assert s.scrub(session[3]) == "I pushed it, <NAME>. The server on <HOST> runs as <USER>."
    assert s.scrub(session[4]) == "$ sudo chown <USER>:<USER> /srv/app && tail /var/log/<HOST>.log"
    assert dict(s.counts) == {"name": 1, "host": 2, "user": 3}


def test_learned_fqdn_also_scrubs_its_short_name():
    s = Scrubber()
    s.learn([SSH])
    assert s.scrub("build-3 is down; ping build-3.corp.example.net") == "<HOST> is down; ping <HOST>"


def test_short_and_common_usernames_are_scrubbed_only_in_context():
    s = Scrubber()
    s.learn(["max@box-9:~/app$ make", "ubuntu@ip-10-0-0-5:~$ ls", "al@mbp-al:~$ ls"])
    assert s.scrub("max@box-9:~/app$ make") == "<USER>@<HOST>:~/app$ make"
    assert s.scrub("al@mbp-al:~$ ls") == "<USER>@<HOST>:~$ ls"
    # default accounts (ubuntu, dev, admin, ...) identify nobody: kept even in context
    assert s.scrub("ubuntu@ip-10-0-0-5:~$ ls") == "ubuntu@<HOST>:~$ ls"
    # ``max`` (a common word) and ``al`` (too short) are not replaced as whole words; hosts are
    assert s.scrub("al = max(a, b) on box-9 and mbp-al, Ubuntu 22.04") == (
        "al = max(a, b) on <HOST> and <HOST>, Ubuntu 22.04")


def test_extra_names_are_always_scrubbed():
    s = Scrubber(extra_names=["Bob Stone", "Al"])  # too short a name is ignored
    assert s.scrub("Bob Stone and Al reviewed it") == "<NAME> and Al reviewed it"
    assert dict(s.counts) == {"name": 1}


def test_scrub_obj_learns_across_the_object():
    obj = {"cmd": "whoami", "out": "$ whoami\njdoe", "msgs": ["jdoe owns /srv/app", 3]}
    out, counts = scrub_obj(obj)
    assert out == {"cmd": "whoami", "out": "$ whoami\n<USER>", "msgs": ["<USER> owns /srv/app", 3]}
    assert dict(counts) == {"user": 2}


ALL_SNIPPETS = [GIT_LOG, PS_AUX, PS_EF, LSOF, LS_L, SSH, SQL, ID,
                "jane@dev-box-7:~/src$ ls", "[jane@dev-box-7 src]$ ls", "$ hostname\ndev-box-7",
                "USER=jane", "api_key=a8f5f167f44f4964e6c998dee827110c", "token = get_token"]


def test_scrubbing_twice_changes_and_counts_nothing_more():
    for text in ALL_SNIPPETS:
        once, _ = scrub(text)
        assert scrub(once) == (once, {}), text
    s = Scrubber()
    s.learn(ALL_SNIPPETS)
    once = [s.scrub(t) for t in ALL_SNIPPETS]
    again = Scrubber()
    again.learn(once)
    assert [again.scrub(t) for t in once] == once and not again.counts


def test_counts_per_kind_over_a_session():
    s = Scrubber()
    s.learn(ALL_SNIPPETS)
    for text in ALL_SNIPPETS:
        s.scrub(text)
    # names: Jane Doe x2, Amir Khan, Lee Park; hosts: 4 in SSH + 3 prompts/hostname;
    # users: ps aux 1, ps -ef 1, lsof 1, ls -l 3, ssh 2, id 3, prompts 2, USER= 1
    assert dict(s.counts) == {"name": 4, "email": 5, "user": 14, "host": 7, "secret": 7}
