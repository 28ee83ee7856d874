"""The purge's AWS stores on moto (adapters/aws/erasure.py and the stores it reaches): import state in the
memory table (the `ImportRows` contract of tests/unit/test_erasure_imports.py), embedding-migration archives
in S3 (parts and manifest rewritten; a part in Glacier reported unreachable)."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import boto3
import pytest

from agent_memory.adapters.aws.credentials import ClientFactory, TenantCredentials
from agent_memory.adapters.aws.import_store import DynamoImportStore
from agent_memory.adapters.aws.migration import S3VectorsIndexCatalog
from agent_memory.adapters.aws.s3vectors_index import S3VectorsIndex
from agent_memory.adapters.local.embedders import HashingEmbedder
from agent_memory.domain.erasure.model import PurgeKind, PurgeState, PurgeTarget
from agent_memory.domain.memory.service import RememberInput
from agent_memory.settings.service import Settings
from agent_memory.wiring.aws import build_aws
from agent_memory.wiring.parts import AwsClients
from tests.aws.support import REGION, TABLE, VECTOR_BUCKET
from tests.unit.test_erasure_imports import check_import_rows


def test_the_dynamodb_import_store_passes_the_purge_contract(dynamodb: Any) -> None:
    check_import_rows(DynamoImportStore(TABLE, lambda tenant: dynamodb))


# --------------------------------------------------------------------------- embedding-migration archives

ARCHIVE_BUCKET = "agent-memory-migration-archive"
ROLE = "arn:aws:iam::123456789012:role/TenantAccessRole"


def _runtime(files_root: Any, **settings: Any) -> Any:
    """The AWS runtime's services on moto (tenant credentials through moto's STS), hashing embeddings."""
    configured = Settings(
        runtime="aws",
        table=TABLE,
        vector_bucket=VECTOR_BUCKET,
        tenant_role_arn=ROLE,
        files_root=files_root,
        region=REGION,
        **settings,
    )
    sts = boto3.client("sts", region_name=REGION)
    return build_aws(configured, AwsClients(sts=sts), embedder=HashingEmbedder())


@pytest.fixture
def archived(dynamodb: Any, s3vectors: Any, tmp_path) -> Any:
    """An AWS runtime on moto whose tenant `acme` has an archive of its index (as a migration's archive step
    exports it: S3VectorsIndexCatalog.export), with three memories in it."""
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=ARCHIVE_BUCKET)
    services = _runtime(tmp_path, migration_archive_bucket=ARCHIVE_BUCKET)
    memory = services.memory
    ids = [
        memory.remember("acme", RememberInput(text, namespace), actor="t").record.id
        for text, namespace in (
            (SECRET_TEXT, "/ops"),
            ("The ferry leaves at noon", "/ops"),
            ("Standups start at nine sharp", "/team"),
        )
    ]
    # The tenant's original index, as the migration's archive step reads it (the service's own index routes
    # through the migration, wired by the archive bucket setting).
    index = S3VectorsIndex(VECTOR_BUCKET, lambda tenant: boto3.client("s3vectors", region_name=REGION))
    catalog = S3VectorsIndexCatalog(index, lambda suffix: index, lambda tenant: s3, ARCHIVE_BUCKET)
    receipt = catalog.export("acme", "", "mig_1")
    assert receipt.vectors == receipt.verified_count >= 3
    return services, s3, ids, catalog


SECRET_TEXT = "Harbour gate code is 4417 for the night shift"


def _archive_lines(s3: Any, tenant: str = "acme") -> dict[str, list[str]]:
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=ARCHIVE_BUCKET, Prefix=f"{tenant}/")["Contents"]]
    return {
        key: s3.get_object(Bucket=ARCHIVE_BUCKET, Key=key)["Body"].read().decode().splitlines()
        for key in keys
        if key.endswith(".jsonl")
    }


def test_a_memory_purge_rewrites_the_archive_parts_and_manifest_on_aws(archived: Any) -> None:
    services, s3, ids, _catalog = archived
    erasure = services.erasure
    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.MEMORY, record_id=ids[0]), actor="key:admin")
    finding = next(f for f in plan.plan if f.store == "archives")
    assert finding.items == 1 and finding.unreachable == []
    done = erasure.execute("acme", plan.id, reason="erasure request", actor="key:admin")
    assert done.state is PurgeState.COMPLETED and done.verification is not None
    assert done.verification.remaining == 0 and done.verification.unreachable == 0

    lines = [line for part in _archive_lines(s3).values() for line in part]
    assert ids[0] not in "\n".join(lines) and "4417" not in "\n".join(lines)
    assert {json.loads(line)["key"] for line in lines} >= set(ids[1:])  # the others are kept
    manifest = json.loads(s3.get_object(Bucket=ARCHIVE_BUCKET, Key="acme/mig_1/manifest.json")["Body"].read())
    assert manifest["purges"] == [plan.id] and manifest["vectors"] == len(lines)
    # The archive still reads back whole: every part's SHA-256 and line count match the manifest (as the
    # export's read-back, S3VectorsIndexCatalog._verify, checks them).
    for part in manifest["parts"]:
        body = s3.get_object(Bucket=ARCHIVE_BUCKET, Key=part["key"])["Body"].read()
        assert base64.b64encode(hashlib.sha256(body).digest()).decode() == part["sha256"]
        assert len(body.decode().splitlines()) == part["vectors"]
    assert sum(part["vectors"] for part in manifest["parts"]) == manifest["vectors"]
    for part in manifest["parts"]:
        tags = s3.get_object_tagging(Bucket=ARCHIVE_BUCKET, Key=part["key"])["TagSet"]
        assert {"Key": "agent-memory-archive", "Value": "vectors"} in tags  # back to Glacier by the rule


def test_an_archive_part_in_glacier_is_reported_unreachable_and_keeps_the_purge_incomplete(
    archived: Any,
) -> None:
    services, s3, ids, _catalog = archived
    (part,) = _archive_lines(s3)
    # What the lifecycle rule does: the part moves to S3 Glacier (GetObject then answers InvalidObjectState).
    s3.copy_object(
        Bucket=ARCHIVE_BUCKET,
        Key=part,
        CopySource={"Bucket": ARCHIVE_BUCKET, "Key": part},
        StorageClass="GLACIER",
    )
    erasure = services.erasure
    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.MEMORY, record_id=ids[0]), actor="key:admin")
    finding = next(f for f in plan.plan if f.store == "archives")
    assert finding.items == 0 and len(finding.unreachable) == 1 and part in finding.unreachable[0]
    done = erasure.execute("acme", plan.id, reason="erasure request", actor="key:admin")
    assert done.state is PurgeState.INCOMPLETE and done.verification is not None
    assert done.verification.remaining == 0 and done.verification.unreachable == 1
    assert done.needles  # kept until the part is restored and the plan executed again


# --------------------------------------------------------------------------- sessions, open or ended


@pytest.fixture
def services(dynamodb: Any, s3vectors: Any, tmp_path) -> Any:
    return _runtime(tmp_path)


def test_an_ended_sessions_snapshot_is_found_and_invalidated_by_a_purge(services: Any, dynamodb: Any) -> None:
    subject = "Marit Quell"
    services.files.add("acme", "/people", "memory", f"{subject} owns the tide tables")
    ended = services.sessions.start("acme", "/people", actor="t").session
    services.sessions.end("acme", ended.id)
    still_open = services.sessions.start("acme", "/people", actor="t").session
    unrelated = services.sessions.start("acme", "/other", actor="t").session
    services.sessions.end("acme", unrelated.id)
    assert subject in services.sessions.get("acme", ended.id).snapshot
    # Ending moved the session to the tenant's ended listing (GSI1), not out of every listing.
    item = dynamodb.get_item(TableName=TABLE, Key={"pk": {"S": f"acme#SES#{ended.id}"}, "sk": {"S": "SES"}})[
        "Item"
    ]
    assert item["gsi1pk"]["S"] == "acme#SESEND" and item["status"]["S"] == "ended"
    assert services.sessions._store.count_open("acme", services.sessions.now(), limit=10) == 1

    erasure = services.erasure
    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.SUBJECT, subject=subject), actor="key:admin")
    assert sorted(next(f for f in plan.plan if f.store == "sessions").refs) == sorted(
        [ended.id, still_open.id]
    )
    done = erasure.execute("acme", plan.id, reason="erasure request", actor="key:admin")
    assert done.state is PurgeState.COMPLETED and done.verification.remaining == 0
    for session_id in (ended.id, still_open.id):
        after = services.sessions.get("acme", session_id)
        assert (
            after.status.value == "purged" and after.snapshot == "" and subject not in after.model_dump_json()
        )
    kept = services.sessions.get("acme", unrelated.id)
    assert kept.status.value == "ended" and kept.snapshot == unrelated.snapshot


# --------------------------------------------------------------------------- the embedding cache, by key


class Recording:
    """Passes calls to the real client and records them; the first BatchGetItem answers half unprocessed."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.throttle = True

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._client, name)

        def call(**kwargs: Any) -> Any:
            self.calls.append((name, kwargs))
            if name == "batch_get_item" and self.throttle:
                self.throttle = False
                keys = kwargs["RequestItems"][TABLE]["Keys"]
                half = {**kwargs["RequestItems"][TABLE], "Keys": keys[: len(keys) // 2]}
                answered = real(RequestItems={TABLE: half})
                rest = {**kwargs["RequestItems"][TABLE], "Keys": keys[len(keys) // 2 :]}
                return {**answered, "UnprocessedKeys": {TABLE: rest}}
            return real(**kwargs)

        return call


def test_the_embedding_cache_is_read_by_key_not_by_partition(dynamodb: Any) -> None:
    from agent_memory.adapters.aws.erasure import DynamoEmbeddingCacheEraser
    from agent_memory.domain.erasure.model import EraseScope
    from agent_memory.domain.migration.model import text_hash

    purged = [f"purged memory number {n}" for n in range(130)]  # above one BatchGetItem's 100 keys
    unrelated = [f"unrelated cached text {n}" for n in range(400)]
    for fingerprint in ("fp1", "fp2"):
        for start in range(0, len(purged + unrelated), 25):
            batch = (purged + unrelated)[start : start + 25]
            dynamodb.batch_write_item(
                RequestItems={
                    TABLE: [
                        {
                            "PutRequest": {
                                "Item": {
                                    "pk": {"S": f"acme#EMB#{fingerprint}"},
                                    "sk": {"S": text_hash(text)},
                                    "vector": {"B": b"\0" * 16},
                                }
                            }
                        }
                        for text in batch
                    ]
                }
            )
    # On tenant credentials, as every runtime builds it (the IAM contract judges these calls as the tenant's).
    credentials = TenantCredentials(boto3.client("sts", region_name=REGION), ROLE, region_name=REGION)
    recording = Recording(ClientFactory("dynamodb", credentials, REGION)("acme"))
    eraser = DynamoEmbeddingCacheEraser(TABLE, lambda tenant: recording, lambda tenant: ["fp1", "fp2"])
    scope = EraseScope("acme", PurgeKind.MEMORY, ("r1",), tuple(purged[:120]), ("/n",))
    found = eraser.find(scope)
    assert found.items == 2 * 120
    assert {name for name, _ in recording.calls} == {"batch_get_item"}  # no Query of the partition
    for _, request in recording.calls:
        keys_and = request["RequestItems"][TABLE]
        assert len(keys_and["Keys"]) <= 100 and keys_and["ProjectionExpression"] == "pk, sk"
    asked = sum(len(request["RequestItems"][TABLE]["Keys"]) for _, request in recording.calls)
    assert (
        asked == 2 * 120 + 50
    )  # every purged hash in both fingerprints; the first call's unprocessed half again
    assert eraser.erase(scope, actor="a", reason="r", plan_id="p") == 240
    assert eraser.find(scope).items == 0
    left = dynamodb.query(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "acme#EMB#fp1"}},
        Select="COUNT",
    )["Count"]
    assert left == len(purged) - 120 + len(unrelated)  # only the matching keys went
