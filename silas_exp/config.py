"""Typed experiment config: the composed Hydra ``DictConfig`` is converted and
validated once, at the entry point. A bad value fails here with its key, the
value, what is allowed and how to fix it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from silas_exp.analysis.settings import AnalysisSettings
from silas_exp.context.budget import TokenBudget
from silas_exp.errors import ConfigError, problems_error, pydantic_error_to_config_error
from silas_exp.eviction.base import STRATEGIES, StrategySettings, validate_strategy_settings
from silas_exp.feedback.flush import KeepbackConfig
from silas_exp.llm.backends import BACKENDS
from silas_exp.llm.settings import LLMSettings
from silas_exp.metrics.plugins import case_metric_functions
from silas_exp.probes.judge import JUDGES, JudgeSettings
from silas_exp.scorers.base import SCORERS, ScorerSettings, validate_scorer_settings
from silas_exp.scorers.prompt import PromptSettings


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SuiteConfig(_Strict):
    name: str
    path: str
    max_cases: int | None = Field(default=None, ge=1)
    # a tuning study's train / holdout split of the evaluation cases (silas_exp.tune.split):
    # null runs every case; set per job by the tune sweeper (experiment=tune)
    split: Literal["train", "holdout"] | None = None
    holdout: float = Field(default=0.5, gt=0.0, lt=1.0)
    split_seed: int = Field(default=0, ge=0)


class ModelConfig(_Strict):
    name: str
    backend: str  # an LLM backend kind: simulated, anthropic or a plug-in's
    scorer_id: str
    main_id: str
    judge_id: str
    keepback: KeepbackConfig = Field(default_factory=KeepbackConfig)


class TrackingConfig(_Strict):
    enabled: bool = True
    uri: str | None = None
    artifact_root: str | None = None
    experiment_prefix: str = "silas"
    log_case_table: bool = True
    background: bool = True  # sweeps: one uploader process does all MLflow writes
    experiment: str | None = None  # one experiment for every suite (else <prefix>-<suite>)
    # LLM calls as MLflow traces (judge grades as feedback): auto = real-model runs only
    traces: Literal["auto", "always", "never"] = "auto"


class MetricsConfig(_Strict):
    horizon: int = Field(default=20, ge=1)  # look-ahead for need-graded ranking metrics
    optimize: str = "context.retrieval_relevance"
    plugins: list[str] = Field(default_factory=list)  # plug-in case metrics to compute (keys)

    @field_validator("plugins")
    @classmethod
    def _plugins_installed(cls, names: list[str]) -> list[str]:
        case_metric_functions(names)  # ConfigError naming the installed options
        return names


class PathsConfig(_Strict):
    root: str
    suites: str
    mlruns: str
    cache: str


class ModelPace(_Strict):
    """What the price table does not say about a model: how long an answer
    takes (first token, then output tokens at a rate; typical figures, not
    measured here, so a plan that uses them says so and widens its minutes) and
    the shortest prefix its prompt caching caches (shorter ones are billed in full)."""

    first_token_s: float = Field(default=1.0, gt=0)
    output_tokens_per_s: float = Field(default=80.0, gt=0)
    min_cache_tokens: int = Field(default=1024, ge=0)

    def answer_s(self, output_tokens: float) -> float:
        return self.first_token_s + output_tokens / self.output_tokens_per_s


class PlanConfig(_Strict):
    """A study's plan (config group ``plan``, silas_exp/plan): none of it
    changes what a job runs, so it is left out of every job's config hash."""

    # auto: a study on a real model carries its plan; true: every study; false: none
    carry: Literal["auto", True, False] = "auto"
    worlds: int = Field(default=40, ge=4, le=2000)
    seed: int = Field(default=0, ge=0)
    departure: tuple[float, float] = (0.0, 0.3)
    answer_s: float | None = Field(default=None, gt=0)
    requests_per_minute: float | None = Field(default=None, gt=0)
    max_in_flight: int | None = Field(default=None, ge=1)
    workers: int | None = Field(default=None, ge=1)
    cpu_ms_per_call: float = Field(default=9.0, ge=0)
    models: dict[str, ModelPace] = Field(default_factory=dict)

    @field_validator("departure")
    @classmethod
    def _share_range(cls, v: tuple[float, float]) -> tuple[float, float]:
        low, high = v
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(f"plan.departure=[{low}, {high}]: give a range of shares within "
                             "[0, 1], low first (e.g. [0.0, 0.3])")
        return v

    def pace(self, model_id: str) -> ModelPace:
        return self.models.get(model_id, ModelPace())


