"""Load and validate suites: ``suites/<name>/suite.json`` plus optional
``cases/*.json`` and ``baseline.json`` (Silas §20.4). Every problem names the
file, the case, the field, and what was expected; a suite with several
problems reports them all in one ``SuiteError`` (duplicate case ids, bad
zones, missing fields …), so one run shows what to fix. Items of a kind
outside the eight are read as their zone's generic kind, with a warning that
counts them (``LoadedSuite.generic_kinds``). A case the schema allows but the
eviction runner cannot replay (no context, no session file) is skipped with a
warning that counts it (``LoadedSuite.unreplayable``); jobs report it
``skipped``."""

from __future__ import annotations

import json
import warnings
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from pydantic import ValidationError

from silas_exp.context.budget import PROFILES, TokenBudget, ZoneShares, item_tokens
from silas_exp.data.json_errors import json_hint
from silas_exp.data.suites.case_budget import case_budget, overrides_problem
from silas_exp.data.suites.expected import expected_problems
from silas_exp.errors import SuiteError, SuiteWarning
from silas_exp.facts.fact import Fact, norm
from silas_exp.probes.schema import ProbePlan
from silas_exp.schema.benchmark import CALIBRATION_TAG, BenchmarkCase, BenchmarkSuite
from silas_exp.schema.session import CONTEXT_ITEM_NAMES, Session, SessionTruth

if TYPE_CHECKING:
    from silas_exp.data.suites.pool import Pool

HUMAN_LABELS = "human_labels.json"  # {case_id: "pass" | "fail" | free text}


CACHED_CASES = 64  # parsed cases kept in memory; a larger suite is re-read case by case
Parsed = tuple[Session, SessionTruth, int | None]  # session, truth, flush turn of a snapshot


@dataclass(frozen=True)
class LoadedSuite:
    """A validated suite. Cases in ``cases/*.json`` are not held: every one is
    checked at load, and read again (the last ``CACHED_CASES`` stay parsed)
    when a job reaches it, so a suite of any size loads in bounded memory."""

    suite: BenchmarkSuite  # suite.json as written: its inline cases only
    root: Path
    files: dict[str, Path]  # case_id -> file it came from, in suite order
    human_labels: dict[str, str] = field(default_factory=dict)
    calibration_ids: set[str] = field(default_factory=set)
    plans: dict[str, ProbePlan] = field(default_factory=dict)  # case_id -> checked probe plan
    pool: Pool | None = None  # a generated pool: cases made from its recipe when first read
    # kind as written -> items read as their zone's generic kind (schema.session.generic_kind)
    generic_kinds: Counter[str] = field(default_factory=Counter)
    # case_id -> why it is skipped: valid §20.2, but nothing the eviction runner can replay
    unreplayable: dict[str, str] = field(default_factory=dict)
    # case_id -> (case, parsed session or None until asked), least recently used first
    _cache: OrderedDict[str, tuple[BenchmarkCase, Parsed | None]] = field(
        default_factory=OrderedDict)

    @property
    def cases(self) -> CaseList:
        return CaseList(self, list(self.files))

    @property
    def eval_cases(self) -> CaseList:
        return CaseList(self, [c for c in self.files if c not in self.calibration_ids])

    @property
    def calibration_cases(self) -> CaseList:
        return CaseList(self, [c for c in self.files if c in self.calibration_ids])

    def case(self, case_id: str) -> BenchmarkCase:
        if case_id in self._cache:
            self._cache.move_to_end(case_id)
            return self._cache[case_id][0]
        path = self.files[case_id]
        if self.pool is not None:
            from silas_exp.data.suites.pool import generate  # the generator: only pool suites

            return self._keep(_read_case(generate(self.pool, case_id)), None)
        if path.parent == self.root / "cases":
            return self._keep(_read_case(path), None)
        return self._keep(next(c for c in self.suite.cases if c.case_id == case_id), None)

    def parsed(self, case: BenchmarkCase) -> Parsed:
        """The case's session, truth and flush turn (parsed once while cached)."""
        cached = self._cache.get(case.case_id)
        if cached is not None and cached[1] is not None:
            self._cache.move_to_end(case.case_id)
            return cached[1]
        parsed = _parse_session(self, case)
        self._keep(case, parsed)
        return parsed

    def _keep(self, case: BenchmarkCase, parsed: Parsed | None) -> BenchmarkCase:
        self._cache[case.case_id] = (case, parsed)
        self._cache.move_to_end(case.case_id)
        while len(self._cache) > CACHED_CASES:
            self._cache.popitem(last=False)
        return case


