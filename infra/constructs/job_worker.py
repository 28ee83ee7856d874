"""JobWorker: long work accepted with 202 (imports, large memory batches; issue 29) runs in its own function.

It owns the job function (the API's routes' synchronous paths with Lambda's longest timeout, invoked
asynchronously: two retries, then its dead-letter queue), the staging bucket where a job's request too large
for its DynamoDB item waits (SSE-KMS with the stack's key, TLS only, objects expire after a day), and the
grants around them: `grant_submit` (the API function may invoke it, with its own role), `grant_tenant` (the
tenant role may write, read and delete staged requests under its own `<tenant>/jobs/` prefix only). The job
items themselves are MemoryTable items under `<tenant>#JOB#`: the tenant role's existing grant covers them.
Decision: docs/decisions/0008-aws-jobs-async-lambda.md."""

from __future__ import annotations

import json

from aws_cdk import Acknowledgment, Duration, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from ..config import DeploymentConfig
from .bedrock_models import BedrockModels
from .buckets import data_bucket
from .function_set import FunctionSet, erasure_retention
from .network import S3, Network
from .service_function import MAX_EVENT_AGE_HOURS, ServiceFunction
from .tenant_vectors import TENANT_PRINCIPAL_TAG, TenantVectors

JOB_HANDLER = "agent_memory.handlers.job_worker.handler"
STAGED_OBJECT_ACTIONS = ("s3:PutObject", "s3:GetObject", "s3:DeleteObject")
STAGED_DAYS = 1
LOST_MARGIN_SECONDS = 300
"""A staged request is deleted when its job ends; what a lost job left expires after this."""


class JobWorker(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeploymentConfig,
        functions: FunctionSet,
        key: kms.IKey,
        access_logs_bucket: s3.IBucket,
    ) -> None:
        super().__init__(scope, construct_id)
        self.staging_bucket = data_bucket(
            self,
            "StagingBucket",
            key=key,
            access_logs_bucket=access_logs_bucket,
            logs_prefix="job-staging/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-staged-requests",
                    expiration=Duration.days(STAGED_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
            retain=False,  # requests in flight only: nothing here outlives its job by more than a day
        )
        self._jobs = _jobs_setting(config)
        self.function = functions.add(
            "JobWorkerFunction",
            handler=JOB_HANDLER,
            description="Jobs accepted with 202 (imports, large memory batches), one per asynchronous invoke",
            sizing=config.functions.job_worker,
            environment={
                "AGENT_MEMORY_JOB_STAGING_BUCKET": self.staging_bucket.bucket_name,
                "AGENT_MEMORY_JOBS": self._jobs,
                **_api_behaviour(config),
            },
            files="jobs",
            asynchronous=True,
        )

    @classmethod
    def for_deployment(
        cls, scope: Construct, construct_id: str, config: DeploymentConfig, *, functions: FunctionSet,
        key: kms.IKey, logs: s3.IBucket, models: BedrockModels,
    ) -> JobWorker:  # fmt: skip
        """The job function decides writes as the API does: with the optional LLM write judge, its grant too."""
        jobs = cls(scope, construct_id, config=config, functions=functions, key=key, access_logs_bucket=logs)
        models.grant_optional(jobs.function, config.write_judge.model_id, sid="WriteJudge")
        return jobs

    def grant_submit(self, function: ServiceFunction, network: Network) -> None:
        """`function` (the API) queues jobs: it invokes the job function, only its unqualified ARN, with its
        own role (IAM and, in the VPC, the Lambda endpoint's policy), and learns its name and the bucket."""
        network.grant(
            "lambda",
            function,
            sid="SubmitJob",
            actions=["lambda:InvokeFunction"],
            resources=[self.function.function.function_arn],
        )
        function.add_environment("AGENT_MEMORY_JOB_FUNCTION", self.function.function.function_name)
        function.add_environment("AGENT_MEMORY_JOB_STAGING_BUCKET", self.staging_bucket.bucket_name)
        function.add_environment("AGENT_MEMORY_JOBS", self._jobs)

    def purged_by(self, function: ServiceFunction) -> None:
        """`function` runs purge steps (the dreaming function, for the purge workflow): it erases jobs'
        staged requests too (with the tenant's session, as the API does)."""
        function.add_environment("AGENT_MEMORY_JOB_STAGING_BUCKET", self.staging_bucket.bucket_name)

    def grant_tenant(self, vectors: TenantVectors, network: Network) -> None:
        """Staged requests are written (API) and read and deleted (job function) with the tenant's session:
        only objects under its own `<tenant>/jobs/` prefix. The key is the stack's data key, which the tenant
        role may already use."""
        vectors.tenant_access_role.add_to_policy(
            iam.PolicyStatement(
                sid="OwnTenantJobRequests",
                actions=list(STAGED_OBJECT_ACTIONS),
                resources=[self.staging_bucket.arn_for_objects(f"{TENANT_PRINCIPAL_TAG}/jobs/*")],
            )
        )
        network.allow(
            S3,
            sid="TenantJobRequests",
            roles=[vectors.tenant_access_role],
            actions=STAGED_OBJECT_ACTIONS,
            resources=[self.staging_bucket.arn_for_objects("*")],
        )
        bucket_id = Stack.of(self).get_logical_id(self.staging_bucket.node.default_child)  # type: ignore[arg-type]
        Validations.of(vectors.tenant_access_role).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions-IAM5[Resource::<{bucket_id}.Arn>/<aws:PrincipalTag/tenant>/jobs/*]",
                reason="The staged job requests of the session's own tenant only (<tenant>/jobs/<job id>.json).",
            )
        )


def _jobs_setting(config: DeploymentConfig) -> str:
    """AGENT_MEMORY_JOBS of the functions that read jobs: a job unfinished after the job function's event could
    have waited (its maximum age) plus one invocation's timeout is `lost` (Lambda gave up on it; the event is
    in the dead-letter queue), so a poll answers `failed` instead of `running` forever."""
    lost_after = (
        MAX_EVENT_AGE_HOURS * 3600 + config.functions.job_worker.timeout_seconds + LOST_MARGIN_SECONDS
    )
    return json.dumps({"lost_after_seconds": lost_after})


def _api_behaviour(config: DeploymentConfig) -> dict[str, str]:
    """What the API function's environment says about how a write behaves (the write judge, the policy, the
    purge's retention windows): the job function runs the same routes, so it must decide the same way."""
    environment = {"AGENT_MEMORY_ERASURE_RETENTION": erasure_retention(config)}
    if config.write_judge.model_id:
        environment["AGENT_MEMORY_WRITE_JUDGE_MODEL_ID"] = config.write_judge.model_id
        environment["AGENT_MEMORY_POLICY"] = json.dumps(
            {"write_judge_tenants": list(config.write_judge.tenants)}
        )
    return environment
