"""MemoryFiles: the Markdown memory files, stored in S3 and mounted into functions through S3 Files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from aws_cdk import Acknowledgment, ArnFormat, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3files as s3files
from constructs import Construct

from ..config import DeploymentConfig, MemoryFilesConfig
from .buckets import data_bucket
from .network import Network

MEMORY_MOUNT_PATH = "/mnt/memory"
"""Where every function sees the memory files (AGENT_MEMORY_FILES_ROOT)."""

_S3FILES_PRINCIPAL = "elasticfilesystem.amazonaws.com"
"""S3 Files runs on EFS infrastructure and assumes its service role as this principal."""


class MemoryFiles(Construct):
    """A versioned, KMS-encrypted, TLS-only bucket with access logging; an S3 Files file system on it with
    its service role; a mount target in each function subnet; and one access point per function (same
    root directory and POSIX identity for all, so every function sees the same files). CDK 2.275 cannot
    mount one access point into two functions, hence `access_point_for(function_id)`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        subnets: Sequence[ec2.ISubnet],
        key: kms.IKey,
        access_logs_bucket: s3.IBucket,
        config: MemoryFilesConfig,
        noncurrent_version_days: int,
        retain: bool,
    ) -> None:
        super().__init__(scope, construct_id)
        if not subnets:
            raise ValueError("MemoryFiles needs at least one subnet for a mount target")
        self._config = config
        self.bucket = self._bucket(key, access_logs_bucket, noncurrent_version_days, retain)
        self.service_role = self._service_role(key)
        self.file_system = self._file_system(key, config, retain)
        self.mount_target_security_group = ec2.SecurityGroup(
            self,
            "MountTargetSecurityGroup",
            vpc=vpc,
            description="S3 Files mount targets: NFS from the functions that mount memory files only",
            allow_all_outbound=False,
        )
        self.mount_targets = [
            s3files.CfnMountTarget(
                self,
                f"MountTarget{index}",
                file_system_id=self.file_system.attr_file_system_id,
                subnet_id=subnet.subnet_id,
                security_groups=[self.mount_target_security_group.security_group_id],
            )
            for index, subnet in enumerate(subnets)
        ]
        self._access_points: dict[str, s3files.CfnAccessPoint] = {}
        self._mounted: set[str] = set()

    def _bucket(
        self, key: kms.IKey, access_logs_bucket: s3.IBucket, noncurrent_version_days: int, retain: bool
    ) -> s3.Bucket:
        return data_bucket(
            self,
            "Bucket",
            versioned=True,  # S3 Files requires versioning; it also makes overwrites recoverable
            key=key,
            access_logs_bucket=access_logs_bucket,
            logs_prefix="memory-files/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-old-versions",
                    noncurrent_version_expiration=Duration.days(noncurrent_version_days),
                    abort_incomplete_multipart_upload_after=Duration.days(7),
                )
            ],
            retain=retain,
        )

    def _service_role(self, key: kms.IKey) -> iam.Role:
        """The role S3 Files assumes to sync the bucket and the file system."""
        stack = Stack.of(self)
        # The role S3 Files assumes to sync the bucket and the file system. Only the S3 Files service,
        # acting for a file system in this account and region, may assume it.
        role = iam.Role(
            self,
            "ServiceRole",
            description="Assumed by Amazon S3 Files to synchronise the memory-files bucket",
            assumed_by=iam.ServicePrincipal(_S3FILES_PRINCIPAL).with_conditions(
                {
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="s3files",
                            resource="file-system",
                            resource_name="*",
                            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
                        )
                    },
                }
            ),
        )
        role.add_to_policy(
            iam.PolicyStatement(actions=["s3:ListBucket*"], resources=[self.bucket.bucket_arn])
        )
        role.add_to_policy(
            iam.PolicyStatement(
                # DeleteObject only (it leaves a delete marker): never DeleteObjectVersion, so the
                # bucket's versioning keeps every earlier state of a memory file.
                actions=[
                    "s3:AbortMultipartUpload",
                    "s3:DeleteObject",
                    "s3:GetObject*",
                    "s3:List*",
                    "s3:PutObject*",
                ],
                resources=[self.bucket.arn_for_objects("*")],
            )
        )
        key.grant(role, "kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey")
        # S3 Files watches the bucket through EventBridge rules it names DO-NOT-DELETE-S3-Files*.
        role.add_to_policy(
            iam.PolicyStatement(
                actions=[
                    "events:DeleteRule",
                    "events:DisableRule",
                    "events:EnableRule",
                    "events:PutRule",
                    "events:PutTargets",
                    "events:RemoveTargets",
                ],
                resources=[
                    stack.format_arn(
                        service="events", resource="rule", resource_name="DO-NOT-DELETE-S3-Files*"
                    )
                ],
                conditions={"StringEquals": {"events:ManagedBy": _S3FILES_PRINCIPAL}},
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=[
                    "events:DescribeRule",
                    "events:ListRuleNamesByTarget",
                    "events:ListRules",
                    "events:ListTargetsByRule",
                ],
                resources=[stack.format_arn(service="events", resource="rule", resource_name="*")],
            )
        )
        bucket_logical_id = stack.get_logical_id(cast(s3.CfnBucket, self.bucket.node.default_child))
        wildcards = (
            *_SERVICE_ROLE_WILDCARDS,
            (
                f"Resource::<{bucket_logical_id}.Arn>/*",
                "S3 Files syncs every object of the memory-files bucket; the bucket holds nothing else.",
            ),
        )
        Validations.of(role).acknowledge(
            *(
                Acknowledgment(id=f"AwsSolutions-IAM5[{finding}]", reason=reason)
                for finding, reason in wildcards
            )
        )
        return role

    def _file_system(self, key: kms.IKey, config: MemoryFilesConfig, retain: bool) -> s3files.CfnFileSystem:
        file_system = s3files.CfnFileSystem(
            self,
            "FileSystem",
            bucket=self.bucket.bucket_arn,
            role_arn=self.service_role.role_arn,
            kms_key_id=key.key_arn,
            # Always written, false unless memory_files.accept_bucket_warning says otherwise. The warning S3
            # Files documents is for a bucket (or prefix) holding a very large number of objects (about 12
            # million), where recursive renames cost one copy and one delete per object. This stack creates
            # the bucket empty in the same deployment and stores small Markdown files in it, so the warning
            # should never come up; if S3 Files raises one anyway, the deploy stops so that someone reads it
            # instead of it being accepted unseen. Create-only: changing it replaces the file system.
            accept_bucket_warning=config.accept_bucket_warning,
        )
        # The role's policy must exist before S3 Files first uses the role (the role itself is a GetAtt).
        default_policy = self.service_role.node.try_find_child("DefaultPolicy")
        if default_policy is not None:
            file_system.node.add_dependency(default_policy)
        # The file system, its service role and the role's policy share one removal policy. Retained (the
        # default, retain_data), a file system can still export to the retained bucket whatever it had not
        # written back when the stack was deleted, and it can only do so with its role and that role's grants
        # (bucket, key, EventBridge rules); a retained file system whose role was deleted is stranded. Not
        # retained, all three go: the bucket is the system of record, and S3 Files refuses to delete a file
        # system that still has data pending export unless forced.
        removal = RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY
        file_system.apply_removal_policy(removal)
        self.service_role.apply_removal_policy(removal)
        if isinstance(default_policy, iam.Policy):
            default_policy.apply_removal_policy(removal)
        return file_system

    @classmethod
    def for_deployment(
        cls,
        scope: Construct,
        construct_id: str,
        config: DeploymentConfig,
        *,
        network: Network,
        key: kms.IKey,
        logs: s3.IBucket,
    ) -> MemoryFiles:
        """Mount targets in the function subnets; old file versions kept as long as the retention says."""
        return cls(
            scope,
            construct_id,
            vpc=network.vpc,
            subnets=network.subnets,
            key=key,
            access_logs_bucket=logs,
            config=config.memory_files,
            noncurrent_version_days=config.retention.noncurrent_file_version_days,
            retain=config.retain_data,
        )

    def access_point_for(self, function_id: str) -> s3files.CfnAccessPoint:
        """The access point of one function (created on first use). Every access point enforces the same
        POSIX identity and root directory, so files written by one function are readable by the others."""
        if function_id in self._access_points:
            return self._access_points[function_id]
        uid, gid = str(self._config.posix_uid), str(self._config.posix_gid)
        access_point = s3files.CfnAccessPoint(
            self,
            f"AccessPoint-{function_id}",
            file_system_id=self.file_system.attr_file_system_id,
            posix_user=s3files.CfnAccessPoint.PosixUserProperty(uid=uid, gid=gid),
            root_directory=s3files.CfnAccessPoint.RootDirectoryProperty(
                path=self._config.root_directory,
                creation_permissions=s3files.CfnAccessPoint.CreationPermissionsProperty(
                    owner_uid=uid, owner_gid=gid, permissions="750"
                ),
            ),
            tags=[s3files.CfnAccessPoint.AccessPointTagProperty(key="function", value=function_id)],
        )
        self._access_points[function_id] = access_point
        return access_point

    def mount_for(self, function_id: str) -> lambda_.FileSystem:
        """The Lambda file system config that mounts this function's own access point at /mnt/memory.
        Reads go through the mount (no direct S3 reads): memory files are a few KB, and the function
        role then needs no S3 or KMS permission on the bucket at all."""
        if function_id in self._mounted:
            raise ValueError(f"the memory files are already mounted into function {function_id!r}")
        self._mounted.add(function_id)
        return lambda_.FileSystem.from_s3_files_access_point(
            self.access_point_for(function_id),
            MEMORY_MOUNT_PATH,
            direct_s3_read=lambda_.DirectS3Read.disabled(),
        )

    @property
    def mounted_function_ids(self) -> tuple[str, ...]:
        return tuple(sorted(self._mounted))


_SERVICE_ROLE_WILDCARDS = (
    (
        "Action::s3:ListBucket*",
        "S3 Files service role: AWS-documented bucket listing set (ListBucket, ListBucketVersions) "
        "on this bucket only.",
    ),
    (
        "Action::s3:GetObject*",
        "S3 Files service role: the sync reads objects, versions and tags of this bucket.",
    ),
    ("Action::s3:List*", "S3 Files service role: AWS-documented list set for the sync, this bucket only."),
    (
        "Action::s3:PutObject*",
        "S3 Files service role: the sync writes objects and their tags to this bucket.",
    ),
    (
        "Resource::arn:<AWS::Partition>:events:<AWS::Region>:<AWS::AccountId>:rule/DO-NOT-DELETE-S3-Files*",
        "S3 Files creates its change-detection rules with this fixed prefix; names are chosen by the service.",
    ),
    (
        "Resource::arn:<AWS::Partition>:events:<AWS::Region>:<AWS::AccountId>:rule/*",
        "Describe/List EventBridge calls of the S3 Files sync; read-only and without resource-level scoping.",
    ),
)
