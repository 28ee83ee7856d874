"""The stack's outputs: what an operator (and infra/smoke.py, infra/onboard.py) reads after a deploy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aws_cdk import CfnOutput

if TYPE_CHECKING:
    from .memory_stack import MemoryStack


def add_outputs(stack: MemoryStack) -> None:
    outputs = {
        "ApiUrl": (stack.api.url, "Base URL of the memory API (append v1/...)"),
        "UsagePlanId": (stack.api.usage_plan.usage_plan_id, "Usage plan that per-tenant usage keys join"),
        "VectorBucketName": (stack.vectors.vector_bucket_name, "S3 Vectors bucket (one index per tenant)"),
        "MemoryTableName": (stack.tables.memory.table_name, "DynamoDB table of memory records"),
        "ApiKeysTableName": (stack.tables.api_keys.table_name, "DynamoDB table of API key hashes"),
        "TenantRoleArn": (stack.vectors.tenant_access_role.role_arn, "Session-tag scoped tenant role"),
        "MemoryBucketName": (stack.memory_files.bucket.bucket_name, "Bucket behind the memory files"),
        "FileSystemId": (stack.memory_files.file_system.attr_file_system_id, "S3 Files file system"),
        "DashboardName": (stack.observability.dashboard.dashboard_name, "CloudWatch dashboard"),
        "AlarmTopicArn": (stack.observability.topic.topic_arn, "Subscribe on-call to this SNS topic"),
        "DreamingStateMachineArn": (
            stack.workflows["dreaming"].state_machine.state_machine_arn,
            "Dreaming sweep state machine (started nightly per tenant)",
        ),
        "CuratorStateMachineArn": (
            stack.workflows["curator"].state_machine.state_machine_arn,
            "Skills curator state machine (started weekly per tenant)",
        ),
        "MigrationArchiveBucketName": (
            stack.migration.archive_bucket.bucket_name,
            "Embedding-migration archives (<tenant>/<migration>/); offboarding deletes the tenant's prefix",
        ),
    }
    for name, (value, description) in outputs.items():
        CfnOutput(stack, name, value=value, description=description)