class CaseList(Sequence[BenchmarkCase]):
    """Cases of a loaded suite by id, each read when it is reached."""

    def __init__(self, loaded: LoadedSuite, ids: list[str]) -> None:
        self.loaded, self.ids = loaded, ids

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> BenchmarkCase: ...
    @overload
    def __getitem__(self, index: slice) -> CaseList: ...

    def __getitem__(self, index: int | slice) -> BenchmarkCase | CaseList:
        if isinstance(index, slice):
            return CaseList(self.loaded, self.ids[index])
        return self.loaded.case(self.ids[index])


@dataclass(frozen=True)
class SessionCase:
    case: BenchmarkCase
    session: Session
    truth: SessionTruth
    budget: TokenBudget
    shares: ZoneShares
    flush_turn: int | None = None  # a snapshot case: the turn of its one flush decision


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise SuiteError(f"{path}: file not found. Check the suite path (suite.path) or create it.")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SuiteError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: "
                         f"{exc.msg}). {json_hint(exc)}") from None
    except UnicodeDecodeError:
        raise SuiteError(f"{path}: not UTF-8 text; save it as UTF-8 JSON.") from None


def _explain(exc: ValidationError, path: Path, data: Any, what: str) -> SuiteError:
    lines = []
    for err in exc.errors()[:20]:
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
    more = f" (+{len(exc.errors()) - 20} more)" if len(exc.errors()) > 20 else ""
    return SuiteError(
        f"{path}: does not match the BenchmarkSuite schema (§20.2): " + "; ".join(lines) + more
        + ". Fix these fields and run again."
    )


def _read_case(case_file: Path) -> BenchmarkCase:
    raw = _read_json(case_file)
    try:
        return BenchmarkCase.model_validate(raw)
    except ValidationError as exc:
        cid = raw.get("case_id") if isinstance(raw, dict) else None
        raise _explain(exc, case_file, raw, f"case {cid!r}" if cid else "case") from None


