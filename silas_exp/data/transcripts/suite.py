"""Transcripts -> a runnable §20.2 suite folder (``silas-exp import``).

Per session the folder holds a replay case (``<session>-replay``: the items,
the derived ground truth, a budget that puts the session under eviction
pressure) and, unless ``probes="none"``, a probe case (``<session>-probes``:
the same items and a probe plan at the session's compression points, written
by rule or, with ``probes="llm"``, by a model and verified). A
scorer sweep runs both kinds; an eviction sweep over compression strategies
runs the probe cases and skips the replay ones (they measure per-turn
eviction, which those strategies do not do).

The budget: the session's peak window usage under Tier-1 hygiene (tool
outputs masked after ``mask_after`` turns, as in the case) divided by
``fill`` (2.5 by default, the default suite's lightest pressure), never below
2,000 tokens; zone shares fitted to the session's zone mix, so the pressure
lands on Tier 2 (the scorer). ``import_report.json`` records the provenance:
source file names and SHA-256, format, the normalisations made, PII
replacements per kind, references per rule and grade, facts, probes, budget,
and the opt-in.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from silas_exp.context.budget import TokenBudget, item_tokens
from silas_exp.data.suites.build import PASS_THRESHOLDS, budget_for, fitted_shares, hygiene_usage
from silas_exp.data.suites.loader import CALIBRATION_TAG
from silas_exp.data.transcripts.build import (
    Draft,
    Scrubber,
    build_drafts,
    drafts_of_session,
    finish_drafts,
    scrub_drafts,
    to_session,
)
from silas_exp.data.transcripts.events import RawSession, ReadOptions
from silas_exp.data.transcripts.facts import extract_facts
from silas_exp.data.transcripts.probes import compression_points, probe_plan
from silas_exp.data.transcripts.probes_llm import ProbeCounts, llm_probe_plan
from silas_exp.data.transcripts.progress import DEFAULT_MAX_MB, ImportProgress, check_size
from silas_exp.data.transcripts.truth import derive_truth
from silas_exp.errors import SuiteError
from silas_exp.probes.schema import ProbePlan
from silas_exp.schema.benchmark import (
    BenchmarkCase,
    BenchmarkExpected,
    BenchmarkInput,
    BenchmarkSuite,
)
from silas_exp.schema.session import Session, SessionTruth

DEFAULT_OUT = Path("data/benchmarks/organic")
PROBE_PASS = {"probe.overall": 2.5}
ProbeMode = Literal["rules", "llm", "none"]


@dataclass(frozen=True)
class ImportSettings:
    name: str = "organic"
    profile: str = "coding"
    fill: float = 2.5
    mask_after: int = 20
    probes: ProbeMode = "rules"
    read: ReadOptions = ReadOptions()
    extra_names: tuple[str, ...] = ()
    opt_in: str = ""  # who confirmed the sessions' owners opted in, and when
    calibration: int | None = None  # sessions whose replay case calibrates (None: a quarter)
    max_mb: float = DEFAULT_MAX_MB  # a larger file is refused before it is read (progress.py)


@dataclass
class SessionReport:
    session_id: str
    source: str
    format: str
    turns: int = 0
    items: int = 0
    tokens: int = 0
    budget: int = 0
    peak_tokens: int = 0
    over_budget: bool = False
    quirks: dict[str, int] = field(default_factory=dict)
    pii: dict[str, int] = field(default_factory=dict)
    references: int = 0
    references_by_grade: dict[str, int] = field(default_factory=dict)
    references_by_rule: dict[str, int] = field(default_factory=dict)
    facts: int = 0
    probes: int = 0
    probes_by_type: dict[str, Any] = field(default_factory=dict)  # kept / dropped by verification
    compressions: list[int] = field(default_factory=list)
    cases: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class ImportReport:
    out: str
    suite_id: str
    sources: list[dict[str, Any]] = field(default_factory=list)
    sessions: list[SessionReport] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = []
        for s in self.sessions:
            quirks = ", ".join(f"{k}={v}" for k, v in sorted(s.quirks.items())) or "none"
            pii = ", ".join(f"{k}={v}" for k, v in sorted(s.pii.items())) or "nothing"
            out.append(f"{s.session_id} ({s.format}, {s.source}): {s.turns} turns, {s.items} items, "
                       f"{s.tokens:,} tokens; budget {s.budget:,} "
                       f"({'over budget: Tier 2 runs' if s.over_budget else 'never over budget'}); "
                       f"{s.references} references, {s.facts} facts, {s.probes} probes; "
                       f"normalised: {quirks}; scrubbed: {pii}")
            out += [f"  note: {n}" for n in s.notes]
        return out


def _safe_id(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]+", "-", text).strip("-")[:80] or "session"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _read(path: Path, fmt: str, options: ReadOptions) -> tuple[str, list[RawSession] | Session]:
    from silas_exp.data.transcripts import readers

    if fmt == "auto":
        fmt = readers.detect(path)
    if fmt == "silas":
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return fmt, Session.model_validate(raw.get("session", raw))
        except (ValueError, AttributeError) as exc:
            raise SuiteError(f"{path}: not a silas session file ({str(exc).splitlines()[0]}); "
                             "pass --format with the transcript's format") from None
    return fmt, readers.read(path, fmt, options)


@dataclass(frozen=True)
class ProbeModel:
    """The model that writes probes for ``--probes llm``: a client and a model id."""

    llm: Any  # silas_exp.llm.LLMClient
    model_id: str


def _plan(drafts: list[Draft], points: list[int], sid: str, s: ImportSettings,
          writer: ProbeModel | None, rep: SessionReport) -> ProbePlan | None:
    counts = ProbeCounts()
    if s.probes == "llm":
        if writer is None:
            raise SuiteError("--probes llm needs a model to write probes; pass one (--model)")
        plan = llm_probe_plan(drafts, points, sid, writer.llm, writer.model_id, counts)
        rep.notes += [f"probe writer failed at {p}; no probes there" for p in counts.failed_points]
    else:
        plan = probe_plan(drafts, points, sid)
        if plan is not None:
            counts.kept.update(p.type for p in plan.probes)
    rep.probes_by_type = counts.as_dict()
    return plan


def _cases(session: Session, truth: SessionTruth, drafts: list[Draft], s: ImportSettings,
           rep: SessionReport, source: str, writer: ProbeModel | None) -> list[BenchmarkCase]:
    tokens = sum(item_tokens(it) for it in session.items)
    # hygiene does not depend on the total: one replay gives the peak and the compression points
    usage = hygiene_usage(session, truth, TokenBudget(total=10**9,
                                                      observation_mask_after_turns=s.mask_after))
    peak = max(usage)
    budget_total = budget_for(peak, s.fill)
    budget = TokenBudget(total=budget_total, observation_mask_after_turns=s.mask_after)
    overrides: dict[str, Any] = {
        "profile": session.profile,
        "budget": {"total": budget_total, "observation_mask_after_turns": s.mask_after},
        "shares": fitted_shares(session)}
    rep.tokens, rep.peak_tokens, rep.budget = tokens, peak, budget_total
    rep.over_budget = peak > budget.eviction_threshold_pct * budget_total
    if not rep.over_budget:
        rep.notes.append(f"the session peaks at {peak:,} tokens, under the eviction threshold of "
                         f"its budget ({budget_total:,}): no eviction happens, so every scorer "
                         "ties on it")
    context = [it.model_dump(exclude_defaults=True, mode="json") for it in session.items]
    args = {"turns": session.turns, "scope_id": session.scope_id,
            "import": {"source": source, "fill": s.fill}}
    tags = ["organic", rep.format]
    cases = []
    if truth.references:
        cases.append(BenchmarkCase(
            case_id=f"{session.session_id}-replay",
            description=f"imported {rep.format} session {source}, {session.turns} turns, "
                        f"{len(truth.references)} derived references",
            input=BenchmarkInput(goal="Replay a real session and keep what later turns used",
                                 context=context, config_overrides=overrides, skill_args=args),
            expected=BenchmarkExpected(
                mode="metric_threshold",
                value={"references": [r.model_dump() for r in truth.references]},
                metric_thresholds=dict(PASS_THRESHOLDS)),
            tags=tags, difficulty="hard", source="organic"))
    else:
        rep.notes.append("no later turn used an earlier item: no ground truth, no replay case")
    if s.probes != "none":
        plan = _plan(drafts, compression_points(
            usage, budget.eviction_threshold_pct * budget_total, session.turns), session.session_id,
            s, writer, rep)
        if plan is None:
            rep.notes.append("no fact to ask about before any compression point: no probe case")
        else:
            rep.probes, rep.compressions = len(plan.probes), list(plan.compressions)
            cases.append(BenchmarkCase(
                case_id=f"{session.session_id}-probes",
                description=f"compression probes on imported {rep.format} session {source} at "
                            f"turns {plan.compressions}",
                input=BenchmarkInput(goal="Compress a real session and still answer about it",
                                     context=context, config_overrides=overrides,
                                     skill_args={**args, "scope_id": f"{session.scope_id}/probes"}),
                expected=BenchmarkExpected(mode="llm_judge",
                                           value={"probe_plan": plan.model_dump(mode="json")},
                                           metric_thresholds=dict(PROBE_PASS)),
                tags=[*tags, "probes"], difficulty="hard", source="organic"))
    rep.cases = [c.case_id for c in cases]
    return cases


def _session(raw: RawSession | Session, s: ImportSettings, fmt: str, source: str,
             taken: set[str], progress: ImportProgress
             ) -> tuple[Session, SessionTruth, list[Draft], SessionReport]:
    scrubber = Scrubber(extra_names=s.extra_names)
    sid = _safe_id(scrubber.scrub(raw.session_id))
    while sid in taken:
        sid = f"{sid}-x"
    taken.add(sid)
    label = f"{sid}: scrubbing PII"

    def counter(total: int) -> Callable[[int], None]:
        progress.step(f"{label} in {len(drafts):,} items (two passes over "
                      f"{total / 2 / (1 << 20):,.1f} MB of text)")
        return progress.work(label, total)

    if isinstance(raw, Session):  # items as they are (their own ids)
        drafts, turns, quirks = drafts_of_session(raw), raw.turns, Counter[str]()
        scrub_drafts(drafts, scrubber, counter)
    else:  # item ids follow the scrubbed session id
        (drafts, turns), quirks = build_drafts(raw, sid), raw.quirks
        scrub_drafts(drafts, scrubber, counter)
        finish_drafts(drafts, quirks)
    progress.step(f"{sid}: facts and ground truth")
    rep = SessionReport(sid, source, fmt, turns=turns, items=len(drafts))
    rep.facts = extract_facts(drafts)
    derived = derive_truth(drafts)
    truth = SessionTruth(references=derived.references)
    session = to_session(sid, drafts, turns, scope_id=f"organic-{sid}", profile=s.profile)
    truth.check_against(session)
    rep.quirks = dict(quirks)
    rep.pii = dict(scrubber.counts)
    rep.references = len(truth.references)
    rep.references_by_grade = {str(g): n for g, n in
                               sorted(Counter(r.grade for r in truth.references).items())}
    rep.references_by_rule = dict(sorted(derived.rules.items()))
    return session, truth, drafts, rep


def import_transcripts(paths: list[Path], out: Path, *, fmt: str = "auto",
                       settings: ImportSettings | None = None,
                       writer: ProbeModel | None = None,
                       progress: ImportProgress | None = None) -> ImportReport:
    """Read, scrub and derive every session of ``paths``; write the suite to
    ``out`` (created; an existing suite there is replaced only as a whole).
    ``progress``: where a large import says how far it is (default: nowhere)."""
    s = settings or ImportSettings()
    progress = progress or ImportProgress(io.StringIO())
    if not s.opt_in:
        raise SuiteError("organic sessions need their owners' opt-in (§20.7); pass --opt-in to "
                         "confirm it, and it is recorded in the suite's metadata")
    if not (s.fill > 0 and math.isfinite(s.fill)):
        raise SuiteError(f"--fill is {s.fill}; pass a positive window fill such as 2.5")
    read: list[tuple[str, str, RawSession | Session]] = []
    sources = []
    paths = [Path(p) for p in paths]
    for path in paths:
        if not path.is_file():
            raise SuiteError(f"{path}: not a file; pass transcript files (Claude Code .jsonl, "
                             ".aider.chat.history.md, SWE-agent .traj, chat .jsonl)")
    sizes = [check_size(path, s.max_mb) for path in paths]  # every file, before reading any
    for path, size in zip(paths, sizes, strict=True):
        progress.file(path, size)
        used, raws = _read(path, fmt, s.read)
        source = Scrubber(extra_names=s.extra_names).scrub(path.name)
        sources.append({"file": source, "sha256": _sha256(path), "format": used})
        sessions = [raws] if isinstance(raws, Session) else raws
        events = sum(len(r.items) if isinstance(r, Session) else len(r.events) for r in sessions)
        progress.step(f"{path.name}: {len(sessions)} session(s), {events:,} messages and events")
        read += [(used, source, raw) for raw in sessions]
    return write_suite(read, out, s, sources, writer, progress)


def write_suite(sessions: list[tuple[str, str, RawSession | Session]], out: Path,
                settings: ImportSettings, sources: list[dict[str, Any]] | None = None,
                writer: ProbeModel | None = None,
                progress: ImportProgress | None = None) -> ImportReport:
    """(format, source file name, session) triples -> the suite folder ``out``."""
    s = settings
    progress = progress or ImportProgress(io.StringIO())
    suite_id = _safe_id(s.name)
    report = ImportReport(str(out), suite_id, sources=list(sources or []))
    cases: list[BenchmarkCase] = []
    taken: set[str] = set()
    for used, source, raw in sessions:
        session, truth, drafts, rep = _session(raw, s, used, source, taken, progress)
        progress.step(f"{rep.session_id}: budget, compression points and probes")
        cases += _cases(session, truth, drafts, s, rep, source, writer)
        report.sessions.append(rep)
    _tag_calibration(cases, s.calibration, report)
    if not cases:
        names = ", ".join(sorted({src for _, src, _ in sessions})) or "the input"
        raise SuiteError(f"{names}: no session gave a case (no ground truth and no probe); import "
                         "longer sessions, where later turns use what earlier ones showed")
    progress.step(f"writing {len(cases)} case(s) to {out}")
    _write(out, suite_id, s, cases, report)
    return report


def _tag_calibration(cases: list[BenchmarkCase], wanted: int | None, report: ImportReport) -> None:
    """Calibrated scorers (weights, prompt, online) learn from calibration cases:
    the replay cases of every fourth session (at least one when two or more
    sessions have ground truth) become those, never evaluated."""
    replay = [c for c in cases if c.expected.mode == "metric_threshold"]
    n = wanted if wanted is not None else (max(1, len(replay) // 4) if len(replay) >= 2 else 0)
    if n > len(replay) - 1 and n > 0:
        raise SuiteError(f"--calibration is {n} but only {len(replay)} session(s) have ground "
                         f"truth; keep at least one for evaluation (at most {len(replay) - 1})")
    step = len(replay) / n if n else 0
    for k in range(n):
        case = replay[int(k * step + step - 1)]
        case.tags.append(CALIBRATION_TAG)
        for rep in report.sessions:
            if case.case_id in rep.cases:
                rep.notes.append(f"{case.case_id} calibrates the calibrated scorers "
                                 "(weights, prompt, online); it is not evaluated")


def _write(out: Path, suite_id: str, s: ImportSettings, cases: list[BenchmarkCase],
           report: ImportReport) -> None:
    suite = BenchmarkSuite(suite_id=suite_id, name=s.name, target="silas.context_manager",
                           version="1.0.0", metadata={
                               "source": "organic", "generator": "silas_exp.data.transcripts",
                               "opt_in": s.opt_in, "created_at": datetime.now(UTC).isoformat(),
                               "description": f"{len(report.sessions)} imported session(s)"})
    tmp = out.with_name(out.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    (tmp / "cases").mkdir(parents=True)
    (tmp / "suite.json").write_text(json.dumps(suite.model_dump(mode="json"), indent=1) + "\n")
    for case in cases:
        (tmp / "cases" / f"{case.case_id}.json").write_text(
            json.dumps(case.model_dump(mode="json", exclude_defaults=False), indent=1,
                       ensure_ascii=False) + "\n", encoding="utf-8")
    body = {"suite_id": suite_id, "sources": report.sources,
            "sessions": [vars(r) for r in report.sessions]}
    (tmp / "import_report.json").write_text(json.dumps(body, indent=1) + "\n")
    if out.exists():
        old = out.with_name(out.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, out)
