"""The Bedrock models a deployment names: the embedding model, cross-Region inference profiles and the Regions
that may call them, the content guardrail and the optional LLM write judge."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from .base import METADATA_KEY_RE, MODEL_ID_RE, ConfigModel

TITAN_V2_MODEL_ID = "amazon.titan-embed-text-v2:0"
TITAN_V2_DIMENSIONS = (256, 512, 1024)
"""Titan Text Embeddings v2 only produces these sizes (DESIGN §3)."""

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


class EmbeddingConfig(ConfigModel):
    model_id: str = TITAN_V2_MODEL_ID
    dimensions: Annotated[int, Field(ge=1, le=4096)] = 1024
    distance_metric: str = "cosine"
    """S3 Vectors also offers euclidean, but the runtime scores hits as 1 - cosine distance."""
    non_filterable_metadata_keys: tuple[str, ...] = ("text",)
    """Fixed when an index is created; changing it later means a new index (S3 Vectors allows at most 10)."""

    @field_validator("model_id")
    @classmethod
    def _model_id(cls, value: str) -> str:
        if not MODEL_ID_RE.match(value):
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
        bad = [k for k in value if not METADATA_KEY_RE.match(k)]
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


class GuardrailConfig(ConfigModel):
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


class WriteJudgeConfig(ConfigModel):
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
        if value is not None and not MODEL_ID_RE.match(value):
            raise ValueError(f"not a Bedrock model or inference profile id: {value!r}")
        return value

    @model_validator(mode="after")
    def _both_or_neither(self) -> WriteJudgeConfig:
        if bool(self.model_id) != bool(self.tenants):
            raise ValueError(
                'set both `model_id` and `tenants` (tenant ids, or "*" for all) to judge writes, or neither'
            )
        return self


RERANK_MODEL_REGIONS = {
    "amazon.rerank-v1:0": frozenset({"ap-northeast-1", "ca-central-1", "eu-central-1", "us-west-2"}),
    "cohere.rerank-v3-5:0": frozenset(
        {"ap-northeast-1", "ca-central-1", "eu-central-1", "us-east-1", "us-west-2"}
    ),
}
"""Bedrock's reranker models and the Regions that serve them on demand (the Bedrock User Guide, "Supported
Regions and models for reranking": https://docs.aws.amazon.com/bedrock/latest/userguide/rerank-supported.html)."""


class RerankConfig(ConfigModel):
    """Recall's optional Bedrock reranker (`"rerank": "bedrock"` on POST /v1/recall). Off by default: each
    reranked recall is one billed Rerank call (docs/reference/recall.md states its price and latency)."""

    model_id: str | None = None
    """`amazon.rerank-v1:0` or `cohere.rerank-v3-5:0`: the API function (the only one that serves recall) gets
    AGENT_MEMORY_RERANK_MODEL_ID and bedrock:Rerank + bedrock:InvokeModel on this one model. Cohere's model is a
    Marketplace product: an operator enables it once for the account (the function gets no Marketplace
    permission)."""

    @field_validator("model_id")
    @classmethod
    def _model_id(cls, value: str | None) -> str | None:
        if value is not None and value not in RERANK_MODEL_REGIONS:
            raise ValueError(
                f"{value!r} is not a Bedrock rerank model; use one of {sorted(RERANK_MODEL_REGIONS)}"
            )
        return value