def load_suite(path: str | Path) -> LoadedSuite:
    """Load ``path`` (a suite directory or its suite.json) with its cases/*.json.
    Every case is checked now, before any job runs; none is held beyond the
    last ``CACHED_CASES``. Every problem of the suite — schema and meaning,
    in suite.json's own cases as in cases/*.json — is reported at once. A
    case that fits the schema but gives nothing to replay is skipped, with a
    warning (``LoadedSuite.unreplayable``)."""
    path = Path(path)
    suite_file = path / "suite.json" if path.is_dir() else path
    root = suite_file.parent
    data = _read_json(suite_file)
    raw_cases = data.get("cases") if isinstance(data, dict) else None
    inline = raw_cases if isinstance(raw_cases, list) else []
    head = {**data, "cases": []} if isinstance(raw_cases, list) else data
    problems: list[str] = []
    try:
        suite = BenchmarkSuite.model_validate(head)
    except ValidationError as exc:
        problems.append(str(_explain(exc, suite_file, head, "suite")))
        suite = BenchmarkSuite.model_construct(suite_id="", name="", target="", version="0.0.0")
    labels = _read_json(root / HUMAN_LABELS) if (root / HUMAN_LABELS).is_file() else {}
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise SuiteError(f"{root / HUMAN_LABELS}: expected an object {{case_id: label}} with "
                         "string labels such as \"pass\" or \"fail\".")
    files: dict[str, Path] = {}
    from silas_exp.data.suites.pool import pool_of

    pool = pool_of(suite.metadata, root, suite_file) if not problems else None
    if pool is not None:
        return _load_pool(LoadedSuite(suite, root, files, labels, pool=pool))
    loaded = LoadedSuite(suite, root, files, labels)
    case_files = sorted((root / "cases").glob("*.json")) if (root / "cases").is_dir() else []
    entries = [(suite_file, raw) for raw in inline] + [(f, None) for f in case_files]
    valid: list[BenchmarkCase] = []
    seen: dict[str, Path] = {}  # case ids, of valid cases and of cases that break the schema
    unread = 0  # cases that break the schema: their tags are unknown
    for n, (case_file, raw) in enumerate(entries):
        try:
            case = _read_case(case_file) if raw is None else _inline_case(suite_file, n, raw)
        except SuiteError as exc:
            problems.append(str(exc))  # and the case's id is still checked for duplicates
            case, cid = None, raw.get("case_id") if isinstance(raw, dict) else None
            unread += 1
        else:
            cid = case.case_id
        if isinstance(cid, str) and cid in seen:
            where = "appears twice in 'cases'" if case_file == seen[cid] == suite_file \
                else f"is a duplicate: already defined in {seen[cid]}"
            problems.append(f"{case_file}: case_id {cid!r} {where}; case ids must be "
                            "unique within a suite — rename one.")
            continue
        if isinstance(cid, str):
            seen[cid] = case_file
        if case is None:
            continue
        files[case.case_id] = case_file
        if raw is not None:
            valid.append(case)
        if CALIBRATION_TAG in case.tags:
            loaded.calibration_ids.add(case.case_id)
        problems += _check_case(loaded, case)
    if problems:
        error = SuiteError(problems[0] if len(problems) == 1 else
                           f"{suite_file}: the suite has {len(problems)} problems; fix them all:\n"
                           + "\n".join(f"  {n}. {p}" for n, p in enumerate(problems, 1)))
        error.problems = problems
        # what a job would need of it besides (run/suite_needs.py), read from the cases that load
        error.partial = replace(loaded, suite=suite) if not unread else None
        raise error
    loaded = replace(loaded, suite=suite.model_copy(update={"cases": valid}))
    if not files:
        raise SuiteError(f"{suite_file}: the suite has no cases; add cases or cases/*.json files.")
    _warn_skipped(loaded, suite_file)
    if loaded.generic_kinds:
        counts = ", ".join(f"{n} of kind {k!r}" for k, n in sorted(loaded.generic_kinds.items()))
        warnings.warn(SuiteWarning(
            f"{suite_file}: items of a kind outside Silas's eight ({counts}) are read as their "
            "zone's generic kind (chronicle: agent_response, memory: memory, workspace: plan, "
            "system: system_prompt)"), stacklevel=2)
    return loaded


def _inline_case(suite_file: Path, index: int, raw: Any) -> BenchmarkCase:
    """One of suite.json's own cases, checked on its own (so that the others'
    problems are found too)."""
    try:
        return BenchmarkCase.model_validate(raw)
    except ValidationError as exc:
        cid = raw.get("case_id") if isinstance(raw, dict) else None
        raise _explain(exc, suite_file, raw, f"case {cid!r}" if cid else f"case #{index}") from None


def _warn_skipped(loaded: LoadedSuite, suite_file: Path) -> None:
    """Cases that fit the schema but give the runner nothing to replay: skipped
    (each job counts them in ``summary.skipped``), with one warning; refused
    when no case is left."""
    if not loaded.unreplayable:
        return
    ids = list(loaded.unreplayable)
    if len(ids) == len(loaded.files):
        raise SuiteError(f"{suite_file}: none of the suite's {len(ids)} case(s) can be replayed "
                         f"(first: case {ids[0]!r}: {loaded.unreplayable[ids[0]]}); give each "
                         "case input.context items or input.skill_args.session_file.")
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    warnings.warn(SuiteWarning(
        f"{suite_file}: {len(ids)} of {len(loaded.files)} case(s) are skipped: "
        f"{loaded.unreplayable[ids[0]]} ({shown}). The §20.2 schema allows them, but "
        "the eviction runner has nothing to replay; give them input.context items or "
        "input.skill_args.session_file to run them."), stacklevel=3)


