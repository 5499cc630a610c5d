"""``silas-exp import`` leaves no private hostname behind: in URLs, ``.env``
values, connection strings and mail settings of a Claude Code session written
as Claude Code writes it. Public hosts a session talks about (github.com, the
package index of a ``pip install`` line) and code identifiers stay."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

from silas_exp.data.transcripts.pii import scrub
from tests.transcripts.script import Call, Exchange, Step, coding_script
from tests.transcripts.writers import write

# private hosts; "jenny" is a person's first name inside one of them
PRIVATE = ["llm.jenny-lab.io", "app.jenny-lab.io", "admin.acme-corp.internal",
           "smtp.relay-jenny.net", "db.acme-corp.internal", "pkgs.jenny-lab.io"]
LEAKS = [*PRIVATE, "jenny-lab", "relay-jenny", "acme-corp"]

ENV = ("OPENAI_BASE_URL=https://llm.jenny-lab.io/api\n"
       "CORS_ORIGINS=https://app.jenny-lab.io,https://admin.acme-corp.internal:8443\n"
       "SMTP_HOST=smtp.relay-jenny.net\nSMTP_PORT=587\n"
       "DATABASE_URL=postgres://svc:Zq8wLx3v9TmPa2@db.acme-corp.internal:5432/app\n")
MAIL = ('EMAIL_HOST = "smtp.relay-jenny.net"\nEMAIL_PORT = 587\n\n'
        "def send(msg):\n    with smtplib.SMTP(\"smtp.relay-jenny.net\", 587) as server:\n"
        "        server.send_message(msg)\n")
PIP = ("pip install --index-url https://pypi.org/simple "
       "--extra-index-url https://pkgs.jenny-lab.io/simple -r requirements.txt")


def hosts_exchange() -> Exchange:
    return Exchange("Why do the mails and the model calls fail on staging?", (
        Step("Let me look at the environment and the mail settings.", (
            Call("Bash", {"command": "cat .env", "description": "Show the environment"}, ENV),
            Call("Read", {"file_path": "config/mail.py"}, MAIL),
            Call("Bash", {"command": PIP}, "Looking in indexes: https://pypi.org/simple, "
                                          "https://pkgs.jenny-lab.io/simple\nSuccessfully installed"),
            Call("Bash", {"command": "git clone https://github.com/psf/requests"},
                 "Cloning into 'requests'..."))),
        Step("The model calls go to https://llm.jenny-lab.io/api and mail relays through "
             "smtp.relay-jenny.net; CORS allows app.jenny-lab.io. requests.get and "
             "os.path.join are fine, and collections.abc is imported in app.py."),
    ))


def test_import_scrubs_every_private_host(tmp_path):
    script = coding_script(rounds=3)
    script = dataclasses.replace(script, exchanges=(*script.exchanges, hosts_exchange()))
    src = write("claude-code", script, tmp_path / "in")
    assert all(host in src.read_text() for host in PRIVATE)  # the fixture carries them
    out = tmp_path / "organic"
    done = subprocess.run([sys.executable, "-m", "silas_exp.cli", "import", str(src), "--out",
                           str(out), "--opt-in"], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    text = "\n".join(p.read_text() for p in sorted(out.rglob("*")) if p.is_file()
                     and p.suffix in (".json", ".jsonl", ".md"))
    left = [h for h in LEAKS if h in text]
    assert not left, f"private hosts left after import: {left}"
    assert "https://github.com/psf/requests" in text
    assert "--index-url https://pypi.org/simple" in text
    assert "requests.get and os.path.join are fine" in text and "collections.abc" in text
    report = json.loads((out / "import_report.json").read_text())
    assert sum(s["pii"].get("host", 0) for s in report["sessions"]) >= len(PRIVATE)


def test_hosts_in_each_context_and_code_kept():
    text, counts = scrub(ENV + MAIL + "cfg.host = 'localhost'; self.name = 'app.py'")
    assert "<HOST>" in text and not any(h in text for h in LEAKS)
    assert "SMTP_PORT=587" in text and "cfg.host = 'localhost'" in text
    assert "self.name = 'app.py'" in text and "server.send_message(msg)" in text
    assert counts["host"] >= 6
