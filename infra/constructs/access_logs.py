"""AccessLogs: the bucket that receives S3 server access logs and VPC flow logs."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..config import DeploymentConfig


class AccessLogs(Construct):
    """S3-managed encryption because S3 server access logging cannot deliver to an SSE-KMS bucket."""

    def __init__(self, scope: Construct, construct_id: str, *, retention_days: int, retain: bool) -> None:
        super().__init__(scope, construct_id)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            versioned=False,
            lifecycle_rules=[s3.LifecycleRule(id="expire-logs", expiration=Duration.days(retention_days))],
            removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
        )
        Validations.of(self.bucket).acknowledge(
            Acknowledgment(
                id="AwsSolutions-S1",
                reason="This is the access-log destination itself; logging it into itself would loop.",
            )
        )

    @classmethod
    def for_deployment(cls, scope: Construct, construct_id: str, config: DeploymentConfig) -> AccessLogs:
        return cls(
            scope, construct_id, retention_days=config.retention.access_log_days, retain=config.retain_data
        )
