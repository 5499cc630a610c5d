"""LLM layer settings (config group ``llm``), validated once at start-up."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class ModelPrice(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")
    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float = Field(ge=0)
    cache_read: float = Field(ge=0)


DEFAULT_PRICES: dict[str, ModelPrice] = {
    "claude-haiku-4-5": ModelPrice(input=1.0, output=5.0, cache_write=1.25, cache_read=0.10),
    "claude-sonnet-4-5": ModelPrice(input=3.0, output=15.0, cache_write=3.75, cache_read=0.30),
    "claude-sonnet-4-6": ModelPrice(input=3.0, output=15.0, cache_write=3.75, cache_read=0.30),
    "claude-opus-4-1": ModelPrice(input=15.0, output=75.0, cache_write=18.75, cache_read=1.50),
    "claude-opus-4-5": ModelPrice(input=5.0, output=25.0, cache_write=6.25, cache_read=0.50),
}


class LLMSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: str = "simulated"  # an LLM backend kind (silas_exp.llm.backends)
    max_connections: int = Field(default=10, ge=1)
    timeout_s: float = Field(default=30.0, gt=0)
    max_retries: int = Field(default=4, ge=0)
    max_retry_wait_s: float = Field(default=20.0, ge=0)
    max_schema_retries: int = Field(default=1, ge=0)  # answers that break the schema
    cache_mode: Literal["read_write", "replay", "off"] = "read_write"
    cache_dir: str | None = None
    base_url: str | None = None
    batch: bool = False
    batch_poll_s: float = Field(default=10.0, gt=0)
    batch_max_wait_s: float = Field(default=86400.0, gt=0)
    dry_run: bool = False
    max_usd: float | None = Field(default=None, ge=0)
    simulated_latency_ms: float = Field(default=0.0, ge=0)
    # prices given (``+llm.prices.<id>={...}``) add to the built-in ones, or replace one
    prices: dict[str, ModelPrice] = Field(default_factory=lambda: dict(DEFAULT_PRICES))

    @field_validator("prices", mode="before")
    @classmethod
    def _over_built_in(cls, v: Any) -> Any:
        return {**DEFAULT_PRICES, **v} if isinstance(v, dict) else v
