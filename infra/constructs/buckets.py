"""The one definition of a data bucket's security settings, so the memory-files bucket and the migration
archive cannot drift apart: SSE-KMS with the stack's key (bucket key on), TLS 1.2+ only, every public access
blocked, the owner owning every object, server access logs into the access-log bucket, and retained with the
data unless the deployment says otherwise."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct


def data_bucket(
    scope: Construct,
    construct_id: str,
    *,
    key: kms.IKey,
    access_logs_bucket: s3.IBucket,
    logs_prefix: str,
    lifecycle_rules: Sequence[s3.LifecycleRule],
    retain: bool,
    versioned: bool | None = None,
) -> s3.Bucket:
    return s3.Bucket(
        scope,
        construct_id,
        versioned=versioned,
        encryption=s3.BucketEncryption.KMS,
        encryption_key=key,
        bucket_key_enabled=True,
        enforce_ssl=True,
        minimum_tls_version=1.2,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        server_access_logs_bucket=access_logs_bucket,
        server_access_logs_prefix=logs_prefix,
        lifecycle_rules=list(lifecycle_rules),
        removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
    )
