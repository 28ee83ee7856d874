"""The REST API: stage, throttling, usage plan, authorizer cache, WAF, and the SigV4 callers mapped to tenants."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .base import ConfigModel


class IamPrincipalConfig(ConfigModel):
    """A caller inside AWS that signs requests with SigV4 on `/iam/v1/...` instead of using an API key."""

    principal_arn: Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:iam::\d{12}:(role|user)/[\w+=,.@/-]+$")]
    tenant: Annotated[str, Field(pattern=r"^[a-z0-9](?:[a-z0-9-]{1,38}[a-z0-9])$")]
    namespaces: Annotated[tuple[str, ...], Field(min_length=1)]
    scopes: Annotated[tuple[Literal["read", "write", "admin"], ...], Field(min_length=1)]


class ApiConfig(ConfigModel):
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
