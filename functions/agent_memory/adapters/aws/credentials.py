"""Tenant-scoped AWS credentials: IAM, not only code, confines a request to its tenant.

The API, chat and worker functions do not touch tenant data with their own role. For each tenant they assume
the TenantAccessRole with the session tag `tenant=<id>`; that role's policy allows DynamoDB items only when
every partition key starts with `${aws:PrincipalTag/tenant}#` (`dynamodb:LeadingKeys`) and S3 Vectors only on
`index/mem-${aws:PrincipalTag/tenant}`. So even a bug that builds another tenant's key or index name gets
AccessDenied from AWS instead of another tenant's data.

Credentials are cached per tenant until `refresh_margin_seconds` before they expire (STS calls are slow and
rate-limited), and the cache is thread-safe: one STS call per tenant at a time, other tenants never wait.
`ClientFactory` turns them into cached per-tenant boto3 clients (made from one shared Session, `client_on`) and
rebuilds a client when its credentials were refreshed.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeGuard

import boto3
from botocore.config import Config

from ...domain.errors import ValidationFailed
from ...domain.ports import Clock
from ...domain.records import is_valid_tenant
from ..clock import SystemClock
from ._errors import upstream_errors

DEFAULT_CLIENT_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 5},
    connect_timeout=3,
    read_timeout=20,
    max_pool_connections=32,
)
"""Standard retry mode: up to 5 attempts, exponential backoff with jitter on throttling and 5xx errors. 32
pooled connections (botocore's default is 10): recall's touch sends up to 16 updates at once beside the
recall-log write (dynamodb_store.touch)."""

_SESSION_NAME_RE = re.compile(r"[^\w+=,.@-]")


@dataclass(frozen=True)
class TenantSessionCredentials:
    access_key_id: str
    secret_access_key: str
    session_token: str
    expiration: datetime


class TenantCredentials:
    """Assume `role_arn` once per tenant with the session tag `tenant=<id>`, cache until shortly before expiry."""

    def __init__(
        self,
        sts_client: Any,
        role_arn: str,
        session_name_prefix: str = "agent-memory",
        refresh_margin_seconds: int = 300,
        clock: Clock | None = None,
        *,
        duration_seconds: int = 3600,
        region_name: str | None = None,
    ) -> None:
        if not 900 <= duration_seconds <= 43200:
            raise ValueError("duration_seconds must be between 900 and 43200 (STS limits)")
        if refresh_margin_seconds >= duration_seconds:
            raise ValueError("refresh_margin_seconds must be shorter than the session duration")
        self._sts = sts_client
        self._role_arn = role_arn
        self._prefix = _SESSION_NAME_RE.sub("-", session_name_prefix)[:20] or "agent-memory"
        self._margin = timedelta(seconds=refresh_margin_seconds)
        self._clock = clock or SystemClock()
        self._duration = duration_seconds
        self._region = region_name
        self._cache: dict[str, TenantSessionCredentials] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def _lock_for(self, tenant: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(tenant, threading.Lock())

    def _fresh(self, credentials: TenantSessionCredentials | None) -> TypeGuard[TenantSessionCredentials]:
        return credentials is not None and self._clock.now() < credentials.expiration - self._margin

    def credentials_for(self, tenant: str) -> TenantSessionCredentials:
        if not is_valid_tenant(tenant):
            raise ValidationFailed(f"invalid tenant id {tenant!r}")
        cached = self._cache.get(tenant)
        if self._fresh(cached):
            return cached
        with self._lock_for(tenant):
            cached = self._cache.get(tenant)
            if self._fresh(cached):
                return cached  # another thread refreshed it meanwhile
            with upstream_errors("STS", "AssumeRole"):
                response = self._sts.assume_role(
                    RoleArn=self._role_arn,
                    RoleSessionName=f"{self._prefix}-{tenant}"[:64],
                    DurationSeconds=self._duration,
                    Tags=[{"Key": "tenant", "Value": tenant}],
                )
            raw = response["Credentials"]
            expiration = raw["Expiration"]
            if expiration.tzinfo is None:
                expiration = expiration.replace(tzinfo=UTC)
            fresh = TenantSessionCredentials(
                access_key_id=raw["AccessKeyId"],
                secret_access_key=raw["SecretAccessKey"],
                session_token=raw["SessionToken"],
                expiration=expiration,
            )
            self._cache[tenant] = fresh
            return fresh

    def session_for(self, tenant: str) -> boto3.Session:
        return self.session_from(self.credentials_for(tenant))

    def session_from(self, credentials: TenantSessionCredentials) -> boto3.Session:
        return boto3.Session(
            aws_access_key_id=credentials.access_key_id,
            aws_secret_access_key=credentials.secret_access_key,
            aws_session_token=credentials.session_token,
            region_name=self._region,
        )


_SESSIONS: dict[str | None, boto3.Session] = {}
_SESSIONS_LOCK = threading.Lock()


def client_on(credentials: TenantSessionCredentials, service: str, region: str | None, config: Config) -> Any:
    """A client of `service` signed with `credentials`, made from one boto3 Session per region for the whole
    process. A new Session per tenant read botocore's endpoint rules and the service's model from disk again
    (about 0.2 s of CPU per tenant and service); clients of one Session share what it loaded. A Session is not
    thread-safe, so clients are made under a lock: milliseconds, once the first has loaded the model."""
    with _SESSIONS_LOCK:
        session = _SESSIONS.get(region)
        if session is None:
            session = _SESSIONS[region] = boto3.Session(region_name=region)
        return session.client(
            service,
            region_name=region,
            config=config,
            aws_access_key_id=credentials.access_key_id,
            aws_secret_access_key=credentials.secret_access_key,
            aws_session_token=credentials.session_token,
        )


class ClientFactory:
    """`tenant -> boto3 client` of one service, cached per tenant. With `credentials=None` every tenant shares
    the function's own role (local development, or a single-tenant deployment): isolation then rests on the
    key design alone."""

    def __init__(
        self,
        service_name: str,
        credentials: TenantCredentials | None,
        region: str | None = None,
        config: Config | None = None,
    ) -> None:
        self._service = service_name
        self._credentials = credentials
        self._region = region
        self._config = config or DEFAULT_CLIENT_CONFIG
        self._clients: dict[str, tuple[str, Any]] = {}
        self._lock = threading.Lock()

    def __call__(self, tenant: str) -> Any:
        if self._credentials is None:
            return self._shared_client()
        credentials = self._credentials.credentials_for(tenant)
        with self._lock:
            cached = self._clients.get(tenant)
            if cached is not None and cached[0] == credentials.access_key_id:
                return cached[1]
        # Built outside this factory's lock: other tenants' clients are served meanwhile.
        client = client_on(credentials, self._service, self._region, self._config)
        with self._lock:
            self._clients[tenant] = (credentials.access_key_id, client)
        return client

    def _shared_client(self) -> Any:
        with self._lock:
            cached = self._clients.get("")
            if cached is None:
                cached = ("", boto3.client(self._service, region_name=self._region, config=self._config))
                self._clients[""] = cached
            return cached[1]
