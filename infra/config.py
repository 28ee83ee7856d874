"""The deployment's configuration: one typed, validated object built from the `agent-memory` context in
cdk.json (or `-c agent-memory='{...}'`). A bad value fails synth with a message naming the key and the fix,
before any construct is built."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agent_memory.domain.records import is_valid_tenant

CONTEXT_KEY = "agent-memory"

TITAN_V2_MODEL_ID = "amazon.titan-embed-text-v2:0"
TITAN_V2_DIMENSIONS = (256, 512, 1024)
"""Titan Text Embeddings v2 only produces these sizes (DESIGN §3)."""

INTERFACE_ENDPOINTS = frozenset({"bedrock-runtime", "s3vectors", "sts", "states"})
"""Interface endpoints the network construct knows how to create (names as in the AWS service name): the
services the functions call. Each gets an endpoint policy allowing only those calls."""

ENDPOINTS_NOTHING_CALLS = {
    "logs": "Lambda delivers the functions' logs itself, outside the VPC",
    "xray": "Lambda's X-Ray daemon sends the traces, outside the VPC",
    "monitoring": "metrics are embedded-metric-format log lines, never PutMetricData calls",
    "kms": "the functions never call KMS themselves; DynamoDB, S3 Vectors and S3 Files use the key for them",
    "sqs": "Lambda and EventBridge Scheduler deliver to the dead-letter queues themselves",
}
"""Endpoints earlier versions accepted that no function ever calls, with the reason (for the error message)."""

INFERENCE_PROFILE_GEOGRAPHIES = {
    "us": "US",
    "us-gov": "AWS GovCloud (US)",
    "ca": "Canada",
    "eu": "EU",
    "apac": "Asia Pacific",
    "jp": "Japan",
    "au": "Australia",
}
"""Prefixes of Bedrock's geographic cross-Region inference profiles (`eu.anthropic.claude-...`) and their
geography. A geographic profile can only be called from a Region of its geography."""
GLOBAL_INFERENCE_PROFILE = "global"
"""`global.` profiles route worldwide and can be called from any commercial Region."""
INFERENCE_PROFILE_PREFIXES = frozenset({*INFERENCE_PROFILE_GEOGRAPHIES, GLOBAL_INFERENCE_PROFILE})

_REGION_PROFILE_PREFIXES: tuple[tuple[str, frozenset[str]], ...] = (
    ("us-gov-", frozenset({"us-gov"})),
    ("us-", frozenset({"us", GLOBAL_INFERENCE_PROFILE})),
    ("ca-", frozenset({"ca", GLOBAL_INFERENCE_PROFILE})),
    ("eu-", frozenset({"eu", GLOBAL_INFERENCE_PROFILE})),
    ("ap-northeast-1", frozenset({"apac", "jp", GLOBAL_INFERENCE_PROFILE})),
    ("ap-northeast-3", frozenset({"apac", "jp", GLOBAL_INFERENCE_PROFILE})),
    ("ap-southeast-2", frozenset({"apac", "au", GLOBAL_INFERENCE_PROFILE})),
    ("ap-southeast-4", frozenset({"apac", "au", GLOBAL_INFERENCE_PROFILE})),
    ("ap-", frozenset({"apac", GLOBAL_INFERENCE_PROFILE})),
    ("cn-", frozenset()),
)
"""Which inference profile prefixes a Region may call (first match wins); other commercial Regions: global."""


def profile_prefixes_for(region: str) -> frozenset[str]:
    """The inference profile prefixes (`eu`, `global`, ...) a stack in `region` may call."""
    for start, prefixes in _REGION_PROFILE_PREFIXES:
        if region.startswith(start):
            return prefixes
    return frozenset({GLOBAL_INFERENCE_PROFILE})


def inference_profile_prefix(model_id: str) -> str | None:
    """`eu` for `eu.anthropic.claude-...`; None for a foundation model id (`amazon.titan-embed-text-v2:0`)."""
    prefix = model_id.partition(".")[0]
    return prefix if prefix in INFERENCE_PROFILE_PREFIXES else None


LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)
"""The only retention periods CloudWatch Logs accepts."""

# EventBridge Scheduler expressions: cron with six fields, or rate(<n> <unit>).
_CRON_RE = re.compile(r"^cron\(\S+( \S+){5}\)$")
_RATE_RE = re.compile(r"^rate\([1-9][0-9]* (minute|minutes|hour|hours|day|days)\)$")
_MODEL_ID_RE = re.compile(r"^[a-z0-9][a-z0-9.:_-]{2,127}$")
_STACK_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9-]{0,127}$")
_ACCOUNT_RE = re.compile(r"^[0-9]{12}$")
_REGION_RE = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]$")
_METADATA_KEY_RE = re.compile(r"^[A-Za-z0-9_-]{1,63}$")
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class ConfigError(ValueError):
    """The cdk.json context is invalid. The message lists every bad key and what is allowed."""


def _check_time_zone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown IANA time zone {value!r} (e.g. 'UTC', 'Europe/Berlin')") from exc
    return value


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TenantConfig(_Model):
    """A tenant known at deploy time: scheduled jobs cover it, and CloudFormation creates its index."""

    id: str
    display_name: Annotated[str, Field(min_length=1, max_length=100)]
    time_zone: str = "UTC"
    create_index: bool = True
    """False for a tenant onboarded with `python -m infra.onboard` (its index exists outside CloudFormation):
    listed here only so scheduled jobs include it."""

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not is_valid_tenant(value):
            raise ValueError(
                f"tenant id {value!r} is invalid: 3-40 characters of a-z, 0-9 and '-', "
                "starting and ending with a letter or digit"
            )
        return value

    @field_validator("time_zone")
    @classmethod
    def _time_zone(cls, value: str) -> str:
        return _check_time_zone(value)


class EmbeddingConfig(_Model):
    model_id: str = TITAN_V2_MODEL_ID
    dimensions: Annotated[int, Field(ge=1, le=4096)] = 1024
    distance_metric: str = "cosine"
    """S3 Vectors also offers euclidean, but the runtime scores hits as 1 - cosine distance."""
    non_filterable_metadata_keys: tuple[str, ...] = ("text",)
    """Fixed when an index is created; changing it later means a new index (S3 Vectors allows at most 10)."""

    @field_validator("model_id")
    @classmethod
    def _model_id(cls, value: str) -> str:
        if not _MODEL_ID_RE.match(value):
            raise ValueError(f"{value!r} is not a Bedrock model id (e.g. {TITAN_V2_MODEL_ID!r})")
        return value

    @field_validator("distance_metric")
    @classmethod
    def _metric(cls, value: str) -> str:
        if value != "cosine":
            raise ValueError(
                f"{value!r} is not supported: the runtime ranks hits by cosine similarity (1 - cosine distance) "
                "and refuses other indexes; use 'cosine'"
            )
        return value

    @field_validator("non_filterable_metadata_keys")
    @classmethod
    def _metadata_keys(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if "text" not in value:
            raise ValueError("must contain 'text' (the runtime stores the memory text there)")
        if len(value) > 10:
            raise ValueError("S3 Vectors allows at most 10 non-filterable metadata keys per index")
        if len(set(value)) != len(value):
            raise ValueError("keys must be unique")
        bad = [k for k in value if not _METADATA_KEY_RE.match(k)]
        if bad:
            raise ValueError(f"invalid metadata key names {bad}")
        return value

    @model_validator(mode="after")
    def _titan_sizes(self) -> EmbeddingConfig:
        if self.model_id == TITAN_V2_MODEL_ID and self.dimensions not in TITAN_V2_DIMENSIONS:
            raise ValueError(
                f"dimensions={self.dimensions} is not produced by {TITAN_V2_MODEL_ID}; "
                f"use one of {list(TITAN_V2_DIMENSIONS)}"
            )
        return self


def _check_schedule_expression(value: str) -> str:
    if not (_CRON_RE.match(value) or _RATE_RE.match(value)):
        raise ValueError(
            f"{value!r} is not an EventBridge Scheduler expression: use 'cron(m h dom mon dow year)' "
            "with six fields, e.g. 'cron(15 3 * * ? *)', or 'rate(1 day)'"
        )
    return value


class ScheduleConfig(_Model):
    expression: str
    time_zone: str = "UTC"
    enabled: bool = True

    @field_validator("time_zone")
    @classmethod
    def _time_zone(cls, value: str) -> str:
        return _check_time_zone(value)

    @field_validator("expression")
    @classmethod
    def _expression(cls, value: str) -> str:
        return _check_schedule_expression(value)


class DreamingScheduleConfig(_Model):
    """The nightly dreaming sweep: one schedule per configured tenant, evaluated in that tenant's
    `time_zone` (so there is no time zone here)."""

    expression: str = "cron(0 3 * * ? *)"
    enabled: bool = True
    max_concurrency: Annotated[int, Field(ge=1, le=40)] = 4
    """Namespaces swept in parallel per execution (the state machine's Map)."""
    model_id: str | None = None
    """Bedrock model (or inference profile) for the LLM extraction strategies of the Light phase; unset:
    the rule-based extractor only. Select the strategy with AGENT_MEMORY_DREAMING_CONFIG's `extractor`."""
    on_demand: bool = False
    """Let `POST /v1/admin/dream/start` start the state machine. Needs the Step Functions interface endpoint
    (added automatically; about $14.60/month in 2 AZs), which is why it is off by default."""

    @model_validator(mode="before")
    @classmethod
    def _no_time_zone(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "time_zone" in data:
            raise ValueError(
                "has no 'time_zone': the sweep runs in each tenant's own time zone (tenants[].time_zone)"
            )
        return data

    @field_validator("expression")
    @classmethod
    def _expression(cls, value: str) -> str:
        return _check_schedule_expression(value)


class CuratorScheduleConfig(_Model):
    """The skills curator: one schedule per configured tenant (weekly by default), evaluated in that tenant's
    `time_zone`. Its rules' numbers are AGENT_MEMORY_CURATOR_CONFIG (domain/skills/config.py)."""

    expression: str = "cron(0 4 ? * SUN *)"
    enabled: bool = True
    max_concurrency: Annotated[int, Field(ge=1, le=40)] = 4
    """Namespaces curated in parallel per execution (the state machine's Map)."""
    model_id: str | None = None
    """Bedrock model (or inference profile) for the optional LLM review (merge/improve proposals); unset:
    rule path only. A text model of its own, never the chat model's prompt cache."""

    @field_validator("expression")
    @classmethod
    def _expression(cls, value: str) -> str:
        return _check_schedule_expression(value)


class SchedulesConfig(_Model):
    decay: ScheduleConfig = ScheduleConfig(expression="cron(15 3 * * ? *)")
    """The forgetting job (archive records whose strength fell below the threshold)."""
    dreaming: DreamingScheduleConfig = DreamingScheduleConfig()
    """The dreaming sweep (Light -> REM -> Deep consolidation), started per tenant."""
    curator: CuratorScheduleConfig = CuratorScheduleConfig()
    """The skills curator (active -> stale -> archived for agent-written skills), started weekly per tenant."""


class RetentionConfig(_Model):
    log_days: int = 30
    """Lambda and API Gateway logs (one of the CloudWatch Logs retention periods)."""
    access_log_days: int = 90
    """API access logs (CloudWatch), S3 server access logs and VPC flow logs (S3 lifecycle)."""
    noncurrent_file_version_days: Annotated[int, Field(ge=1, le=3650)] = 30
    """How long an overwritten memory file stays recoverable in the versioned bucket."""
    dead_letter_days: Annotated[int, Field(ge=1, le=14)] = 14
    point_in_time_recovery_days: Annotated[int, Field(ge=1, le=35)] = 7
    """DynamoDB point-in-time recovery window: how long a purged item stays restorable from a backup
    (docs/security.md, erasure). DynamoDB allows 1-35 days."""

    @field_validator("log_days", "access_log_days")
    @classmethod
    def _log_retention(cls, value: int) -> int:
        if value not in LOG_RETENTION_DAYS:
            raise ValueError(f"CloudWatch Logs accepts only these retention days: {list(LOG_RETENTION_DAYS)}")
        return value


class IamPrincipalConfig(_Model):
    """A caller inside AWS that signs requests with SigV4 on `/iam/v1/...` instead of using an API key."""

    principal_arn: Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:iam::\d{12}:(role|user)/[\w+=,.@/-]+$")]
    tenant: Annotated[str, Field(pattern=r"^[a-z0-9](?:[a-z0-9-]{1,38}[a-z0-9])$")]
    namespaces: Annotated[tuple[str, ...], Field(min_length=1)]
    scopes: Annotated[tuple[Literal["read", "write", "admin"], ...], Field(min_length=1)]


class ApiConfig(_Model):
    stage_name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_]{1,64}$")] = "live"
    throttle_rate_per_second: Annotated[float, Field(gt=0, le=10_000)] = 50
    throttle_burst: Annotated[int, Field(ge=1, le=5_000)] = 100
    quota_per_day: Annotated[int, Field(ge=1)] = 100_000
    """Per-tenant daily request quota of the usage plan (effective when `enforce_usage_plan` is on)."""
    enforce_usage_plan: bool = False
    """Require a per-tenant usage identifier (returned by the authorizer as `usageIdentifierKey`, written
    by the onboarding tool as `usage_key`). Off: stage throttling is the only limit."""
    authorizer_cache_seconds: Annotated[int, Field(ge=0, le=3600)] = 60
    """How long API Gateway caches an authorizer decision per key; a disabled key works this much longer."""
    execution_logging: bool = True
    """ERROR-level execution logs. Like the access logs, they need the Region's account-level API Gateway
    CloudWatch Logs role (see `create_cloudwatch_role`)."""
    create_cloudwatch_role: bool = False
    """Create a role for API Gateway to write CloudWatch Logs with and make it the account's setting for this
    Region (AWS::ApiGateway::Account). That setting is one per account and Region, shared by every API there:
    turn this on only when the Region has none yet (`aws apigateway get-account`), since it replaces the
    current role, and the role and setting stay when the stack is deleted."""
    waf_web_acl_arn: str | None = None
    iam_principals: tuple[IamPrincipalConfig, ...] = ()
    """SigV4 callers and the tenant each acts as. Non-empty: the API also serves `/iam/v1/{proxy+}` with IAM
    authorization (the caller's IAM policy needs execute-api:Invoke on it)."""


PROFILES = ("lean", "isolated")
"""Deployment profiles (the `profile` key): how much of the service runs in the VPC.

- `lean` (default): only the file function (`handlers/files.py`) is in the VPC, with the S3 Files mount; it
  makes no AWS API call, so the VPC has no interface endpoint (and no gateway endpoint: nothing in it calls
  DynamoDB). Every other function (API, chat, dreaming, authorizer, decay job) runs outside the VPC on
  Lambda's own network; API, chat and dreaming reach the memory files by invoking the file function.
  `network.interface_endpoints` is not used.
- `isolated`: every function in the VPC (API, chat and dreaming mount S3 Files themselves, no file function),
  every interface endpoint of `network.interface_endpoints` (plus `states`, always added: the API function
  starts the migration backfill) in every AZ, DynamoDB and S3 gateway endpoints."""

INTERFACE_ENDPOINT_AZS: dict[str, int | None] = {"lean": 0, "isolated": None}
"""AZs each interface endpoint is placed in, per profile (0: no interface endpoint at all; None: every AZ of
the VPC, `network.max_azs`). docs/deploy.md prices this (tests/infra/test_infra_cost.py keeps the two in step)."""

FILE_FUNCTION_PROFILES = frozenset({"lean"})
"""Profiles whose API, chat and dreaming functions run outside the VPC and reach the memory files through the
file function (Lambda Invoke) instead of mounting S3 Files."""


class NetworkConfig(_Model):
    max_azs: Annotated[int, Field(ge=1, le=3)] = 2
    nat_gateways: Annotated[int, Field(ge=0, le=3)] = 0
    """0 keeps the subnets isolated (everything AWS goes through endpoints). >0 adds public subnets + NAT."""
    interface_endpoints: tuple[str, ...] = ("bedrock-runtime", "s3vectors", "sts")
    """The `isolated` profile's interface endpoints (`lean` creates none: nothing in its VPC calls AWS)."""
    flow_logs: bool = True

    @field_validator("interface_endpoints")
    @classmethod
    def _endpoints(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        uncalled = [name for name in value if name in ENDPOINTS_NOTHING_CALLS]
        if uncalled:
            reasons = "; ".join(f"{name}: {ENDPOINTS_NOTHING_CALLS[name]}" for name in uncalled)
            raise ValueError(
                f"no function calls {uncalled} (an endpoint nobody uses only costs money): {reasons}. "
                "Remove them"
            )
        unknown = sorted(set(value) - INTERFACE_ENDPOINTS)
        if unknown:
            raise ValueError(f"unknown endpoints {unknown}; known: {sorted(INTERFACE_ENDPOINTS)}")
        if len(set(value)) != len(value):
            raise ValueError("endpoints must be unique")
        return value


class FunctionSizing(_Model):
    memory_mb: Annotated[int, Field(ge=128, le=10_240)]
    timeout_seconds: Annotated[int, Field(ge=1, le=900)]


class FunctionsConfig(_Model):
    api: FunctionSizing = FunctionSizing(memory_mb=1024, timeout_seconds=29)
    authorizer: FunctionSizing = FunctionSizing(memory_mb=256, timeout_seconds=10)
    decay_job: FunctionSizing = FunctionSizing(memory_mb=1024, timeout_seconds=600)
    chat: FunctionSizing = FunctionSizing(memory_mb=1024, timeout_seconds=29)
    dreaming: FunctionSizing = FunctionSizing(memory_mb=2048, timeout_seconds=900)
    files: FunctionSizing = FunctionSizing(memory_mb=512, timeout_seconds=20)
    """The `lean` profile's file function: small NFS reads and writes; its file-lock wait (10 s) and timeout
    stay under the API function's 29 s, so a busy file comes back as 409, not as a timeout."""
    console: FunctionSizing = FunctionSizing(memory_mb=128, timeout_seconds=5)
    """The review console's static page: the API's only unauthenticated methods, kept off the API function."""
    """Each Step Functions task of the sweep (one stage of one namespace) runs within this timeout."""

    @model_validator(mode="after")
    def _api_gateway_limit(self) -> FunctionsConfig:
        # API Gateway REST integrations time out at 29 s; a longer function timeout only hides that.
        if self.api.timeout_seconds > 29:
            raise ValueError("functions.api.timeout_seconds must be <= 29 (API Gateway integration limit)")
        if self.authorizer.timeout_seconds > 29:
            raise ValueError("functions.authorizer.timeout_seconds must be <= 29")
        if self.console.timeout_seconds > 29:
            raise ValueError(
                "functions.console.timeout_seconds must be <= 29 (API Gateway integration limit)"
            )
        if self.chat.timeout_seconds > 29:
            raise ValueError(
                "functions.chat.timeout_seconds must be <= 29 (API Gateway integration limit); lower the chat "
                "tool rounds or output tokens (AGENT_MEMORY_CHAT) instead"
            )
        return self


class MemoryFilesConfig(_Model):
    posix_uid: Annotated[int, Field(ge=1, le=4_294_967_294)] = 1001
    posix_gid: Annotated[int, Field(ge=1, le=4_294_967_294)] = 1001
    root_directory: Annotated[str, Field(pattern=r"^(/[A-Za-z0-9._-]+)+$")] = "/agent-memory"
    """Directory on the file system (= key prefix in the bucket) every access point is rooted at."""
    accept_bucket_warning: bool = False
    """Written to the file system as AcceptBucketWarning. S3 Files refuses to create a file system on a bucket
    it has a warning about (documented: a very large number of objects, ~12 million) unless this is on; the
    stack's bucket starts empty, so leave it off and read the warning if one ever appears. Create-only:
    changing it after the first deploy replaces the file system."""


class AlarmsConfig(_Model):
    email: str | None = None
    api_p99_latency_ms: Annotated[int, Field(ge=100, le=29_000)] = 3000
    api_5xx_per_5_minutes: Annotated[int, Field(ge=1)] = 5
    recall_p99_latency_ms: Annotated[int, Field(ge=10, le=29_000)] = 1500

    @field_validator("email")
    @classmethod
    def _email(cls, value: str | None) -> str | None:
        if value is not None and not _EMAIL_RE.match(value):
            raise ValueError(f"{value!r} is not an e-mail address")
        return value


GUARDRAIL_PII_TYPES = frozenset(
    {
        "ADDRESS",
        "AGE",
        "AWS_ACCESS_KEY",
        "AWS_SECRET_KEY",
        "CA_HEALTH_NUMBER",
        "CA_SOCIAL_INSURANCE_NUMBER",
        "CREDIT_DEBIT_CARD_CVV",
        "CREDIT_DEBIT_CARD_EXPIRY",
        "CREDIT_DEBIT_CARD_NUMBER",
        "DRIVER_ID",
        "EMAIL",
        "INTERNATIONAL_BANK_ACCOUNT_NUMBER",
        "IP_ADDRESS",
        "LICENSE_PLATE",
        "MAC_ADDRESS",
        "NAME",
        "PASSWORD",
        "PHONE",
        "PIN",
        "SWIFT_CODE",
        "UK_NATIONAL_HEALTH_SERVICE_NUMBER",
        "UK_NATIONAL_INSURANCE_NUMBER",
        "UK_UNIQUE_TAXPAYER_REFERENCE_NUMBER",
        "URL",
        "USERNAME",
        "US_BANK_ACCOUNT_NUMBER",
        "US_BANK_ROUTING_NUMBER",
        "US_INDIVIDUAL_TAX_IDENTIFICATION_NUMBER",
        "US_PASSPORT_NUMBER",
        "US_SOCIAL_SECURITY_NUMBER",
        "VEHICLE_IDENTIFICATION_NUMBER",
    }
)
"""The PII entity types Bedrock Guardrails knows (botocore's bedrock-runtime model, GuardrailPiiEntityType)."""

DEFAULT_BLOCKED_PII = (
    "AWS_ACCESS_KEY",
    "AWS_SECRET_KEY",
    "PASSWORD",
    "PIN",
    "CREDIT_DEBIT_CARD_NUMBER",
    "CREDIT_DEBIT_CARD_CVV",
    "CREDIT_DEBIT_CARD_EXPIRY",
    "INTERNATIONAL_BANK_ACCOUNT_NUMBER",
    "US_BANK_ACCOUNT_NUMBER",
    "US_SOCIAL_SECURITY_NUMBER",
)
"""Credentials and financial identifiers: never memory. Names, e-mail, phone and address are left out on
purpose, since USER.md is a user profile."""


class GuardrailConfig(_Model):
    """The opt-in Amazon Bedrock guardrail on memory-file writes (after the service's own safety scan)."""

    enabled: bool = False
    """Create the guardrail, grant bedrock:ApplyGuardrail on it to the functions that write memory files (API,
    chat, dreaming) and point them at it. Off by default: each screened write is a billed Bedrock call."""
    prompt_attack_strength: Literal["LOW", "MEDIUM", "HIGH"] = "HIGH"
    blocked_pii: tuple[str, ...] = DEFAULT_BLOCKED_PII

    @field_validator("blocked_pii")
    @classmethod
    def _pii(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(value) - GUARDRAIL_PII_TYPES)
        if unknown:
            raise ValueError(f"unknown PII types {unknown}; known: {sorted(GUARDRAIL_PII_TYPES)}")
        if len(set(value)) != len(value):
            raise ValueError("PII types must be unique")
        return value


class WriteJudgeConfig(_Model):
    """The optional LLM write judge (Mem0-style ADD / UPDATE / DELETE / NONE before the rule-based discipline;
    see docs/architecture.md). Off by default: each judged remember is a billed Bedrock call."""

    model_id: str | None = None
    """Bedrock model or inference profile the API function calls (Converse); the stack grants
    bedrock:InvokeModel on exactly this model (and, for a profile, the foundation model it routes to)."""
    tenants: tuple[str, ...] = ()
    """Tenant ids whose remembers are judged ("*": every tenant); needs `model_id`, and `model_id` needs
    tenants."""

    @field_validator("model_id")
    @classmethod
    def _model_id(cls, value: str | None) -> str | None:
        if value is not None and not _MODEL_ID_RE.match(value):
            raise ValueError(f"not a Bedrock model or inference profile id: {value!r}")
        return value

    @model_validator(mode="after")
    def _both_or_neither(self) -> WriteJudgeConfig:
        if bool(self.model_id) != bool(self.tenants):
            raise ValueError(
                'set both `model_id` and `tenants` (tenant ids, or "*" for all) to judge writes, or neither'
            )
        return self


class DeploymentConfig(_Model):
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

    @field_validator("stack_name")
    @classmethod
    def _stack_name(cls, value: str) -> str:
        if not _STACK_NAME_RE.match(value):
            raise ValueError("a CloudFormation stack name: letters, digits, '-', starting with a letter")
        return value

    @field_validator("account")
    @classmethod
    def _account(cls, value: str | None) -> str | None:
        if value is not None and not _ACCOUNT_RE.match(value):
            raise ValueError("an AWS account id is 12 digits")
        return value

    @field_validator("region")
    @classmethod
    def _region(cls, value: str | None) -> str | None:
        if value is not None and not _REGION_RE.match(value):
            raise ValueError(f"{value!r} is not an AWS region name like 'eu-central-1'")
        return value

    @field_validator("chat_model_ids")
    @classmethod
    def _chat_models(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [m for m in value if not _MODEL_ID_RE.match(m)]
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
