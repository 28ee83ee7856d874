"""Tenant onboarding (adapters/aws/onboarding.py and the infra/onboard.py command) against moto."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from infra_support import ROOT
from moto import mock_aws

from agent_memory.adapters.aws.onboarding import (
    AwsCallFailed,
    IndexSpec,
    StackResources,
    TenantOnboarding,
    read_stack_outputs,
)
from agent_memory.domain.errors import Conflict, NotFound, ValidationFailed
from infra import onboard

REGION = "eu-central-1"
VECTOR_BUCKET = "agent-memory-vectors"
API_KEYS_TABLE = "agent-memory-api-keys"
SPEC = IndexSpec(dimension=1024, distance_metric="cosine", non_filterable_metadata_keys=("text",))


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        clients = {
            name: boto3.client(name, region_name=REGION) for name in ("s3vectors", "dynamodb", "apigateway")
        }
        clients["s3vectors"].create_vector_bucket(vectorBucketName=VECTOR_BUCKET)
        clients["dynamodb"].create_table(
            TableName=API_KEYS_TABLE,
            KeySchema=[{"AttributeName": "key_hash", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "key_hash", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        clients["usage_plan_id"] = clients["apigateway"].create_usage_plan(name="per-tenant")["id"]
        yield clients


def _onboarding(aws: dict[str, Any]) -> TenantOnboarding:
    return TenantOnboarding(
        resources=StackResources(VECTOR_BUCKET, API_KEYS_TABLE, aws["usage_plan_id"]),
        s3vectors=aws["s3vectors"],
        dynamodb=aws["dynamodb"],
        apigateway=aws["apigateway"],
    )


def _item(aws: dict[str, Any], key: str) -> dict[str, Any]:
    key_hash = hashlib.sha256(key.encode()).hexdigest()
    return aws["dynamodb"].get_item(TableName=API_KEYS_TABLE, Key={"key_hash": {"S": key_hash}})["Item"]


def test_onboarding_creates_the_tenant_index_and_a_key_stored_only_as_its_hash(aws: dict[str, Any]) -> None:
    # When a new tenant is onboarded
    result = _onboarding(aws).onboard("acme", SPEC, namespaces=["/projects/*"], scopes=["read", "write"])

    # Then its index exists with the deployment's shape
    assert result.index_created is True
    index = aws["s3vectors"].get_index(vectorBucketName=VECTOR_BUCKET, indexName="mem-acme")["index"]
    assert (index["dimension"], index["distanceMetric"], index["dataType"]) == (1024, "cosine", "float32")
    # And the API key item follows the contract; the plaintext key is nowhere in the table
    item = _item(aws, result.key.key)
    assert item["tenant"] == {"S": "acme"}
    assert item["namespaces"] == {"L": [{"S": "/projects/*"}]}
    assert sorted(v["S"] for v in item["scopes"]["L"]) == ["read", "write"]
    assert item["disabled"] == {"BOOL": False}
    assert item["key_id"] == {"S": result.key.key_id}
    scan = aws["dynamodb"].scan(TableName=API_KEYS_TABLE)["Items"]
    assert result.key.key not in json.dumps(scan)
    # And the tenant has a usage identifier in the stack's usage plan, recorded for the authorizer
    (plan_key,) = aws["apigateway"].get_usage_plan_keys(usagePlanId=aws["usage_plan_id"])["items"]
    assert plan_key["name"] == "agent-memory-acme"
    assert item["usage_key"] == {"S": plan_key["value"]}


def test_onboarding_again_keeps_the_index_and_the_usage_key_and_adds_a_new_api_key(
    aws: dict[str, Any],
) -> None:
    onboarding = _onboarding(aws)
    first = onboarding.onboard("acme", SPEC, namespaces=["*"], scopes=["read"])
    second = onboarding.onboard("acme", SPEC, namespaces=["*"], scopes=["admin"])
    assert second.index_created is False
    assert second.key.key != first.key.key and second.key.key_id != first.key.key_id
    assert len(aws["apigateway"].get_usage_plan_keys(usagePlanId=aws["usage_plan_id"])["items"]) == 1
    assert _item(aws, first.key.key)["usage_key"] == _item(aws, second.key.key)["usage_key"]


def test_an_existing_index_of_another_shape_is_refused(aws: dict[str, Any]) -> None:
    # Given an index created earlier with 512 dimensions
    aws["s3vectors"].create_index(
        vectorBucketName=VECTOR_BUCKET,
        indexName="mem-acme",
        dataType="float32",
        dimension=512,
        distanceMetric="cosine",
    )
    # When onboarding expects 1024, Then it stops before issuing a key, saying why
    with pytest.raises(Conflict, match="exists with dimension/metric/type"):
        _onboarding(aws).onboard("acme", SPEC, namespaces=["*"], scopes=["read"])
    assert aws["dynamodb"].scan(TableName=API_KEYS_TABLE)["Items"] == []


@pytest.mark.parametrize(
    ("tenant", "namespaces", "scopes"),
    [
        ("Acme!", ["*"], ["read"]),
        ("acme", ["projects"], ["read"]),
        ("acme", ["*"], ["root"]),
        ("acme", [], ["read"]),
    ],
)
def test_invalid_requests_are_refused_without_writing(
    aws: dict[str, Any], tenant: str, namespaces: list[str], scopes: list[str]
) -> None:
    with pytest.raises(ValidationFailed):
        _onboarding(aws).issue_api_key(tenant, namespaces, scopes)
    assert aws["dynamodb"].scan(TableName=API_KEYS_TABLE)["Items"] == []


def test_a_key_can_be_disabled_by_its_id(aws: dict[str, Any]) -> None:
    onboarding = _onboarding(aws)
    issued = onboarding.issue_api_key("acme", ["*"], ["read"])
    other = onboarding.issue_api_key("acme", ["*"], ["read"])
    assert onboarding.disable_api_key(issued.key_id) == 1
    assert _item(aws, issued.key)["disabled"] == {"BOOL": True}
    assert _item(aws, other.key)["disabled"] == {"BOOL": False}
    with pytest.raises(NotFound, match="no API key with id"):
        onboarding.disable_api_key("key_does_not_exist")


def test_stack_outputs_locate_the_resources(aws: dict[str, Any]) -> None:
    # Given a deployed stack exposing the outputs the memory stack defines
    template = {
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {
            "VectorBucketName": {"Value": VECTOR_BUCKET},
            "ApiKeysTableName": {"Value": API_KEYS_TABLE},
            "UsagePlanId": {"Value": aws["usage_plan_id"]},
        },
    }
    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName="AgentMemory", TemplateBody=json.dumps(template)
    )
    # When the onboarding is built for that stack, Then it works on those resources
    onboarding = TenantOnboarding.for_stack("AgentMemory", region=REGION)
    assert onboarding.resources == StackResources(VECTOR_BUCKET, API_KEYS_TABLE, aws["usage_plan_id"])
    # And a stack that is not the memory stack, or no stack at all, is explained
    with pytest.raises(NotFound, match="has no outputs"):
        StackResources.from_outputs("Other", {"ApiUrl": "x"})
    with pytest.raises(NotFound, match="cannot read stack 'Missing'"):
        read_stack_outputs(boto3.client("cloudformation", region_name=REGION), "Missing")


def _cdk_json(tmp_path: Path) -> Path:
    data = json.loads((ROOT / "cdk.json").read_text())
    data["context"]["agent-memory"]["embedding"]["dimensions"] = 512
    path = tmp_path / "cdk.json"
    path.write_text(json.dumps(data))
    return path


def test_command_onboards_a_tenant_with_the_deployments_index_shape(
    aws: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the onboard command pointed at a cdk.json with 512-dimension embeddings
    seen: list[tuple[str, str | None, str | None]] = []

    def factory(stack: str, region: str | None, profile: str | None) -> TenantOnboarding:
        seen.append((stack, region, profile))
        return _onboarding(aws)

    argv = [
        "--cdk-json",
        str(_cdk_json(tmp_path)),
        "--profile",
        "ops",
        "tenant",
        "globex",
        "--scopes",
        "read,write",
    ]
    # When it runs
    assert onboard.main(argv, factory=factory) == 0

    # Then it used the stack named in cdk.json, created a 512-dimension index and printed the key once
    assert seen == [("AgentMemory", None, "ops")]
    captured = capsys.readouterr()
    output = json.loads(captured.out)
    assert output["tenant"] == "globex" and output["index_created"] is True
    assert output["namespaces"] == ["*"] and output["scopes"] == ["read", "write"]
    assert output["api_key"].startswith("amk_")
    index = aws["s3vectors"].get_index(vectorBucketName=VECTOR_BUCKET, indexName="mem-globex")["index"]
    assert index["dimension"] == 512
    assert _item(aws, output["api_key"])["tenant"] == {"S": "globex"}
    # And it says how to add the tenant to cdk.json without CloudFormation recreating its index
    assert '"id": "globex"' in captured.err and '"create_index": false' in captured.err


def test_command_reports_refusals_on_stderr_with_exit_code_2(
    aws: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--cdk-json", str(_cdk_json(tmp_path)), "api-key", "Not_A_Tenant"]
    assert onboard.main(argv, factory=lambda *_: _onboarding(aws)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "error: invalid tenant id 'Not_A_Tenant'" in captured.err

    bad_config = tmp_path / "bad.json"
    bad_config.write_text(json.dumps({"context": {"agent-memory": {"tenants": [{"id": "X"}]}}}))
    assert (
        onboard.main(["--cdk-json", str(bad_config), "disable-key", "k"], factory=lambda *_: _onboarding(aws))
        == 2
    )
    assert "cannot use the deployment config" in capsys.readouterr().err


def test_aws_failures_become_one_actionable_message(aws: dict[str, Any]) -> None:
    # Given resources that point at a table that does not exist
    onboarding = TenantOnboarding(
        resources=StackResources(VECTOR_BUCKET, "no-such-table"),
        s3vectors=aws["s3vectors"],
        dynamodb=aws["dynamodb"],
    )
    # When a call fails on the AWS side, Then the operation and AWS's reason are named, without a traceback
    with pytest.raises(AwsCallFailed, match="Scan failed: ResourceNotFoundException"):
        onboarding.disable_api_key("key_0123")


def test_command_without_a_region_says_how_to_give_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    assert onboard.main(["--cdk-json", str(_cdk_json(tmp_path)), "disable-key", "key_0123"]) == 2
    assert "You must specify a region. Check the credentials (--profile) and the region (--region)." in (
        capsys.readouterr().err
    )


def test_offboarding_disables_every_key_of_the_tenant_and_deletes_its_indexes(
    aws: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given two tenants whose names share a prefix, one with a migration's second index and archives
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket="archive", CreateBucketConfiguration={"LocationConstraint": REGION})
    for key in ("acme/mig_1/vectors-00000.jsonl", "acme/mig_1/manifest.json", "acme-two/mig_2/manifest.json"):
        s3.put_object(Bucket="archive", Key=key, Body=b"{}")
    onboarding = TenantOnboarding(
        resources=StackResources(
            VECTOR_BUCKET, API_KEYS_TABLE, aws["usage_plan_id"], archive_bucket="archive"
        ),
        s3vectors=aws["s3vectors"],
        dynamodb=aws["dynamodb"],
        apigateway=aws["apigateway"],
        s3=s3,
    )
    first = onboarding.onboard("acme", SPEC, namespaces=["*"], scopes=["read", "admin", "purge"])
    second = onboarding.issue_api_key("acme", ["/x"], ["read"])
    other = onboarding.onboard("acme-two", SPEC, namespaces=["*"], scopes=["read"])
    aws["s3vectors"].create_index(
        vectorBucketName=VECTOR_BUCKET,
        indexName="mem-acme.e2",
        dataType="float32",
        dimension=1024,
        distanceMetric="cosine",
    )
    argv = ["--cdk-json", str(_cdk_json(tmp_path)), "offboard", "acme", "--purge-plan", "purge_" + "a" * 32]
    # When the operator offboards acme after its purge
    assert onboard.main(argv, factory=lambda *_: onboarding) == 0
    output = json.loads(capsys.readouterr().out)
    # Then acme's keys are disabled and its indexes gone; acme-two keeps its key and index
    assert output["disabled_keys"] == 2 and sorted(output["deleted_indexes"]) == ["mem-acme", "mem-acme.e2"]
    assert output["deleted_archives"] == 2
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="archive")["Contents"]] == [
        "acme-two/mig_2/manifest.json"
    ]
    assert _item(aws, first.key.key)["disabled"] == {"BOOL": True}
    assert _item(aws, second.key)["disabled"] == {"BOOL": True}
    assert _item(aws, other.key.key)["disabled"] == {"BOOL": False}
    names = [i["indexName"] for i in aws["s3vectors"].list_indexes(vectorBucketName=VECTOR_BUCKET)["indexes"]]
    assert names == ["mem-acme-two"]
    # And again: nothing left to do
    assert (
        onboarding.offboard("acme").disabled_keys == 0 and onboarding.offboard("acme").deleted_indexes == ()
    )
    with pytest.raises(SystemExit) as refused:  # the plan id is checked before anything is called
        onboard.main(["--cdk-json", str(_cdk_json(tmp_path)), "offboard", "acme", "--purge-plan", "x"])
    assert refused.value.code == 2


@pytest.mark.iam_contract_exempt(
    reason="the test seeds and reads records with the tenant role's adapter in this suite's region (eu-central-1), "
    "not the template's; the tenant role's tree-index calls are judged in tests/aws/test_dynamodb_tree.py"
)
def test_onboarding_marks_a_new_tenants_tree_index_and_the_command_backfills_an_older_one(
    aws: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent_memory.adapters.aws.dynamodb_store import DynamoRecordStore
    from agent_memory.domain.ports import RecordQuery, RecordWrite
    from tests.aws.support import TABLE, create_memory_table
    from tests.contract.record_store_contract import make_record

    create_memory_table(aws["dynamodb"])
    onboarding = TenantOnboarding(
        resources=StackResources(VECTOR_BUCKET, API_KEYS_TABLE, aws["usage_plan_id"], memory_table=TABLE),
        s3vectors=aws["s3vectors"],
        dynamodb=aws["dynamodb"],
        apigateway=aws["apigateway"],
    )
    marker = {"pk": {"S": "acme#META"}, "sk": {"S": "TREE_INDEX"}}

    onboarding.onboard("acme", SPEC, namespaces=["*"], scopes=["read"])

    stored = aws["dynamodb"].get_item(TableName=TABLE, Key=marker)["Item"]
    assert stored["state"] == {"S": "complete"}

    # An older tenant: records without the tree key, as written before the index existed
    store = DynamoRecordStore(TABLE, lambda tenant: aws["dynamodb"])
    records = [make_record(f"fact {i}", tenant="older", namespace=f"/me/u-{i}") for i in range(3)]
    store.commit([RecordWrite(r, None) for r in records], [])
    for r in records:
        aws["dynamodb"].update_item(
            TableName=TABLE,
            Key={"pk": {"S": f"older#REC#{r.id}"}, "sk": {"S": "REC"}},
            UpdateExpression="REMOVE gsi3sk",
        )
    first = onboarding.tree_index("older", max_records=2)
    argv = ["--cdk-json", str(_cdk_json(tmp_path)), "tree-index", "older"]
    assert onboard.main(argv, factory=lambda *_: onboarding) == 0
    rest = json.loads(capsys.readouterr().out)

    assert (first.updated, first.complete) == (2, False)
    assert rest == {"tenant": "older", "read": 1, "updated": 1, "complete": True}
    listed = DynamoRecordStore(TABLE, lambda tenant: aws["dynamodb"]).list(
        "older", RecordQuery(namespaces_below=("/me",))
    )
    assert [r.namespace for r in listed.items] == ["/me/u-0", "/me/u-1", "/me/u-2"]
