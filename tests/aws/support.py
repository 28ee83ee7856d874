"""Shared helpers of the AWS adapter tests (constants, the contract's MemoryTable, a call counter)."""

from __future__ import annotations

from typing import Any

REGION = "us-east-1"
TABLE = "MemoryTable"
API_KEYS_TABLE = "ApiKeysTable"
VECTOR_BUCKET = "agent-memory-vectors"
RERANK_MODEL = "cohere.rerank-v3-5:0"
"""The Bedrock rerank model the infra tests enable (tests/infra/infra_support.TEST_RERANK); served in REGION."""


def lambda_environment(patch: Any, **extra: str) -> None:
    """Set, on `patch` (a pytest MonkeyPatch), what a function of the stack sees in moto: fake credentials,
    the region, Powertools' namespace without tracing, and `extra` variables."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "POWERTOOLS_METRICS_NAMESPACE": "AgentMemoryTest",
        "POWERTOOLS_TRACE_DISABLED": "true",
        **extra,
    }.items():
        patch.setenv(name, value)


def create_memory_table(client: Any, name: str = TABLE) -> None:
    """The MemoryTable exactly as the shared AWS contract defines it."""
    client.create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": attr, "AttributeType": "S"}
            for attr in ("pk", "sk", "gsi1pk", "gsi1sk", "gsi2pk", "gsi2sk", "gsi3sk")
        ],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        GlobalSecondaryIndexes=[
            {
                "IndexName": index,
                "KeySchema": [
                    {"AttributeName": partition, "KeyType": "HASH"},
                    {"AttributeName": f"{index}sk", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
            for index, partition in (("gsi1", "gsi1pk"), ("gsi2", "gsi2pk"), ("gsi3", "gsi2pk"))
        ],
    )
    client.update_time_to_live(
        TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": "expires_at"}
    )


class CallCounter:
    """Counts API calls per operation through botocore's event hooks (no request is altered)."""

    def __init__(self, client: Any) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        client.meta.events.register("provide-client-params.*.*", self._record)

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.calls.append((model.name, params))

    def count(self, operation: str) -> int:
        return sum(1 for name, _ in self.calls if name == operation)

    def params(self, operation: str) -> list[dict[str, Any]]:
        return [params for name, params in self.calls if name == operation]


def serialize_moto_writes(monkeypatch: Any) -> None:
    """DynamoDB evaluates a write's condition and applies it atomically; moto's in-memory backend does not
    (two threads can both pass the same condition). One lock around moto's write paths stands in for the
    service's atomicity, so a race tests the adapter's conditional writes, not moto's thread safety."""
    import threading

    from moto.dynamodb.models import DynamoDBBackend

    lock = threading.RLock()
    for name in ("put_item", "update_item", "delete_item", "transact_write_items"):
        original = getattr(DynamoDBBackend, name)

        def serialized(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            with lock:
                return _original(self, *args, **kwargs)

        monkeypatch.setattr(DynamoDBBackend, name, serialized)
