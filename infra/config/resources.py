"""What the stack's resources are sized and kept for: retention, function sizes, memory files, alarm thresholds."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator, model_validator

from .base import EMAIL_RE, LOG_RETENTION_DAYS, ConfigModel


class RetentionConfig(ConfigModel):
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


class FunctionSizing(ConfigModel):
    memory_mb: Annotated[int, Field(ge=128, le=10_240)]
    timeout_seconds: Annotated[int, Field(ge=1, le=900)]


class FunctionsConfig(ConfigModel):
    api: FunctionSizing = FunctionSizing(memory_mb=1024, timeout_seconds=29)
    authorizer: FunctionSizing = FunctionSizing(memory_mb=256, timeout_seconds=10)
    decay_job: FunctionSizing = FunctionSizing(memory_mb=1024, timeout_seconds=600)
    chat: FunctionSizing = FunctionSizing(memory_mb=1024, timeout_seconds=29)
    dreaming: FunctionSizing = FunctionSizing(memory_mb=2048, timeout_seconds=900)
    job_worker: FunctionSizing = FunctionSizing(memory_mb=1024, timeout_seconds=900)
    """The job function (imports and large batches accepted with 202): sized like the API, whose routes it
    runs, with Lambda's longest timeout instead of API Gateway's 29 s."""
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


class MemoryFilesConfig(ConfigModel):
    posix_uid: Annotated[int, Field(ge=1, le=4_294_967_294)] = 1001
    posix_gid: Annotated[int, Field(ge=1, le=4_294_967_294)] = 1001
    root_directory: Annotated[str, Field(pattern=r"^(/[A-Za-z0-9._-]+)+$")] = "/agent-memory"
    """Directory on the file system (= key prefix in the bucket) every access point is rooted at."""
    accept_bucket_warning: bool = False
    """Written to the file system as AcceptBucketWarning. S3 Files refuses to create a file system on a bucket
    it has a warning about (documented: a very large number of objects, ~12 million) unless this is on; the
    stack's bucket starts empty, so leave it off and read the warning if one ever appears. Create-only:
    changing it after the first deploy replaces the file system."""


class AlarmsConfig(ConfigModel):
    email: str | None = None
    api_p99_latency_ms: Annotated[int, Field(ge=100, le=29_000)] = 3000
    api_5xx_per_5_minutes: Annotated[int, Field(ge=1)] = 5
    recall_p99_latency_ms: Annotated[int, Field(ge=10, le=29_000)] = 1500

    @field_validator("email")
    @classmethod
    def _email(cls, value: str | None) -> str | None:
        if value is not None and not EMAIL_RE.match(value):
            raise ValueError(f"{value!r} is not an e-mail address")
        return value