def _load_pool(loaded: LoadedSuite) -> LoadedSuite:
    """A generated pool's cases by id, none generated yet: the recipe's own
    tests check that what it generates loads and runs."""
    assert loaded.pool is not None
    for case_id, mix in zip(loaded.pool.ids(), loaded.pool.recipe.mix, strict=True):
        loaded.files[case_id] = loaded.pool.file(case_id)
        if mix.split == "calibration":
            loaded.calibration_ids.add(case_id)
    return loaded


def _check_case(loaded: LoadedSuite, case: BenchmarkCase) -> list[str]:
    """Every problem of a case surfaces at load: its expected block, its session
    data and (compression probes) its probe plan."""
    out = []
    problems = expected_problems(case)
    if problems:
        out.append(f"{loaded.files[case.case_id]}: case {case.case_id!r}: "
                   + "; ".join(problems) + ". Fix the case's expected block.")
    problem = overrides_problem(case)
    if problem:
        out.append(f"{loaded.files[case.case_id]}: case {case.case_id!r}: {problem}")
    if _nothing_to_replay(case):
        loaded.unreplayable[case.case_id] = NOTHING_TO_REPLAY
        return out
    try:
        session = loaded.parsed(case)[0]
        loaded.generic_kinds.update(it.declared_kind for it in session.items if it.declared_kind)
        if case.expected.mode == "llm_judge" and not problems:
            probe_plan(loaded, case)  # a plan that cannot be honoured is a problem too
    except SuiteError as exc:
        out.append(str(exc))
    return out


NOTHING_TO_REPLAY = "no input.context items and no input.skill_args.session_file: nothing to replay"


def _nothing_to_replay(case: BenchmarkCase) -> bool:
    args = case.input.skill_args or {}
    return "session_file" not in args and args.get("turns") is None and not case.input.context


def _snapshot_truth(case: BenchmarkCase, flush_turn: int) -> dict:
    """A snapshot case's ground truth: "keep" ids are needed (grade 3) right
    after the flush; "references" may also be given as in a replay case."""
    value = case.expected.value if isinstance(case.expected.value, dict) else {}
    refs = list(value.get("references", []))
    refs += [{"turn": flush_turn + 1, "ctx_id": cid, "grade": 3} for cid in value.get("keep", [])]
    return {"references": refs}


def _parse_session(loaded: LoadedSuite, case: BenchmarkCase) -> Parsed:
    """The case's session (input side) and truth (expected side). A case with
    ``input.context`` but no turn script (``skill_args.turns``) is a snapshot
    of a window: it runs as one flush decision of the scorer at its last turn."""
    src = loaded.files[case.case_id]
    where = f"{src}: case {case.case_id!r}"
    args = case.input.skill_args or {}
    overrides = case.input.config_overrides or {}
    flush_turn = None
    try:
        if "session_file" in args:
            raw = _read_json(loaded.root / args["session_file"])
            session = Session.model_validate(raw.get("session", raw))
            truth = SessionTruth.model_validate(raw.get("truth", {"references": []}))
        else:
            expected = case.expected.value if isinstance(case.expected.value, dict) else {}
            turns = args.get("turns")
            items = case.input.context or []
            truth_raw = {"references": expected.get("references", [])}
            if turns is None:
                if not items:
                    raise ValueError(NOTHING_TO_REPLAY)
                session = Session.model_validate({
                    "session_id": case.case_id, "scope_id": args.get("scope_id", case.case_id),
                    "profile": overrides.get("profile", "coding"), "turns": 1, "items": [],
                })  # profile checked first; the items below
                parsed = Session.model_validate({**session.model_dump(), "turns": 10**9,
                                                 "items": items})
                flush_turn = max(it.turn for it in parsed.items)
                session = parsed.model_copy(update={"turns": flush_turn + 2})
                truth_raw = _snapshot_truth(case, flush_turn)
            else:
                session = Session.model_validate({
                    "session_id": case.case_id, "scope_id": args.get("scope_id", case.case_id),
                    "profile": overrides.get("profile", "coding"), "turns": turns,
                    "items": items,
                })
            truth = SessionTruth.model_validate(truth_raw)
        truth.check_against(session)
    except ValidationError as exc:
        found = []
        for err in exc.errors()[:20]:  # every bad field of the case (a bad zone, a missing turn …)
            loc = list(err["loc"])
            if len(loc) >= 2 and loc[0] in ("items", "references") and isinstance(loc[1], int):
                pool = (case.input.context or []) if loc[0] == "items" else []
                raw = pool[loc[1]] if loc[1] < len(pool) and isinstance(pool[loc[1]], dict) else {}
                ident = raw.get("ctx_id")
                if len(loc) >= 3:  # the field as the case writes it (Silas's token_count …)
                    loc[2] = next((k for k, ours in CONTEXT_ITEM_NAMES.items()
                                   if ours == loc[2] and k in raw), loc[2])
                loc = [f"{'input.context' if loc[0] == 'items' else 'references'}[{loc[1]}]"
                       + (f" (ctx_id {ident!r})" if ident else "")] + loc[2:]
            name = ".".join(str(p) for p in loc) or "input.context"
            got = "" if err["type"] in ("value_error", "missing") else f" (got {err.get('input')!r})"
            found.append(f"field '{name}': {err['msg']}{got}")
        raise SuiteError(f"{where}: " + "; ".join(found) + ". Fix the session data.") from None
    except ValueError as exc:
        raise SuiteError(f"{where}: {exc}.") from None
    return session, truth, flush_turn


