"""Load and validate suites: ``suites/<name>/suite.json`` plus optional
``cases/*.json`` and ``baseline.json`` (Silas §20.4). Every problem becomes a
``SuiteError`` naming the file, the case, the field, and what was expected."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from silas_exp.context.budget import PROFILES, TokenBudget, ZoneShares
from silas_exp.errors import SuiteError
from silas_exp.probes.schema import ProbePlan
from silas_exp.schema.benchmark import BenchmarkCase, BenchmarkSuite
from silas_exp.schema.session import Session, SessionTruth

CALIBRATION_TAG = "calibration"


@dataclass(frozen=True)
class LoadedSuite:
    suite: BenchmarkSuite
    root: Path
    files: dict[str, Path]  # case_id -> file it came from

    @property
    def eval_cases(self) -> list[BenchmarkCase]:
        return [c for c in self.suite.cases if CALIBRATION_TAG not in c.tags]

    @property
    def calibration_cases(self) -> list[BenchmarkCase]:
        return [c for c in self.suite.cases if CALIBRATION_TAG in c.tags]


@dataclass(frozen=True)
class SessionCase:
    case: BenchmarkCase
    session: Session
    truth: SessionTruth
    budget: TokenBudget
    shares: ZoneShares


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise SuiteError(f"{path}: file not found. Check the suite path (suite.path) or create it.")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SuiteError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}). "
            "Fix the syntax — a trailing comma or a missing quote is the usual cause."
        ) from None
    except UnicodeDecodeError:
        raise SuiteError(f"{path}: not UTF-8 text; save it as UTF-8 JSON.") from None


def _explain(exc: ValidationError, path: Path, data: Any, what: str) -> SuiteError:
    lines = []
    for err in exc.errors()[:5]:
        loc = list(err["loc"])
        where = what
        if len(loc) >= 2 and loc[0] == "cases" and isinstance(loc[1], int):
            case = data.get("cases", [])[loc[1]] if isinstance(data, dict) else None
            cid = case.get("case_id") if isinstance(case, dict) else None
            where = f"case {cid!r}" if cid else f"case #{loc[1]}"
            loc = loc[2:]
        field = ".".join(str(p) for p in loc) or "(top level)"
        got = err.get("input")
        got_s = "missing" if err["type"] == "missing" else f"got {json.dumps(got, default=str)[:60]}"
        lines.append(f"{where}, field '{field}': {err['msg']} ({got_s})")
    more = f" (+{len(exc.errors()) - 5} more)" if len(exc.errors()) > 5 else ""
    return SuiteError(
        f"{path}: does not match the BenchmarkSuite schema (§20.2): " + "; ".join(lines) + more
        + ". Fix these fields and run again."
    )


def load_suite(path: str | Path) -> LoadedSuite:
    """Load ``path`` (a suite directory or its suite.json) with its cases/*.json."""
    path = Path(path)
    suite_file = path / "suite.json" if path.is_dir() else path
    root = suite_file.parent
    data = _read_json(suite_file)
    try:
        suite = BenchmarkSuite.model_validate(data)
    except ValidationError as exc:
        raise _explain(exc, suite_file, data, "suite") from None
    files = {c.case_id: suite_file for c in suite.cases}
    for case_file in sorted((root / "cases").glob("*.json")) if (root / "cases").is_dir() else []:
        raw = _read_json(case_file)
        try:
            case = BenchmarkCase.model_validate(raw)
        except ValidationError as exc:
            cid = raw.get("case_id") if isinstance(raw, dict) else None
            raise _explain(exc, case_file, raw, f"case {cid!r}" if cid else "case") from None
        if case.case_id in files:
            raise SuiteError(
                f"{case_file}: case_id {case.case_id!r} already defined in {files[case.case_id]}; "
                "case ids must be unique within a suite."
            )
        files[case.case_id] = case_file
        suite.cases.append(case)
    if not suite.cases:
        raise SuiteError(f"{suite_file}: the suite has no cases; add cases or cases/*.json files.")
    return LoadedSuite(suite, root, files)


def session_case(loaded: LoadedSuite, case: BenchmarkCase, base_budget: TokenBudget) -> SessionCase:
    """Turn a case into a replayable session (input side) and its truth (expected side)."""
    src = loaded.files[case.case_id]
    where = f"{src}: case {case.case_id!r}"
    args = case.input.skill_args or {}
    overrides = case.input.config_overrides or {}
    try:
        if "session_file" in args:
            raw = _read_json(loaded.root / args["session_file"])
            session = Session.model_validate(raw.get("session", raw))
            truth = SessionTruth.model_validate(raw.get("truth", {"references": []}))
        else:
            expected = case.expected.value if isinstance(case.expected.value, dict) else {}
            session = Session.model_validate({
                "session_id": case.case_id, "scope_id": args.get("scope_id", case.case_id),
                "profile": overrides.get("profile", "coding"), "turns": args.get("turns"),
                "items": case.input.context or [],
            })
            truth = SessionTruth.model_validate({"references": expected.get("references", [])})
        truth.check_against(session)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = list(err["loc"])
        if len(loc) >= 2 and loc[0] in ("items", "references") and isinstance(loc[1], int):
            pool = (case.input.context or []) if loc[0] == "items" else []
            ident = pool[loc[1]].get("ctx_id") if loc[1] < len(pool) else None
            loc = [f"{'input.context' if loc[0] == 'items' else 'references'}[{loc[1]}]"
                   + (f" (ctx_id {ident!r})" if ident else "")] + loc[2:]
        field = ".".join(str(p) for p in loc)
        raise SuiteError(f"{where}: field '{field}': {err['msg']} (got {err.get('input')!r}). "
                         "Fix the session data.") from None
    except ValueError as exc:
        raise SuiteError(f"{where}: {exc}.") from None
    try:
        budget = base_budget.model_copy(update=overrides.get("budget", {}))
        budget = TokenBudget.model_validate(budget.model_dump())
        shares = ZoneShares.model_validate(overrides["shares"]) if "shares" in overrides \
            else PROFILES[session.profile]
    except ValidationError as exc:
        err = exc.errors()[0]
        raise SuiteError(f"{where}: config_overrides: {err['msg']}. Fix the case's config_overrides.") from None
    return SessionCase(case, session, truth, budget, shares)


def probe_plan(loaded: LoadedSuite, case: BenchmarkCase) -> ProbePlan:
    """The compression events and probes of an ``llm_judge`` case."""
    where = f"{loaded.files[case.case_id]}: case {case.case_id!r}"
    value = case.expected.value if isinstance(case.expected.value, dict) else {}
    if "probe_plan" not in value:
        raise SuiteError(f"{where}: expected.mode is 'llm_judge' but expected.value has no "
                         "'probe_plan' (compressions + probes); see probes/default for the format.")
    try:
        plan = ProbePlan.model_validate(value["probe_plan"])
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(["expected.value.probe_plan", *(str(p) for p in err["loc"])])
        got = err.get("input")
        shown = "" if isinstance(got, dict | list) else f" (got {got!r})"
        raise SuiteError(f"{where}: field '{field}': {err['msg']}{shown}. Fix the probe plan.") from None
    turns = (case.input.skill_args or {}).get("turns")
    late = [t for t in plan.compressions if turns is not None and t >= turns]
    if late:
        raise SuiteError(f"{where}: field 'expected.value.probe_plan.compressions' has turn(s) {late} "
                         f"but the session has {turns} turns (0..{turns - 1}); move the compressions "
                         "or raise input.skill_args.turns.")
    return plan
