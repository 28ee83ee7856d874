"""DeclaredBuckets: every S3 bucket `agent_memory.settings.resources` declares (`BUCKETS`), built and granted
from its declaration, without a construct or stack line of its own.

Each bucket is a `data_bucket` (SSE-KMS with the stack's key and a bucket key, TLS 1.2+ only, every public
access blocked, objects owned by the bucket owner, server access logs into the access-log bucket), with the
declaration's expiry. `grant_declared` gives each access to exactly the functions it names:
their name for the bucket (`AGENT_MEMORY_<SETTING>`), and the calls, with their own role or (`tenant=True`)
with the tenant role they assume, on the objects under the access's prefix (a listing only under it), the
key use the calls need, and, for a role whose calls go through the VPC, the same call in the S3 gateway
endpoint's policy. Nothing else is granted on these buckets."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from aws_cdk import Acknowledgment, Duration, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from agent_memory.settings import resources
from agent_memory.settings.resources import Bucket, BucketAccess

from ..config import DeploymentConfig
from .buckets import data_bucket
from .network import S3, Network
from .service_function import ServiceFunction
from .tenant_vectors import TENANT_PRINCIPAL_TAG, TenantVectors


class DeclaredBuckets(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, key: kms.IKey, logs: s3.IBucket, network: Network,
        retain: bool,
    ) -> None:  # fmt: skip
        super().__init__(scope, construct_id)
        self._key, self._network = key, network
        self._key_users: list[tuple[iam.IRole, tuple[str, ...]]] = []
        self.buckets: dict[str, s3.Bucket] = {
            bucket.construct_id: data_bucket(
                self,
                bucket.construct_id,
                key=key,
                access_logs_bucket=logs,
                logs_prefix=f"{bucket.construct_id.lower()}/",
                lifecycle_rules=_lifecycle(bucket),
                retain=retain and not bucket.transient,
            )
            for bucket in resources.BUCKETS
        }
        """Every declared bucket, by its construct id."""

    @classmethod
    def for_deployment(
        cls, scope: Construct, construct_id: str, config: DeploymentConfig, key: kms.IKey, logs: s3.IBucket,
        network: Network,
    ) -> DeclaredBuckets:  # fmt: skip
        return cls(scope, construct_id, key=key, logs=logs, network=network, retain=config.retain_data)

    def grant_declared(self, functions: Iterable[ServiceFunction | None], vectors: TenantVectors) -> None:
        """Every access the declarations name, to those of the stack's `functions` they name by handler module
        (a function the deployment lacks is skipped); a tenant access on the tenant role of `vectors`, only
        for functions it trusts."""
        by_module = {f.handler_module: f for f in functions if f is not None}
        trusted = {f.handler_module for f in vectors.trusted}
        tenant_role = vectors.tenant_access_role
        for bucket in resources.BUCKETS:
            name = self.buckets[bucket.construct_id].bucket_name
            for access in bucket.access:
                _check(bucket, access, set(by_module), trusted)
                callers = [by_module[n] for n in access.functions if n in by_module]
                for function in callers:
                    function.add_environment(bucket.variable, name)
                if access.tenant and callers:
                    self._grant_tenant(bucket, access, tenant_role, callers)
                for function in callers if not access.tenant else ():
                    self._grant_own(bucket, access, function)

    def _grant_own(self, bucket: Bucket, access: BucketAccess, function: ServiceFunction) -> None:
        """The calls with the function's own role (IAM and, in the VPC, the S3 endpoint), and the key use."""
        for sid, actions, resource, conditions in self._statements(bucket, access, access.prefix):
            self._network.grant(
                S3, function, sid=sid, actions=actions, resources=[resource], conditions=conditions or None
            )
        self._use_key(function.role, access)
        self._acknowledge(function.role, bucket, access, access.prefix)

    def _grant_tenant(
        self, bucket: Bucket, access: BucketAccess, role: iam.IRole, callers: list[ServiceFunction]
    ) -> None:
        """The calls with the tenant's session: the session's own keys under `<tenant>/<prefix>` only. The
        endpoint admits the role to the keys under the prefix when a caller runs in the VPC (its sessions go
        through it); IAM narrows them to the tenant's."""
        prefix = f"{TENANT_PRINCIPAL_TAG}/{access.prefix}"
        for sid, actions, resource, conditions in self._statements(bucket, access, prefix):
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid=sid, actions=list(actions), resources=[resource], conditions=conditions or None
                )
            )
        if any(f.function.is_bound_to_vpc for f in callers):
            for sid, actions, resource, _ in self._statements(bucket, access, access.prefix):
                self._network.allow(S3, roles=[role], sid=sid, actions=actions, resources=[resource])
        self._use_key(role, access)
        self._acknowledge(role, bucket, access, prefix)

    def _statements(
        self, bucket: Bucket, access: BucketAccess, prefix: str
    ) -> list[tuple[str, tuple[str, ...], str, dict[str, Any]]]:
        """(sid, actions, resource, conditions): the object calls under `prefix`, and the bucket calls (a
        listing) confined to keys under it."""
        resource = self.buckets[bucket.construct_id]
        statements: list[tuple[str, tuple[str, ...], str, dict[str, Any]]] = []
        if access.object_actions:
            objects = resource.arn_for_objects(f"{prefix}*")
            statements.append((access.sid, access.object_actions, objects, {}))
        if access.bucket_actions:
            confined = {"StringLike": {"s3:prefix": [f"{prefix}*"]}} if prefix else {}
            statements.append((f"{access.sid}Bucket", access.bucket_actions, resource.bucket_arn, confined))
        return statements

    def _use_key(self, role: iam.IRole, access: BucketAccess) -> None:
        if (role, access.key_actions) not in self._key_users:
            self._key_users.append((role, access.key_actions))
            self._key.grant(role, *access.key_actions)

    def _acknowledge(self, role: iam.IRole, bucket: Bucket, access: BucketAccess, prefix: str) -> None:
        """The object statement's trailing `*` is the keys under the declared prefix, no wider."""
        if not access.object_actions:
            return
        shown = prefix.replace("${", "<").replace("}", ">")  # a policy variable as cdk-nag writes it
        child = self.buckets[bucket.construct_id].node.default_child
        bucket_id = Stack.of(self).get_logical_id(child)  # type: ignore[arg-type]
        Validations.of(role).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/{shown}*]",
                reason=f"The objects of the declared bucket {bucket.construct_id} under the access's own key "
                "prefix (agent_memory.settings.resources), no other key.",
            )
        )