def replay_size(loaded: LoadedSuite, case: BenchmarkCase, base_budget: TokenBudget) -> float:
    """How long a replay of ``case`` takes, known before it: its turns times
    how many times its items' tokens overflow its budget (a replay's model
    calls come at its evictions, the more often the further over budget). 0
    for a case that cannot be parsed: its error comes when it is run."""
    try:
        sc = session_case(loaded, case, base_budget)
    except (SuiteError, KeyError):
        return 0.0
    tokens = sum(item_tokens(item) for item in sc.session.items)  # None: counted from its text
    return sc.session.turns * max(1.0, tokens / sc.budget.total)


def session_case(loaded: LoadedSuite, case: BenchmarkCase, base_budget: TokenBudget) -> SessionCase:
    """A loaded case as a replayable session with its truth, budget and shares."""
    overrides = case.input.config_overrides or {}
    session, truth, flush_turn = loaded.parsed(case)
    try:
        budget, shares = case_budget(overrides, base_budget)
    except ValidationError:
        raise SuiteError(f"{loaded.files[case.case_id]}: case {case.case_id!r}: "
                         + (overrides_problem(case, base_budget) or "config_overrides do not "
                            "fit the run's budget. Fix the case's config_overrides.")) from None
    return SessionCase(case, session, truth, budget, shares or PROFILES[session.profile],
                       flush_turn)


def probe_plan(loaded: LoadedSuite, case: BenchmarkCase) -> ProbePlan:
    """The compression events and probes of an ``llm_judge`` case (checked once, then cached)."""
    if case.case_id in loaded.plans:
        return loaded.plans[case.case_id]
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
    _check_facts_shown(where, plan, loaded.parsed(case)[0])
    loaded.plans[case.case_id] = plan
    return plan


def _check_facts_shown(where: str, plan: ProbePlan, session: Session) -> None:
    """Every expected fact's value must be shown (text or planted facts) by an
    item that entered before its probe's compression: a probe about something
    the session never said measures nothing."""
    shown: dict[int, str] = {}
    for i, turn in enumerate(plan.compressions):
        shown[i] = norm(" ".join(t for it in session.items if it.turn <= turn
                                 for t in (it.text, *it.facts)))
    for n, probe in enumerate(plan.probes):
        for k, raw in enumerate(probe.expected):
            value = Fact.parse(raw).value
            if norm(value) not in shown[probe.cut]:
                raise SuiteError(
                    f"{where}: field 'expected.value.probe_plan.probes[{n}].expected[{k}]' is "
                    f"{raw!r}, but no item up to the compression at turn "
                    f"{plan.compressions[probe.cut]} shows {value!r}. Fix the fact's value, or "
                    "ask it at a later compression.")
