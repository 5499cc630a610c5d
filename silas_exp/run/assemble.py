"""Where a job's parts are built, and only here: the job's identity
(``JobSpec``), its LLM client and feedback store (``open_job``, once per job),
and, for each replay of a case, the scorer, the main model's keep-back broker
and the eviction strategy wired to them (``JobParts.case_parts``).

The case loop (``run/job.py``), the calibration replays (``run/calibration.py``)
and the control's reference replays (``run/references.py``) all take their
parts from a ``JobParts``; a replay with another store or config (calibration
with exploration, a reference that records nothing) is the same parts with
that one thing changed (``JobParts.with_store``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from silas_exp.config import ExperimentConfig, job_seed
from silas_exp.context.replay import NeedOracle
from silas_exp.context.stats import ReplayStats
from silas_exp.data.suites.loader import LoadedSuite, SessionCase
from silas_exp.eviction.base import EvictionStrategy, StrategyDeps, build_strategy
from silas_exp.feedback.calibration import Calibration
from silas_exp.feedback.flush import KeepBackBroker, MainModel
from silas_exp.feedback.store import DiscardingStore, FeedbackStore
from silas_exp.llm import LLMClient, build_client
from silas_exp.llm.accounting import Accounting
from silas_exp.scorers import Scorer, ScorerContext, build_scorer


@dataclass(frozen=True)
class JobSpec:
    variant: str
    repeat: int
    seed: int
    block: int = 0  # which block of the suite's cases (sequential studies)

    @property
    def namespace(self) -> str:
        # shared by every variant of one repeat: common random numbers (paired design)
        return f"r{self.repeat}-s{self.seed}"


def make_job(cfg: ExperimentConfig, variant: str) -> JobSpec:
    return JobSpec(variant=variant, repeat=cfg.repeat, seed=job_seed(cfg.seed, cfg.repeat),
                   block=cfg.block)


@dataclass(frozen=True)
class CaseParts:
    """One replay's scorer, keep-back broker and the strategy that uses them."""

    scorer: Scorer
    broker: KeepBackBroker
    strategy: EvictionStrategy


@dataclass(frozen=True)
class JobParts:
    """What a job's replays are made with. ``overhead`` counts the model calls
    made only to measure (calibration replays, the control's reference
    replays): made or not depending on what the process already holds, so they
    are kept out of the job's own ``llm.*`` metrics (``llm.overhead.*``)."""

    cfg: ExperimentConfig
    job: JobSpec
    loaded: LoadedSuite
    llm: LLMClient
    store: FeedbackStore | DiscardingStore
    overhead: Accounting

    def with_store(self, store: FeedbackStore | DiscardingStore,
                   cfg: ExperimentConfig | None = None) -> JobParts:
        """The same parts recording feedback in ``store`` (and under ``cfg``)."""
        return replace(self, store=store, cfg=self.cfg if cfg is None else cfg)

    def main_model(self) -> MainModel:
        model = self.cfg.model
        return MainModel(model.main_id, model.backend, model.keepback)

    def case_parts(self, sc: SessionCase, namespace: str, scorer_settings: Any,
                   calibration: Calibration | None, oracle: NeedOracle,
                   stats: ReplayStats) -> CaseParts:
        """The config's strategy for one replay of ``sc``, wired to a scorer of
        ``scorer_settings`` and a keep-back broker, both under ``namespace``."""
        cfg, horizon = self.cfg, self.cfg.metrics.horizon
        scorer = build_scorer(scorer_settings, ScorerContext(
            seed=self.job.seed, namespace=namespace, scorer_model=cfg.model.scorer_id, llm=self.llm,
            calibration=calibration, prompt=cfg.prompt,
            oracle=lambda cid, t: oracle.need_score(cid, t, horizon),
        ))
        broker = KeepBackBroker(self.main_model(), self.llm, self.store, namespace, self.job.seed,
                                oracle.max_grade_within)
        strategy = build_strategy(cfg.eviction, StrategyDeps(
            budget=sc.budget, shares=sc.shares, stats=stats, scope_id=sc.session.scope_id,
            scorer=scorer, broker=broker, llm=self.llm, namespace=namespace,
            model_id=cfg.model.main_id,
        ))
        return CaseParts(scorer, broker, strategy)


@contextmanager
def open_job(cfg: ExperimentConfig, job: JobSpec, out_dir: Path, loaded: LoadedSuite,
             spend_ledger: Path | None = None) -> Iterator[JobParts]:
    """The job's parts, its LLM client open for the block. The feedback store
    (``out_dir/feedback.sqlite``, fresh) outlives the block: the job reads its
    rates after the client closes, then closes it. ``spend_ledger``: the
    sweep's spend file, so ``llm.max_usd`` caps the whole sweep (default: one
    ledger in ``out_dir``, i.e. per job)."""
    store = FeedbackStore(out_dir / "feedback.sqlite", fresh=True)
    with build_client(cfg.llm, seed=job.seed, cache_dir=cfg.llm.cache_dir,
                      ledger_path=spend_ledger or out_dir / "llm_spend.sqlite",
                      job_key=f"{job.variant}#r{job.repeat}") as llm:
        if llm.backend_name != "simulated":
            llm.check_models([cfg.model.scorer_id, cfg.model.main_id, cfg.model.judge_id])
        yield JobParts(cfg, job, loaded, llm, store, Accounting(dict(cfg.llm.prices)))
