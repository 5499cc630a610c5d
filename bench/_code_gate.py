"""The gate against a code change, in a scratch clone (``bench_regress.py --code``).

1. ``git clone`` this repository's HEAD into a scratch folder; there, run the
   study ``-m scorer=weights,online seed=0 suite.max_cases=POOL`` (tracking to
   the clone's own store) and promote its ``scorer=weights``: the baseline,
   with the clone's commit as its code.
2. Commit the injected code regression: ``_build_weights`` in
   ``silas_exp/scorers/calibrated.py`` returns
   ``LinearScorer("weights", settings.base.vector())`` (calibration ignored).
   Check it every way: the baseline's seeds (``regress --config
   scorer=weights``), other seeds (``--seeds-from 1`` … ``N``) and studies
   under other seeds (``-m scorer=weights,online seed=s`` then ``regress
   SWEEP scorer=weights``). Target: every check fails the gate.
3. Commit the same code without the change (the injection reverted, a comment
   added, so the code still differs from the baseline's and its side runs
   from a worktree): ``--seeds-from 1`` … ``N`` must pass. Then a harmless
   change with real noise (``--config scorer=weights scorer.l2=21``) under
   ``--seeds-from 1`` … ``M``: at least 9 of 10 pass.
4. The baseline cut to its first block (40 cases: what promoting a study that
   stopped after block 1 records) against the injected change: the first
   look cannot decide, so the gate runs more blocks, both sides; and the same
   40-case baseline against a change within the margins but near them
   (``scorer.base.age_decay=0``), which its first look cannot decide either.
5. A study of the smoke suite checked against the default suite's baseline:
   exit 2, both suites named.

Every command runs the clone's code (``silas_exp.gate.revision.tree_command``)
with this environment's packages; each check's console lines and exit code are
kept in the result.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

from silas_exp.gate.revision import tree_command

INJECTED = 'return LinearScorer("weights", settings.base.vector())'
ORIGINAL = 'return LinearScorer("weights", np.asarray(ctx.calibration.weights, dtype=float))'
TARGET = "silas_exp/scorers/calibrated.py"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qam",
         message)
    return _git(repo, "rev-parse", "HEAD")


class Clone:
    """A scratch clone and the commands that run its code."""

    def __init__(self, repo: Path, folder: Path, workers: int) -> None:
        self.dir, self.workers = folder / "clone", workers
        subprocess.run(["git", "clone", "-q", str(repo), str(self.dir)], check=True)
        self.log: list[dict] = []

    def run(self, module: str, *args: str, what: str) -> subprocess.CompletedProcess:
        cmd, env = tree_command(self.dir, module, *args)
        env = {**env, "SILAS_EXP_ROOT": str(self.dir), "MLFLOW_DISABLE_TELEMETRY": "true"}
        env.pop("MLFLOW_TRACKING_URI", None)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=self.dir, env=env, capture_output=True, text=True)
        self.log.append({"what": what, "exit": proc.returncode,
                         "seconds": round(time.perf_counter() - t0, 1)})
        return proc

    def study(self, seed: int, *design: str) -> str:
        folder = self.dir / "multirun" / f"seed{seed}-{len(self.log)}"
        proc = self.run("silas_exp", "-m", "scorer=weights,online", f"seed={seed}", *design,
                        f"hydra.sweep.dir={folder}", what=f"study seed={seed}")
        if proc.returncode != 0:
            raise SystemExit(f"the study seed={seed} failed: {proc.stderr[-2000:]}")
        return json.loads((folder / "sweep.json").read_text())["sweep_id"]

    def regress(self, *args: str, what: str, store: Path | None = None) -> dict:
        proc = self.run("silas_exp.cli.main", "regress", *args, "--no-log", "--workers",
                        str(self.workers), "--suite-dir",
                        str(store or self.dir / "suites" / "default"), what=what)
        lines = [ln for ln in proc.stdout.splitlines()
                 if ln.startswith(("gate: ", "**Regression check"))]
        decision = re.search(r"\*\*Regression check: ([^*]+)\*\*", proc.stdout)
        print(f"  {what}: exit {proc.returncode}, "
              f"{decision.group(1) if decision else proc.stderr.strip()[-300:]}", flush=True)
        return {"what": what, "exit": proc.returncode, "lines": lines,
                "report": proc.stdout[proc.stdout.find("## Regression check"):][:6000],
                "decision": decision.group(1) if decision else None,
                "error": proc.stderr.strip().splitlines()[-1] if proc.returncode not in (0, 1)
                and proc.stderr.strip() else None}


def run_code_scenarios(repo: Path, folder: Path, seeds: int, harmless: int,
                       workers: int, pool: int) -> dict:
    clone = Clone(repo, folder, workers)
    design = [f"suite.max_cases={pool}"]
    t0 = time.perf_counter()
    sweep = clone.study(0, *design)
    promoted = clone.run("silas_exp.cli.main", "baseline", "promote", sweep, "scorer=weights",
                         what="promote")
    if promoted.returncode != 0:
        raise SystemExit(f"promotion failed: {promoted.stderr[-2000:]}")
    record = json.loads((clone.dir / "suites" / "default" / "baseline.json").read_text())
    out: dict = {"baseline": {"cases": len({r["case_id"] for j in record["jobs"]
                                            for r in j["results"]}),
                              "revision": record["git_revision"], "sweep": sweep},
                 "scenarios": {}}
    source = clone.dir / TARGET
    text = source.read_text()
    if ORIGINAL not in text:
        raise SystemExit(f"{TARGET}: `{ORIGINAL}` not found; the bench's injection is out of date")
    source.write_text(text.replace(ORIGINAL, INJECTED))
    out["injected_commit"] = _commit(clone.dir, "Injected: the weights scorer ignores its "
                                                "calibration")
    checks = [clone.regress("--config", "scorer=weights", what="baseline's seeds")]
    first = dict(record, jobs=[j for j in record["jobs"] if j["block"] == 0])
    store40 = folder / "store40"
    store40.mkdir()
    (store40 / "baseline.json").write_text(json.dumps(first))
    out["scenarios"]["first_block_baseline"] = [
        clone.regress("--config", "scorer=weights", what="40-case baseline, baseline's seeds",
                      store=store40)]
    checks += [clone.regress("--config", "scorer=weights", "--seeds-from", str(s),
                             what=f"--seeds-from {s}") for s in range(1, seeds + 1)]
    out["scenarios"]["injected"] = checks
    studies = []
    for s in range(1, seeds + 1):
        swept = clone.study(s, *design)
        studies.append(clone.regress(swept, "scorer=weights", what=f"study seed={s}"))
    out["scenarios"]["injected_study"] = studies
    source.write_text(text.replace(ORIGINAL, ORIGINAL + "  # the calibrated weights"))
    out["unchanged_commit"] = _commit(clone.dir, "The injection reverted, with a comment")
    out["scenarios"]["unchanged"] = [
        clone.regress("--config", "scorer=weights", "--seeds-from", str(s),
                      what=f"--seeds-from {s}") for s in range(1, seeds + 1)]
    out["scenarios"]["first_block_grows"] = [
        clone.regress("--config", "scorer=weights", "scorer.base.age_decay=0",
                      what="40-case baseline, scorer.base.age_decay=0", store=store40)]
    out["scenarios"]["harmless"] = [
        clone.regress("--config", "scorer=weights", "scorer.l2=21", "--seeds-from", str(s),
                      what=f"scorer.l2=21 --seeds-from {s}") for s in range(1, harmless + 1)]
    smoke = clone.study(0, "suite=smoke")
    out["scenarios"]["other_suite"] = [clone.regress(smoke, "scorer=weights",
                                                     what="a smoke-suite study")]
    out["seconds"] = time.perf_counter() - t0
    out["commands"] = clone.log
    return out


def summary(out: dict) -> list[str]:
    """One line per scenario: how many checks failed the gate (exit 1) and passed (exit 0)."""
    wanted = {"injected": 1, "first_block_baseline": 1, "injected_study": 1, "unchanged": 0,
              "harmless": 0, "other_suite": 2}
    lines = [f"baseline: scorer=weights on {out['baseline']['cases']} cases "
             f"(study {out['baseline']['sweep']}, code {out['baseline']['revision'][:12]})"]
    for name, checks in out["scenarios"].items():
        if name == "first_block_grows":  # wanted: more cases than the baseline's 40, then a decision
            looks = [len([ln for ln in c["lines"] if ln.startswith("gate: look after")])
                     for c in checks]
            lines.append(f"{name:20s} {sum(n > 1 for n in looks)}/{len(checks)} read more cases "
                         f"than the baseline's ({looks} looks) — "
                         + ", ".join(f"{c['what']}: {c['decision']}" for c in checks))
            continue
        right = sum(c["exit"] == wanted[name] for c in checks)
        decisions = ", ".join(f"{c['what']}: {c['decision'] or c['error']}" for c in checks)
        word = {0: "pass", 1: "fail the gate", 2: "exit 2"}[wanted[name]]
        lines.append(f"{name:20s} {right}/{len(checks)} as wanted ({word}) — {decisions}")
    return lines
