"""Environment of the dreaming sweep, parsed once into a typed model (prefix AGENT_MEMORY_DREAMING_).

- `AGENT_MEMORY_DREAMING_CONFIG`: JSON of `DreamingConfig` (weights, gates, windows, limits), e.g.
  `{"gates": {"min_score": 0.75}, "max_promotions": 5}`. Unset: the design's defaults.
- `AGENT_MEMORY_DREAMING_TENANTS`: JSON list of tenants swept when the state machine input names none.
- `AGENT_MEMORY_DREAMING_NAMESPACES`: JSON object tenant → namespaces always swept (in addition to the
  namespaces found in the memory-file directories and in the short-term records).
- `AGENT_MEMORY_DREAMING_MODEL_ID`: Bedrock model id for `extractor: "llm"` (empty: rule-based only).
- `AGENT_MEMORY_DREAMING_MAX_TARGETS`: namespaces per execution at most (the inline Map's payload limit).
- `AGENT_MEMORY_DREAMING_KEEP_FULL_RUNS`: `.dreams/` retention — sweep days kept in full (overrides
  `keep_full_runs` of the config); older days keep `done.json` and a compact `summary.json`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ..domain.dreaming.config import DreamingConfig
from ..domain.records import is_valid_namespace, is_valid_tenant


class DreamingSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AGENT_MEMORY_DREAMING_", extra="ignore", frozen=True)

    config: DreamingConfig = DreamingConfig()
    tenants: list[str] = Field(default_factory=list)
    namespaces: dict[str, list[str]] = Field(default_factory=dict)
    model_id: str = ""
    max_targets: Annotated[int, Field(ge=1, le=100_000)] = 100_000
    """Namespaces one execution sweeps at most (workflows/_asl.py MAX_SWEEP_TARGETS: pages of a Distributed
    Map keep the parent's history per page)."""
    keep_full_runs: Annotated[int, Field(ge=1, le=3650)] | None = None

    @model_validator(mode="after")
    def _retention(self) -> DreamingSettings:
        if self.keep_full_runs is not None and self.keep_full_runs != self.config.keep_full_runs:
            merged = DreamingConfig.model_validate(
                {**self.config.model_dump(), "keep_full_runs": self.keep_full_runs}
            )
            object.__setattr__(self, "config", merged)  # the settings model is frozen once built
        return self

    @field_validator("tenants")
    @classmethod
    def _tenants(cls, value: list[str]) -> list[str]:
        bad = [tenant for tenant in value if not is_valid_tenant(tenant)]
        if bad:
            raise ValueError(f"invalid tenant ids {bad}")
        return value

    @field_validator("namespaces")
    @classmethod
    def _namespaces(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        bad = [ns for names in value.values() for ns in names if not is_valid_namespace(ns)]
        if bad or any(not is_valid_tenant(tenant) for tenant in value):
            raise ValueError(f"invalid tenants or namespaces in AGENT_MEMORY_DREAMING_NAMESPACES: {bad}")
        return value


@lru_cache(maxsize=1)
def get_dreaming_settings() -> DreamingSettings:
    return DreamingSettings()
