"""Environment of skills and the curator, parsed once into typed models.

- `AGENT_MEMORY_SKILLS_CONFIG`: JSON of `SkillsConfig` (body cap, description length, outcomes kept).
- `AGENT_MEMORY_CURATOR_CONFIG`: JSON of `CuratorConfig`, e.g. `{"stale_after_days": 14, "bad_share": 0.6}`.
  Unset: the design's defaults (stale after 30 days unused, archived after 90 more).
- `AGENT_MEMORY_CURATOR_MODEL_ID`: Bedrock model id for the optional LLM review (empty: rule path only). A text
  model of its own, never the sessions' chat model, so a review never touches a session's prompt cache.
- `AGENT_MEMORY_CURATOR_TENANTS`: JSON list of tenants curated when the workflow input names none.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ..domain.records import is_valid_tenant
from ..domain.skills.config import CuratorConfig, SkillsConfig


class SkillsSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AGENT_MEMORY_SKILLS_", extra="ignore", frozen=True)

    config: SkillsConfig = SkillsConfig()


class CuratorSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AGENT_MEMORY_CURATOR_", extra="ignore", frozen=True)

    config: CuratorConfig = CuratorConfig()
    model_id: str = ""
    tenants: list[str] = Field(default_factory=list)

    @field_validator("tenants")
    @classmethod
    def _tenants(cls, value: list[str]) -> list[str]:
        bad = [tenant for tenant in value if not is_valid_tenant(tenant)]
        if bad:
            raise ValueError(f"invalid tenant ids {bad}")
        return value


@lru_cache(maxsize=1)
def get_skills_settings() -> SkillsSettings:
    return SkillsSettings()


@lru_cache(maxsize=1)
def get_curator_settings() -> CuratorSettings:
    return CuratorSettings()