class ExperimentConfig(_Strict):
    seed: int = Field(default=0, ge=0)
    repeats: int | Literal["auto"] = 1  # "auto": adaptive rounds up to repeats_max
    repeats_min: int = Field(default=2, ge=2)  # repeats=auto: rounds before the first look
    repeats_max: int = Field(default=10, ge=2)
    repeat: int = Field(default=0, ge=0)
    # sequential over cases: a sweep runs the suite's cases in seeded blocks of this
    # many, looking at the verdicts after blocks (docs/analysis.md); null: one block
    cases_per_block: int | None = Field(default=40, ge=1)
    block: int = Field(default=0, ge=0)  # set per job by the sweeper
    fail_fast: bool = False
    resume: bool = False
    # the exit status of a run or sweep that completed (README "Exit codes"): a case that
    # errored (an exception, a broken contract) exits 1 unless case_errors=ignore; verdicts
    # named in fail_on (do_not_ship, inconclusive) exit 1 too, for CI, and so does a variant
    # that ships with a warning line when fail_on names warning
    case_errors: Literal["fail", "ignore"] = "fail"
    fail_on: list[Literal["do_not_ship", "inconclusive", "warning"]] = Field(default_factory=list)
    suite: SuiteConfig
    scorer: SerializeAsAny[ScorerSettings]
    eviction: SerializeAsAny[StrategySettings]
    model: ModelConfig
    prompt: PromptSettings
    judge: SerializeAsAny[JudgeSettings] = Field(default_factory=JudgeSettings)
    llm: LLMSettings
    budget: TokenBudget = Field(default_factory=TokenBudget)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    analysis: AnalysisSettings = Field(default_factory=AnalysisSettings)
    plan: PlanConfig = Field(default_factory=PlanConfig)  # what a study predicts of itself
    paths: PathsConfig
    experiment: str | None = None
    # a tuning study's settings (experiment=tune), validated by its sweeper: silas_exp.tune.driver
    tune: dict[str, Any] | None = None

    # Each check below is a field's own, so that pydantic reports every field's
    # problems together (a model validator would run only once every field is valid).
    @field_validator("scorer", mode="before")
    @classmethod
    def _scorer_by_kind(cls, v: Any) -> Any:
        return _checked(validate_scorer_settings, v) if isinstance(v, Mapping) else v

    @field_validator("eviction", mode="before")
    @classmethod
    def _strategy_by_kind(cls, v: Any) -> Any:
        return _checked(validate_strategy_settings, v) if isinstance(v, Mapping) else v

    @field_validator("judge", mode="before")
    @classmethod
    def _judge_by_kind(cls, v: Any) -> Any:
        return _checked(JUDGES.validate, v) if isinstance(v, Mapping) else v

    @field_validator("fail_on", mode="before")
    @classmethod
    def _one_verdict(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("repeats")
    @classmethod
    def _repeats_positive(cls, v: int | str) -> int | str:
        if v != "auto" and v < 1:
            raise ValueError("a sweep needs at least one repeat per variant: input should be "
                             "greater than or equal to 1 (or auto)")
        return v

    @field_validator("repeats_max")
    @classmethod
    def _min_below_max(cls, v: int, info: ValidationInfo) -> int:
        low = info.data.get("repeats_min")
        if low is not None and low > v:
            raise ValueError(f"repeats_min={low} > repeats_max={v}")
        return v

    @field_validator("repeat")
    @classmethod
    def _repeat_in_range(cls, v: int, info: ValidationInfo) -> int:
        repeats, most = info.data.get("repeats"), info.data.get("repeats_max")
        limit = most if repeats == "auto" else repeats
        if limit is not None and v >= limit:
            raise ValueError(f"repeat={v} but repeats={repeats}; repeat must be < "
                             f"{'repeats_max' if repeats == 'auto' else 'repeats'}")
        return v

    @field_validator("llm")
    @classmethod
    def _backend_and_prices(cls, v: LLMSettings, info: ValidationInfo) -> LLMSettings:
        """The backend is known and every model the job may call has a price
        (``model`` is validated before ``llm``): every such problem at once."""
        found: list[str] = []
        try:
            BACKENDS.get(v.backend)  # ConfigError naming the options when unknown
        except ConfigError as exc:
            found += exc.problems
        model = info.data.get("model")
        unpriced: dict[str, list[str]] = {}  # model id -> the roles that name it
        for role in ("scorer_id", "main_id", "judge_id") if model is not None else ():
            if getattr(model, role) not in v.prices:
                unpriced.setdefault(getattr(model, role), []).append(f"model.{role}")
        for model_id, roles in unpriced.items():
            found.append(
                f"{' and '.join(f'{r}={model_id!r}' for r in roles)}: {model_id!r} has no price "
                f"in llm.prices (known: {', '.join(sorted(v.prices))}); fix the id or add "
                f"+llm.prices.{model_id}={{input: ..., output: ..., cache_write: ..., cache_read: ...}} "
                "(USD per million tokens)")
        if found:
            raise problems_error(ConfigError("; ".join(found), problems=found))
        return v

    def variant_hash(self) -> str:
        """Hash of everything that defines the variant (not repeat, seed of the job,
        tracking, paths or cache settings): equal hashes = same treatment."""
        data = self.model_dump(mode="json", exclude={"repeat", "tracking", "paths", "fail_fast", "resume",
                                                       "case_errors", "fail_on",
                                                       "analysis", "repeats_min", "repeats_max",
                                                       "tune", "plan"})
        data["llm"] = {k: v for k, v in data["llm"].items() if k not in ("cache_dir", "cache_mode")}
        if not data["metrics"]["plugins"]:  # hashes of configs without plug-in metrics stay as they were
            del data["metrics"]["plugins"]
        if data["suite"]["split"] is None:  # nor do those of jobs outside a tuning study
            for key in ("split", "holdout", "split_seed"):
                del data["suite"][key]
        blob = json.dumps(data, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


# the kinds whose config group options come from their settings models
KIND_GROUPS = (SCORERS, STRATEGIES)


def store_kind_configs() -> None:
    """Every built-in and installed scorer and eviction strategy as an option of
    its config group (``scorer/<name>``, ``eviction/<name>``) in Hydra's
    ConfigStore, generated from its settings model: one declaration per kind.
    A plug-in that does not load gets a node that only names it, so choosing it
    reports the load error (exit 2) and other runs are not affected."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    for registry in KIND_GROUPS:
        for name, kind, _, _ in registry.installed():
            node = registry.config_node(kind) if kind is not None else {registry.field: name}
            store.store(group=registry.config_group, name=name, node=node, provider="silas_exp")


def job_seed(base_seed: int, repeat: int) -> int:
    """Distinct, reproducible seed per repeat; shared by all variants (paired design)."""
    digest = hashlib.sha256(f"silas_exp/{base_seed}/{repeat}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def _checked(check: Any, value: Mapping[str, Any]) -> Any:
    """A kind's settings validated by its registry; its problems join the
    other fields' (``problems_error``)."""
    try:
        return check(value)
    except ConfigError as exc:
        raise problems_error(exc) from None


def validate(raw: Mapping[str, Any]) -> ExperimentConfig:
    """Validate a resolved, container-form config (without the ``hydra`` node)."""
    data = {k: v for k, v in raw.items() if k != "hydra"}
    try:
        cfg = ExperimentConfig.model_validate(data)
    except (ValidationError, ConfigError) as exc:
        raise pydantic_error_to_config_error(exc, data=data, model=ExperimentConfig) from None
    if cfg.llm.dry_run:
        # estimate only: simulated answers priced at the configured models' prices,
        # nothing tracked (model.backend keeps naming what a real run would use)
        cfg = cfg.model_copy(update={
            "llm": cfg.llm.model_copy(update={"backend": "simulated"}),
            "tracking": cfg.tracking.model_copy(update={"enabled": False}),
        })
    return cfg


def compose_config(overrides: list[str] | tuple[str, ...] = ()) -> ExperimentConfig:
    """The experiment config as ``python -m silas_exp <overrides>`` composes it,
    validated; for code outside a Hydra run (management commands, tracking).
    Inside one, the running Hydra's config search path is used."""
    from pathlib import Path

    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    def build() -> ExperimentConfig:
        dcfg = compose(config_name="config", overrides=list(overrides))
        return validate(OmegaConf.to_container(dcfg, resolve=True))

    if GlobalHydra.instance().is_initialized():
        return build()
    conf = str(Path(__file__).resolve().parents[1] / "conf")
    with initialize_config_dir(config_dir=conf, version_base="1.3"):
        return build()
