"""The service's one customer-managed key: every data store (memory files, tables, vectors, archives, alarm
topic) is encrypted with it, so the tenant role needs exactly one key grant."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_kms as kms
from constructs import Construct


def data_key(scope: Construct, *, retain: bool) -> kms.Key:
    """Created in `scope` as `DataKey`, rotated yearly, retained with the data when `retain`."""
    return kms.Key(
        scope,
        "DataKey",
        description="Agent memory service data key",
        enable_key_rotation=True,
        removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
    )
