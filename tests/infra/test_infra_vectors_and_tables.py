"""TenantVectors (vector bucket, per-tenant indexes, tenant role) and MemoryTables."""

from __future__ import annotations

from typing import Any

from infra_support import (
    TEST_DIMENSIONS,
    TEST_METRIC,
    TEST_TENANTS,
    Synthesized,
    actions_of,
    as_list,
    policy_statements,
    render,
)

TENANT_TAG = "${aws:PrincipalTag/tenant}"


def _role_of(synthesized: Synthesized, function: str) -> str:
    props = synthesized.resources[synthesized.logical_id("AWS::Lambda::Function", function)]["Properties"]
    return str(props["Role"]["Fn::GetAtt"][0])


def _tenant_role(synthesized: Synthesized) -> str:
    return synthesized.logical_id("AWS::IAM::Role", "TenantAccessRole")


def _statement(statements: list[dict[str, Any]], sid: str) -> dict[str, Any]:
    (found,) = [s for s in statements if s.get("Sid") == sid]
    return found


def test_one_index_per_configured_tenant_with_dimension_and_metric_from_config(
    synthesized: Synthesized,
) -> None:
    # Given the indexes and the vector bucket
    indexes = [i["Properties"] for i in synthesized.of_type("AWS::S3Vectors::Index").values()]
    (bucket_id,) = synthesized.of_type("AWS::S3Vectors::VectorBucket")

    # Then there is exactly one `mem-<tenant>` index per configured tenant, in this stack's bucket,
    # except for a tenant whose index the onboarding tool created (CloudFormation would collide with it)
    expected = sorted(f"mem-{t['id']}" for t in TEST_TENANTS if t.get("create_index", True))
    assert sorted(i["IndexName"] for i in indexes) == expected
    assert "mem-initech" not in expected
    for index in indexes:
        assert index["VectorBucketArn"] == {"Fn::GetAtt": [bucket_id, "VectorBucketArn"]}
        # And its shape is the configured one (512 is not the default)
        assert index["Dimension"] == TEST_DIMENSIONS
        assert index["DistanceMetric"] == TEST_METRIC
        assert index["DataType"] == "float32"
        assert index["MetadataConfiguration"] == {"NonFilterableMetadataKeys": ["text"]}


def test_vector_bucket_is_kms_encrypted_and_the_indexing_service_may_use_the_key(
    synthesized: Synthesized,
) -> None:
    (bucket,) = synthesized.of_type("AWS::S3Vectors::VectorBucket").values()
    key_id = synthesized.logical_id("AWS::KMS::Key", "DataKey")
    encryption = render(bucket["Properties"]["EncryptionConfiguration"])
    assert encryption == {"SseType": "aws:kms", "KmsKeyArn": f"<{key_id}.Arn>"}

    key_policy = [render(s) for s in synthesized.resources[key_id]["Properties"]["KeyPolicy"]["Statement"]]
    indexing = [s for s in key_policy if s["Principal"] == {"Service": "indexing.s3vectors.amazonaws.com"}]
    assert len(indexing) == 1
    assert indexing[0]["Action"] == "kms:Decrypt"
    assert indexing[0]["Condition"]["StringEquals"] == {"aws:SourceAccount": "<AWS::AccountId>"}
    assert indexing[0]["Condition"]["ArnLike"]["aws:SourceArn"].endswith(":bucket/*")