def _check(bucket: Bucket, access: BucketAccess, deployed: set[str], trusted: set[str]) -> None:
    unknown = [name for name in access.functions if name not in resources.FUNCTIONS]
    if unknown:
        raise ValueError(f"bucket {bucket.construct_id}: {access.sid} names no function {unknown}")
    if access.tenant and not set(access.functions) <= set(resources.TENANT_FUNCTIONS):
        raise ValueError(
            f"bucket {bucket.construct_id}: {access.sid} is made with the tenant's session, but "
            f"{sorted(set(access.functions) - set(resources.TENANT_FUNCTIONS))} do not assume the tenant role"
        )
    untrusted = [name for name in access.functions if access.tenant and name in deployed - trusted]
    if untrusted:
        raise ValueError(
            f"bucket {bucket.construct_id}: {access.sid}: {untrusted} do not assume the tenant role"
        )
    if not access.actions or not all(a.startswith("s3:") and "*" not in a for a in access.actions):
        raise ValueError(f"bucket {bucket.construct_id}: {access.sid} must name s3: actions, no wildcard")


def _lifecycle(bucket: Bucket) -> list[s3.LifecycleRule]:
    rules = [
        s3.LifecycleRule(
            id="abort-incomplete-uploads", abort_incomplete_multipart_upload_after=Duration.days(1)
        )
    ]
    if bucket.expire_days is not None:
        rules.append(s3.LifecycleRule(id="expire-objects", expiration=Duration.days(bucket.expire_days)))
    return rules
