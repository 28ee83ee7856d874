"""The deployment's configuration: one typed, validated object built from the `agent-memory` context in
cdk.json (or `-c agent-memory='{...}'`). A bad value fails synth with a message naming the key and the fix,
before any construct is built."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError, ValidationInfo, field_validator, model_validator

from .api import ApiConfig
from .base import ACCOUNT_RE, MODEL_ID_RE, REGION_RE, STACK_NAME_RE, ConfigError, ConfigModel
from .models import (
    INFERENCE_PROFILE_GEOGRAPHIES,
    RERANK_MODEL_REGIONS,
    EmbeddingConfig,
    GuardrailConfig,
    RerankConfig,
    WriteJudgeConfig,
    inference_profile_prefix,
    profile_prefixes_for,
)
from .network import NetworkConfig
from .resources import AlarmsConfig, FunctionsConfig, MemoryFilesConfig, RetentionConfig
from .schedules import SchedulesConfig
from .tenants import TenantConfig

CONTEXT_KEY = "agent-memory"


class DeploymentConfig(ConfigModel):
    """Everything a deployment may choose. Defaults are a small team's production setup."""

    stack_name: str = "AgentMemory"
    account: str | None = None
    region: str | None = None
    """Leave both unset for an environment-agnostic template (the default; synth needs no credentials)."""
    retain_data: bool = True
    """Keep tables, buckets, vector indexes and the key when the stack is deleted. Turn off only for
    throw-away environments."""
    tenants: tuple[TenantConfig, ...] = ()
    embedding: EmbeddingConfig = EmbeddingConfig()
    chat_model_ids: tuple[str, ...] = ()
    """Bedrock model or inference profile ids the chat function may call; the first is its default model.
    Empty: no chat function is deployed (sessions still work through the API function)."""
    schedules: SchedulesConfig = SchedulesConfig()
    retention: RetentionConfig = RetentionConfig()
    api: ApiConfig = ApiConfig()
    profile: Literal["lean", "isolated"] = "lean"
    """`lean`: only the functions that mount S3 Files in the VPC, interface endpoints in one AZ; `isolated`:
    every function in the VPC, endpoints in every AZ (see PROFILES)."""
    network: NetworkConfig = NetworkConfig()
    functions: FunctionsConfig = FunctionsConfig()
    memory_files: MemoryFilesConfig = MemoryFilesConfig()
    alarms: AlarmsConfig = AlarmsConfig()
    guardrail: GuardrailConfig = GuardrailConfig()
    write_judge: WriteJudgeConfig = WriteJudgeConfig()
    rerank: RerankConfig = RerankConfig()

    @field_validator("stack_name")
    @classmethod
    def _stack_name(cls, value: str) -> str:
        if not STACK_NAME_RE.match(value):
            raise ValueError("a CloudFormation stack name: letters, digits, '-', starting with a letter")
        return value

    @field_validator("account")
    @classmethod
    def _account(cls, value: str | None) -> str | None:
        if value is not None and not ACCOUNT_RE.match(value):
            raise ValueError("an AWS account id is 12 digits")
        return value

    @field_validator("region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        if value is not None and not REGION_RE.match(value):
            raise ValueError(f"{value!r} is not an AWS region name like 'eu-central-1'")
        return value

    @field_validator("chat_model_ids")
    @classmethod
    def _chat_models(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [m for m in value if not MODEL_ID_RE.match(m)]
        if bad:
            raise ValueError(f"not Bedrock model or inference profile ids: {bad}")
        return value

    @model_validator(mode="after")
    def _models_in_the_regions_geography(self, info: ValidationInfo) -> DeploymentConfig:
        """A geographic inference profile (`eu.`, `us.`, `apac.`, ...) can only be called from a Region of its
        geography. The Region is `region`, or for an environment-agnostic stack the Region the CDK CLI
        deploys to (`from_context(..., target_region=...)`)."""
        target = (info.context or {}).get("target_region") if info.context else None
        region = self.region or target
        if not region:
            return self
        source = "`region` in cdk.json" if self.region else "the CDK CLI (CDK_DEFAULT_REGION)"
        allowed = profile_prefixes_for(region)
        models = [(f"chat_model_ids.{i}", model) for i, model in enumerate(self.chat_model_ids)]
        models.append(("embedding.model_id", self.embedding.model_id))
        if self.schedules.dreaming.model_id:
            models.append(("schedules.dreaming.model_id", self.schedules.dreaming.model_id))
        if self.write_judge.model_id:
            models.append(("write_judge.model_id", self.write_judge.model_id))
        if self.schedules.curator.model_id:
            models.append(("schedules.curator.model_id", self.schedules.curator.model_id))
        problems = []
        for key, model_id in models:
            prefix = inference_profile_prefix(model_id)
            if prefix is None or prefix in allowed:
                continue
            where = INFERENCE_PROFILE_GEOGRAPHIES.get(prefix, "worldwide")
            fixes = " or ".join(f"'{p}.{model_id.partition('.')[2]}'" for p in sorted(allowed)) or (
                "a model this Region serves without a cross-Region profile"
            )
            problems.append(
                f"{key}: {model_id!r} is an inference profile for {where} ('{prefix}.'), but the stack deploys "
                f"to {region} (from {source}), which cannot call it: use {fixes}"
            )
        if problems:
            raise ValueError("\n  - ".join(problems))
        return self

    @model_validator(mode="after")
    def _rerank_model_in_the_region(self, info: ValidationInfo) -> DeploymentConfig:
        """Bedrock serves each rerank model in a few Regions only; a known Region must be one of them."""
        target = (info.context or {}).get("target_region") if info.context else None
        region, model = self.region or target, self.rerank.model_id
        if region and model and region not in RERANK_MODEL_REGIONS[model]:
            serving = [m for m, regions in RERANK_MODEL_REGIONS.items() if region in regions]
            raise ValueError(
                f"rerank.model_id: Bedrock does not serve {model!r} in {region}; it does in "
                f"{sorted(RERANK_MODEL_REGIONS[model])}" + (f"; in {region} use {serving}" if serving else "")
            )
        return self

    @model_validator(mode="after")
    def _judged_tenants_are_configured(self) -> DeploymentConfig:
        unknown = sorted(set(self.write_judge.tenants) - {"*", *self.tenant_ids})
        if unknown:
            raise ValueError(f'write_judge.tenants: {unknown} are not in `tenants` (use their ids, or "*")')
        return self

    @field_validator("tenants")
    @classmethod
    def _unique_tenants(cls, value: tuple[TenantConfig, ...]) -> tuple[TenantConfig, ...]:
        ids = [t.id for t in value]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"tenant ids must be unique; repeated: {duplicates}")
        return value

    @property
    def tenant_ids(self) -> tuple[str, ...]:
        return tuple(t.id for t in self.tenants)

    @classmethod
    def from_context(cls, raw: object, *, target_region: str | None = None) -> DeploymentConfig:
        """Validate the `agent-memory` context value (a mapping, or a JSON string when given with -c).
        `target_region`: where an environment-agnostic stack will be deployed, when known (the CDK CLI's
        CDK_DEFAULT_REGION); a `region` in the config takes precedence."""
        if raw is None:
            raise ConfigError(
                f"cdk.json has no '{CONTEXT_KEY}' context: add it (see docs/deploy.md) or pass "
                f"-c {CONTEXT_KEY}='{{...}}'"
            )
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"context '{CONTEXT_KEY}' is not valid JSON: {exc}") from exc
        if not isinstance(raw, Mapping):
            raise ConfigError(f"context '{CONTEXT_KEY}' must be a JSON object, got {type(raw).__name__}")
        try:
            return cls.model_validate(dict(raw), context={"target_region": target_region})
        except ValidationError as exc:
            raise ConfigError(_describe(exc)) from None


def _describe(exc: ValidationError) -> str:
    lines = [f"invalid deployment configuration (cdk.json context '{CONTEXT_KEY}'):"]
    for error in exc.errors():
        path = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown key (check the spelling against docs/deploy.md)"
        # Checks across keys name their keys in the message themselves.
        lines.append(f"  - {path}: {message}" if path else f"  - {message}")
    return "\n".join(lines)


def load_cdk_json_context(path: Path) -> dict[str, Any]:
    """The `context` block of a cdk.json file (feature flags + the deployment config)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    context = data.get("context", {})
    if not isinstance(context, dict):
        raise ConfigError(f"{path}: 'context' must be a JSON object")
    return context