def test_tenant_role_is_assumable_only_by_request_functions_with_a_tenant_session_tag(
    synthesized: Synthesized,
) -> None:
    # Given the tenant role's trust policy
    trust = synthesized.resources[_tenant_role(synthesized)]["Properties"]["AssumeRolePolicyDocument"]
    statements = [render(s) for s in trust["Statement"]]

    # Then only the roles of the functions that work on tenant data are trusted, never the authorizer
    principals = {p for s in statements for p in as_list(s["Principal"]["AWS"])}
    assert principals == {
        f"<{_role_of(synthesized, 'ApiFunction')}.Arn>",
        f"<{_role_of(synthesized, 'JobWorkerFunction')}.Arn>",  # the jobs the API accepted with 202
        f"<{_role_of(synthesized, 'DecayJobFunction')}.Arn>",
        f"<{_role_of(synthesized, 'ChatFunction')}.Arn>",
        f"<{_role_of(synthesized, 'DreamingFunction')}.Arn>",
        f"<{_role_of(synthesized, 'MigrationFunction')}.Arn>",  # the embedding backfill's pages
    }
    for statement in statements:
        # And every assumption must tag the session with `tenant` and with nothing else
        assert sorted(as_list(statement["Action"])) == ["sts:AssumeRole", "sts:TagSession"]
        assert statement["Condition"]["Null"] == {"aws:RequestTag/tenant": "false"}
        assert statement["Condition"]["ForAllValues:StringEquals"] == {"aws:TagKeys": ["tenant"]}


def test_tenant_role_reaches_only_the_callers_own_index(synthesized: Synthesized) -> None:
    statements = policy_statements(synthesized, _tenant_role(synthesized))
    (bucket_id,) = synthesized.of_type("AWS::S3Vectors::VectorBucket")
    bucket_arn = f"<{bucket_id}.VectorBucketArn>"

    vectors = _statement(statements, "OwnTenantIndexes")
    # only the tenant's `mem-` index: hybrid recall needs no keyword companion index (`kw-`) any more
    assert as_list(vectors["Resource"]) == [f"{bucket_arn}/index/mem-{TENANT_TAG}"]
    assert not [r for s in statements for r in as_list(s["Resource"]) if "/index/kw-" in str(r)]
    assert {"s3vectors:QueryVectors", "s3vectors:GetVectors", "s3vectors:PutVectors"} <= set(
        vectors["Action"]
    )
    # And no statement anywhere in the role grants S3 Vectors on another resource (bucket-wide or `*`)
    for statement in statements:
        if any(a.startswith("s3vectors:") for a in as_list(statement["Action"])):
            assert all(TENANT_TAG in r for r in as_list(statement["Resource"]))


def test_tenant_role_reaches_only_items_whose_partition_key_starts_with_the_tenant(
    synthesized: Synthesized,
) -> None:
    statements = policy_statements(synthesized, _tenant_role(synthesized))
    memory_table = synthesized.logical_id("AWS::DynamoDB::Table", "TablesMemory")

    items = _statement(statements, "OwnTenantItems")
    assert items["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{TENANT_TAG}#*"]}}
    assert sorted(as_list(items["Resource"])) == sorted(
        [f"<{memory_table}.Arn>", f"<{memory_table}.Arn>/index/*"]
    )
    # Scan and PartiQL carry no partition key, so `ForAllValues` would let them through: never granted
    granted = actions_of(statements)
    assert not {a for a in granted if a.startswith("dynamodb:") and ("Scan" in a or "PartiQL" in a)}
    assert all(
        s.get("Condition") for s in statements if any(a.startswith("dynamodb:") for a in as_list(s["Action"]))
    )


def test_tenant_role_reaches_tenant_data_only_and_never_a_model(synthesized: Synthesized) -> None:
    # Bedrock is called with each function's own role (wiring.build_aws builds its clients without tenant
    # credentials), so a tenant session has no use for it
    statements = policy_statements(synthesized, _tenant_role(synthesized))
    assert not {a for a in actions_of(statements) if a.startswith("bedrock:")}
    # s3: the embedding migration's archive, under the session's own tenant prefix (MigrationWorkflow)
    assert {a.split(":")[0] for a in actions_of(statements)} == {"s3vectors", "dynamodb", "kms", "s3"}


