"""The open-session count is per tenant even when another tenant plants rows under its GSI key (issue 30,
defect 5).

The tenant role's `dynamodb:LeadingKeys` condition checks only the base table's partition key, so tenant B
may write a session item under its own `pk` (`globex#SES#...`) whose `gsi1pk` is tenant A's open-session
listing (`acme#SES`). A count of that listing with `Select: COUNT` would include B's rows: B could push A to
its open-session cap and refuse every new session of A (a cross-tenant denial of service). The count must
only include items whose base `pk` is A's own.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from agent_memory.adapters.aws.session_store import DynamoSessionStore
from tests.aws.support import TABLE
from tests.contract.session_store_contract import T0, TENANT_A, TENANT_B, make_session


def _plant_open_session(client: Any, number: int) -> None:
    """A session item under tenant B's own partition key (LeadingKeys admits it) listed under A's key."""
    expires = T0 + timedelta(days=2)
    client.put_item(
        TableName=TABLE,
        Item={
            "pk": {"S": f"{TENANT_B}#SES#planted{number:04d}"},
            "sk": {"S": "SES"},
            "kind": {"S": "session"},
            "status": {"S": "open"},
            "gsi1pk": {"S": f"{TENANT_A}#SES"},
            "gsi1sk": {"S": f"SES#{expires.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}#planted{number:04d}"},
        },
    )


def test_given_rows_planted_under_tenant_a_listing_when_counting_a_then_only_a_own_sessions_count(dynamodb):
    # Given tenant A has one open session and tenant B planted five rows under A's open-session listing
    store = DynamoSessionStore(TABLE, lambda tenant: dynamodb)
    store.create(make_session(TENANT_A, at=T0))
    for number in range(5):
        _plant_open_session(dynamodb, number)

    # When A's open sessions are counted against a cap of 3
    count = store.count_open(TENANT_A, T0 + timedelta(minutes=1), limit=3)

    # Then B's rows are not A's sessions: A has one, far below its cap
    assert count == 1


def test_given_tenant_b_own_open_session_then_b_count_ignores_its_rows_planted_for_a(dynamodb):
    store = DynamoSessionStore(TABLE, lambda tenant: dynamodb)
    store.create(make_session(TENANT_B, at=T0))
    _plant_open_session(dynamodb, 0)

    assert store.count_open(TENANT_B, T0 + timedelta(minutes=1), limit=10) == 1
    assert store.count_open(TENANT_A, T0 + timedelta(minutes=1), limit=10) == 0
