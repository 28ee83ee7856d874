"""MemoryFiles: the bucket, the S3 Files file system, mount targets, access points and the Lambda mounts."""

from __future__ import annotations

from typing import Any

import pytest
from infra_support import FILE_WORKERS, MOUNTING_FUNCTIONS, Synthesized, as_list, policy_statements, render

# The decay job archives records only: no memory file, no mount (and with `lean`, no VPC). With `lean` only the
# file function mounts S3 Files (infra_support.MOUNTING_FUNCTIONS).


def _file_system(synthesized: Synthesized) -> tuple[str, dict[str, Any]]:
    ((logical_id, resource),) = synthesized.of_type("AWS::S3Files::FileSystem").items()
    return logical_id, resource["Properties"]


def test_memory_bucket_is_versioned_kms_encrypted_tls_only_private_and_logged(
    synthesized: Synthesized,
) -> None:
    # Given the bucket the S3 Files file system is built on
    _, fs = _file_system(synthesized)
    bucket_id = fs["Bucket"]["Fn::GetAtt"][0]
    bucket = synthesized.resources[bucket_id]["Properties"]
    key_id = synthesized.logical_id("AWS::KMS::Key", "DataKey")

    # Then versioning (required by S3 Files), SSE-KMS with the service key and a bucket key are on
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    (rule,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    assert render(rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"]) == f"<{key_id}.Arn>"
    assert rule["BucketKeyEnabled"] is True
    # And every public access path is blocked, and access is logged to the access-log bucket
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    access_logs_id = synthesized.logical_id("AWS::S3::Bucket", "AccessLogsBucket")
    assert render(bucket["LoggingConfiguration"]["DestinationBucketName"]) == f"<{access_logs_id}>"

    # And the bucket policy denies any request not made over TLS
    (policy,) = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in synthesized.of_type("AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in policy
    )


def test_s3_files_file_system_syncs_the_bucket_with_a_role_only_s3_files_can_assume(
    synthesized: Synthesized,
) -> None:
    # Given the file system
    _, fs = _file_system(synthesized)
    role_id = fs["RoleArn"]["Fn::GetAtt"][0]
    trust = synthesized.resources[role_id]["Properties"]["AssumeRolePolicyDocument"]["Statement"]

    # Then it is encrypted with the service key
    assert render(fs["KmsKeyId"]) == f"<{synthesized.logical_id('AWS::KMS::Key', 'DataKey')}.Arn>"
    # And its role trusts only the S3 Files service principal, for file systems of this account
    (statement,) = [render(s) for s in trust]
    assert statement["Principal"] == {"Service": "elasticfilesystem.amazonaws.com"}
    assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": "<AWS::AccountId>"}
    assert statement["Condition"]["ArnLike"]["aws:SourceArn"].endswith(":file-system/*")
    assert ":s3files:" in statement["Condition"]["ArnLike"]["aws:SourceArn"]
    # And the role may sync exactly this bucket and manage only the S3 Files EventBridge rules
    statements = policy_statements(synthesized, role_id)
    bucket_arn = f"<{fs['Bucket']['Fn::GetAtt'][0]}.Arn>"
    s3_resources = {
        resource
        for s in statements
        if any(action.startswith("s3:") for action in as_list(s["Action"]))
        for resource in as_list(s["Resource"])
    }
    assert s3_resources <= {bucket_arn, f"{bucket_arn}/*"}
    # And it can leave delete markers but never erase the versions that keep a file's history
    s3_actions = {a for s in statements for a in as_list(s["Action"]) if a.startswith("s3:")}
    assert "s3:DeleteObject" in s3_actions
    assert not {a for a in s3_actions if a.startswith("s3:DeleteObject") and a != "s3:DeleteObject"}
    assert "s3:*" not in s3_actions
    rule_writes = [s for s in statements if "events:PutRule" in s["Action"]]
    assert rule_writes and rule_writes[0]["Resource"].endswith(":rule/DO-NOT-DELETE-S3-Files*")
    assert rule_writes[0]["Condition"] == {
        "StringEquals": {"events:ManagedBy": "elasticfilesystem.amazonaws.com"}
    }


def test_one_mount_target_in_each_function_subnet(synthesized: Synthesized) -> None:
    # Given the VPC's subnets and the mount targets
    subnets = set(synthesized.of_type("AWS::EC2::Subnet"))
    mount_targets = [m["Properties"] for m in synthesized.of_type("AWS::S3Files::MountTarget").values()]
    fs_id, _ = _file_system(synthesized)

    # Then every subnet has exactly one mount target of the file system, guarded by a security group
    assert sorted(m["SubnetId"]["Ref"] for m in mount_targets) == sorted(subnets)
    assert all(m["FileSystemId"] == {"Fn::GetAtt": [fs_id, "FileSystemId"]} for m in mount_targets)
    assert all(len(m["SecurityGroups"]) == 1 for m in mount_targets)


def test_each_mounting_function_gets_its_own_access_point_with_the_fixed_posix_identity(
    profile_synthesized: Synthesized,
) -> None:
    # Given the access points and the Lambda file system configs
    synthesized = profile_synthesized
    mounting = MOUNTING_FUNCTIONS[synthesized.profile]
    access_points = synthesized.of_type("AWS::S3Files::AccessPoint")
    mounted = {}
    for name in mounting:
        function = synthesized.resources[synthesized.logical_id("AWS::Lambda::Function", name)]["Properties"]
        (config,) = function["FileSystemConfigs"]
        mounted[name] = config

    # Then each function mounts at /mnt/memory through a distinct access point of this stack
    assert {c["LocalMountPath"] for c in mounted.values()} == {"/mnt/memory"}
    ap_ids = [c["Arn"]["Fn::GetAtt"][0] for c in mounted.values()]
    assert len(set(ap_ids)) == len(mounting)
    assert set(ap_ids) == set(access_points)
    # And all access points share one POSIX identity and root, so the functions see the same files
    identities = {
        (
            json_key(ap["Properties"]["PosixUser"]),
            ap["Properties"]["RootDirectory"]["Path"],
            json_key(ap["Properties"]["RootDirectory"]["CreationPermissions"]),
        )
        for ap in access_points.values()
    }
    assert identities == {
        (
            json_key({"Uid": "1001", "Gid": "1001"}),
            "/agent-memory",
            json_key({"OwnerUid": "1001", "OwnerGid": "1001", "Permissions": "750"}),
        )
    }
    # And reads go through the mount, so no function role needs S3 access to the bucket
    assert all(c["S3FilesConfig"] == {"DirectS3Read": "DISABLED"} for c in mounted.values())


def json_key(value: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(value.items()))


def test_functions_that_do_not_read_memory_files_have_no_mount(synthesized: Synthesized) -> None:
    for name in ("AuthorizerFunction", "DecayJobFunction"):
        function = synthesized.resources[synthesized.logical_id("AWS::Lambda::Function", name)]
        assert "FileSystemConfigs" not in function["Properties"], name
        assert "AGENT_MEMORY_FILES_ROOT" not in function["Properties"]["Environment"]["Variables"], name
        assert "AGENT_MEMORY_FILE_FUNCTION" not in function["Properties"]["Environment"]["Variables"], name


def test_with_lean_the_file_workers_reach_the_files_only_through_the_file_function(
    profile_synthesized: Synthesized,
) -> None:
    synthesized = profile_synthesized
    functions = synthesized.of_type("AWS::Lambda::Function")
    file_function = [k for k in functions if "FileFunction" in k]
    for name in FILE_WORKERS:
        props = functions[synthesized.logical_id("AWS::Lambda::Function", name)]["Properties"]
        variables = props["Environment"]["Variables"]
        if synthesized.profile == "lean":
            # No mount, no VPC: the file function's name, which their role may invoke (test_infra_iam_contract)
            assert variables["AGENT_MEMORY_FILE_FUNCTION"] == {"Ref": file_function[0]}, name
            assert "AGENT_MEMORY_FILES_ROOT" not in variables, name
            assert "FileSystemConfigs" not in props and "VpcConfig" not in props, name
        else:
            assert "AGENT_MEMORY_FILE_FUNCTION" not in variables, name
            assert variables["AGENT_MEMORY_FILES_ROOT"] == "/mnt/memory", name
    if synthesized.profile == "isolated":
        assert file_function == []
        return
    # The file function: the mount and nothing else (no table, bucket, key or tenant role to name)
    (logical_id,) = file_function
    props = functions[logical_id]["Properties"]
    assert props["Handler"] == "agent_memory.handlers.files.handler"
    assert props["Environment"]["Variables"]["AGENT_MEMORY_FILES_ROOT"] == "/mnt/memory"
    assert not [
        v
        for v in props["Environment"]["Variables"]
        if v.startswith("AGENT_MEMORY_") and v != "AGENT_MEMORY_FILES_ROOT"
    ]
    statements = policy_statements(synthesized, props["Role"]["Fn::GetAtt"][0])
    services = {action.split(":")[0] for s in statements for action in as_list(s["Action"])}
    assert services <= {"s3files", "logs", "xray"}, services


def test_mount_targets_accept_nfs_only_from_the_mounting_functions(profile_synthesized: Synthesized) -> None:
    # Given the mount targets' security group
    synthesized = profile_synthesized
    (mount_sg,) = {
        m["Properties"]["SecurityGroups"][0]["Fn::GetAtt"][0]
        for m in synthesized.of_type("AWS::S3Files::MountTarget").values()
    }
    assert "SecurityGroupIngress" not in synthesized.resources[mount_sg]["Properties"]
    ingress = [
        r["Properties"]
        for r in synthesized.of_type("AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"]["GroupId"] == {"Fn::GetAtt": [mount_sg, "GroupId"]}
    ]
    # Then its only ingress is TCP 2049 from each mounting function's security group
    function_sgs = {
        synthesized.resources[synthesized.logical_id("AWS::Lambda::Function", name)]["Properties"][
            "VpcConfig"
        ]["SecurityGroupIds"][0]["Fn::GetAtt"][0]
        for name in MOUNTING_FUNCTIONS[synthesized.profile]
    }
    assert {(i["IpProtocol"], i["FromPort"], i["ToPort"]) for i in ingress} == {("tcp", 2049, 2049)}
    assert {i["SourceSecurityGroupId"]["Fn::GetAtt"][0] for i in ingress} == function_sgs


def test_mounting_function_roles_may_mount_their_access_point(profile_synthesized: Synthesized) -> None:
    synthesized = profile_synthesized
    fs_id, _ = _file_system(synthesized)
    for name in MOUNTING_FUNCTIONS[synthesized.profile]:
        function = synthesized.resources[synthesized.logical_id("AWS::Lambda::Function", name)]["Properties"]
        role_id = function["Role"]["Fn::GetAtt"][0]
        access_point = function["FileSystemConfigs"][0]["Arn"]["Fn::GetAtt"][0]
        statements = policy_statements(synthesized, role_id)
        mount = [s for s in statements if s["Action"] == "s3files:ClientMount"]
        assert mount and mount[0]["Resource"] == f"<{access_point}.AccessPointArn>"
        write = [s for s in statements if "s3files:ClientWrite" in s["Action"]]
        # Ref of AWS::S3Files::FileSystem is its ARN (the schema's primary identifier)
        assert write and write[0]["Resource"] == f"<{fs_id}>"


def test_one_access_point_cannot_be_mounted_twice() -> None:
    # Given a MemoryFiles construct in a bare stack

    files, _ = _memory_files_stack(retain=False)
    # When a function mounts its access point, and another function asks for its own
    files.mount_for("first")
    files.mount_for("second")
    # Then each got a distinct access point, and mounting "first" again is refused
    assert files.access_point_for("first") is not files.access_point_for("second")
    assert files.mounted_function_ids == ("first", "second")
    with pytest.raises(ValueError, match="already mounted into function 'first'"):
        files.mount_for("first")


def _memory_files_stack(*, retain: bool, accept_bucket_warning: bool = False) -> tuple[Any, Any]:
    """The MemoryFiles construct alone in a stack (one isolated subnet): (construct, stack)."""
    import aws_cdk as cdk
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_s3 as s3

    from infra.config import MemoryFilesConfig
    from infra.constructs import MemoryFiles

    stack = cdk.Stack(cdk.App())
    vpc = ec2.Vpc(
        stack,
        "Vpc",
        max_azs=1,
        nat_gateways=0,
        subnet_configuration=[ec2.SubnetConfiguration(name="f", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)],
    )
    files = MemoryFiles(
        stack,
        "Files",
        vpc=vpc,
        subnets=vpc.isolated_subnets,
        key=kms.Key(stack, "Key"),
        access_logs_bucket=s3.Bucket(stack, "Logs"),
        config=MemoryFilesConfig(accept_bucket_warning=accept_bucket_warning),
        noncurrent_version_days=7,
        retain=retain,
    )
    return files, stack


def _bare_memory_files(*, retain: bool, accept_bucket_warning: bool = False) -> dict[str, Any]:
    """The MemoryFiles construct alone in a stack, synthesized."""
    from aws_cdk.assertions import Template

    _, stack = _memory_files_stack(retain=retain, accept_bucket_warning=accept_bucket_warning)
    return dict(Template.from_stack(stack).to_json()["Resources"])


def test_the_bucket_warning_is_answered_explicitly_and_only_accepted_on_request(
    synthesized: Synthesized,
) -> None:
    # Given the file system as deployed: S3 Files fails creation on a bucket warning unless it is accepted
    _, fs = _file_system(synthesized)
    # Then the template says so explicitly (not accepted: the stack's bucket starts empty, and a warning,
    # should one appear, is for someone to read)
    assert fs["AcceptBucketWarning"] is False
    # And memory_files.accept_bucket_warning is the only way to accept one
    (accepted,) = [
        r["Properties"]
        for r in _bare_memory_files(retain=False, accept_bucket_warning=True).values()
        if r["Type"] == "AWS::S3Files::FileSystem"
    ]
    assert accepted["AcceptBucketWarning"] is True


def _file_system_and_its_role(resources: dict[str, Any]) -> list[tuple[str, str | None]]:
    ((fs_id, fs),) = [(k, r) for k, r in resources.items() if r["Type"] == "AWS::S3Files::FileSystem"]
    role_id = fs["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    (policy_id,) = [
        k
        for k, r in resources.items()
        if r["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in r["Properties"]["Roles"]
    ]
    return [(resources[i]["Type"], resources[i].get("DeletionPolicy")) for i in (fs_id, role_id, policy_id)]


def test_the_file_system_and_its_service_role_are_retained_together_or_not_at_all(
    synthesized: Synthesized,
) -> None:
    # Given retain_data (as shipped): a retained file system can only finish exporting to the retained bucket
    # with its role and the role's grants, so all three stay
    assert _file_system_and_its_role(synthesized.resources) == [
        ("AWS::S3Files::FileSystem", "Retain"),
        ("AWS::IAM::Role", "Retain"),
        ("AWS::IAM::Policy", "Retain"),
    ]
    # And without retain_data all three go with the stack
    assert [policy for _, policy in _file_system_and_its_role(_bare_memory_files(retain=False))] == [
        "Delete",
        "Delete",
        "Delete",
    ]