def test_request_functions_may_assume_the_tenant_role_and_the_authorizer_may_not(
    synthesized: Synthesized,
) -> None:
    tenant_role = f"<{_tenant_role(synthesized)}.Arn>"
    for function in ("ApiFunction", "DecayJobFunction", "DreamingFunction"):
        statements = policy_statements(synthesized, _role_of(synthesized, function))
        assume = [s for s in statements if "sts:AssumeRole" in as_list(s["Action"])]
        assert len(assume) == 1 and assume[0]["Resource"] == tenant_role
        assert "sts:TagSession" in assume[0]["Action"]
        assert assume[0]["Condition"] == {"Null": {"aws:RequestTag/tenant": "false"}}
    authorizer = policy_statements(synthesized, _role_of(synthesized, "AuthorizerFunction"))
    assert "sts:AssumeRole" not in actions_of(authorizer)


def test_function_roles_reach_tenant_data_only_through_the_tenant_role(synthesized: Synthesized) -> None:
    memory_table = synthesized.logical_id("AWS::DynamoDB::Table", "TablesMemory")
    for function in ("ApiFunction", "AuthorizerFunction", "DecayJobFunction", "DreamingFunction"):
        statements = policy_statements(synthesized, _role_of(synthesized, function))
        resources = {r for s in statements for r in as_list(s["Resource"])}
        assert not any(memory_table in r for r in resources), function
        data_actions = {a for a in actions_of(statements) if a.startswith("s3vectors:")}
        assert data_actions == set(), function


def test_authorizer_only_reads_api_keys_by_hash(synthesized: Synthesized) -> None:
    statements = policy_statements(synthesized, _role_of(synthesized, "AuthorizerFunction"))
    api_keys = synthesized.logical_id("AWS::DynamoDB::Table", "TablesApiKeys")
    dynamo = [s for s in statements if any(a.startswith("dynamodb:") for a in as_list(s["Action"]))]
    assert dynamo == [{"Action": "dynamodb:GetItem", "Effect": "Allow", "Resource": f"<{api_keys}.Arn>"}]


def test_tables_are_on_demand_encrypted_with_the_key_and_point_in_time_recoverable(
    synthesized: Synthesized,
) -> None:
    key_id = synthesized.logical_id("AWS::KMS::Key", "DataKey")
    tables = synthesized.of_type("AWS::DynamoDB::Table")
    assert len(tables) == 3
    for table in tables.values():
        props = table["Properties"]
        assert props["BillingMode"] == "PAY_PER_REQUEST"
        # The window a purged item stays restorable from backups (docs/security.md, erasure).
        assert props["PointInTimeRecoverySpecification"] == {
            "PointInTimeRecoveryEnabled": True,
            "RecoveryPeriodInDays": 7,
        }
        assert render(props["SSESpecification"]) == {
            "SSEEnabled": True,
            "SSEType": "KMS",
            "KMSMasterKeyId": f"<{key_id}.Arn>",
        }
        assert table["DeletionPolicy"] == "Retain"


def test_table_keys_and_ttl_follow_the_shared_contract(synthesized: Synthesized) -> None:
    def props(fragment: str) -> dict[str, Any]:
        return synthesized.resources[synthesized.logical_id("AWS::DynamoDB::Table", fragment)]["Properties"]

    memory = props("TablesMemory")
    assert memory["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    assert memory["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    gsis = {g["IndexName"]: g for g in memory["GlobalSecondaryIndexes"]}
    assert set(gsis) == {"gsi1", "gsi2", "gsi3"}
    partitions = {"gsi1": "gsi1pk", "gsi2": "gsi2pk", "gsi3": "gsi2pk"}  # gsi3: the tree index (records only)
    for name, gsi in gsis.items():
        assert gsi["KeySchema"] == [
            {"AttributeName": partitions[name], "KeyType": "HASH"},
            {"AttributeName": f"{name}sk", "KeyType": "RANGE"},
        ]
        assert gsi["Projection"] == {"ProjectionType": "ALL"}

    idempotency = props("TablesIdempotency")
    assert idempotency["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    assert idempotency["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}

    api_keys = props("TablesApiKeys")
    assert api_keys["KeySchema"] == [{"AttributeName": "key_hash", "KeyType": "HASH"}]
