"""`SessionStore` in the MemoryTable: a session and its turns share one partition.

| item    | pk                    | sk              | other attributes                                        |
|---------|-----------------------|-----------------|---------------------------------------------------------|
| session | `<t>#SES#<id>`        | `SES`           | `doc` (JSON, immutable), `status`, `ended_at`, `expires_at`, `usage_*` totals; `gsi1pk` = `<t>#SES` while open, `<t>#SESEND` once ended; `gsi1sk` = `SES#<expires>#<id>` |
| turn    | `<t>#SES#<id>`        | `TURN#<000000>` | `doc` (JSON), `expires_at`                              |

- The partition key starts with `<t>#`, so the tenant role's `dynamodb:LeadingKeys` condition confines every
  call to the caller's tenant in IAM; another tenant's session id is simply not found.
- `expires_at` (epoch seconds) is the table's TTL attribute: DynamoDB deletes a session and its turns some time
  after it expires. Until then the item may still be read; the service checks `expires_at` itself.
- `status`/`ended_at` live beside the immutable `doc` and are overlaid on read, so ending a session never
  rewrites the snapshot bytes.
- A turn is written with one `TransactWriteItems`: an update of the session, conditioned on it being open and
  unexpired, that ADDs the turn's token figures and cost to the session's `usage_*` totals (atomic counters,
  overlaid on read as `SessionRecord.usage`), and a put that the turn index is free. A turn therefore exists whole or not at all, and never after its
  session ended; two concurrent turns of one session cannot both be saved at the same index.
- Reads are strongly consistent: a Lambda instance that did not serve the previous turn still loads it.
- Open sessions are counted per tenant (the cap on open sessions) with one Query of `gsi1` on `<t>#SES` over
  the sessions that expire after now: a session is under that key from its start until it is ended (ending
  moves it to `<t>#SESEND`) or expires (the key condition leaves it out); a filter on the base `pk` drops
  rows another tenant planted under the listing's key (LeadingKeys checks only `pk`). The index is eventually consistent,
  so concurrent starts may pass the cap by a few.
- Every session of a tenant, open or ended, is therefore listable with the tenant role (`gsi1` on `<t>#SES`
  and `<t>#SESEND`, no Scan) until its TTL deletes it: the purge (adapters/aws/erasure.py) finds ended
  sessions' snapshots and turns that way. A purged session leaves both listings (it holds no content).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from ...domain.errors import ConcurrentModification, TooLarge
from ...domain.sessions.ports import (
    SessionClosed,
    SessionRecord,
    SessionStatus,
    SessionUsage,
    TurnRecord,
)
from ._dynamo import attr, dynamo_item, expr_values, read_decimal, read_number, read_text, tenant_client
from ._errors import error_code, upstream_errors

OPEN_LISTING, ENDED_LISTING = "SES", "SESEND"
"""`gsi1pk` suffixes (`<t>#SES`, `<t>#SESEND`): the open and the ended sessions of a tenant."""

MAX_TURN_ITEM_BYTES = 350_000
"""DynamoDB items hold at most 400 KB; a turn's JSON above this is refused before the write."""

# Session totals (SessionUsage) beside the immutable `doc`, added atomically with each turn (UpdateExpression
# ADD): attribute -> expression value.
_USAGE_ATTRIBUTES = {
    "usage_turns": ":one",
    "usage_input": ":in",
    "usage_cache_read": ":read",
    "usage_cache_write": ":write",
    "usage_output": ":out",
    "usage_cost_usd": ":usd",
    "usage_cache_breaks": ":break",
    "usage_cost_uncached_usd": ":uncached",
    "usage_snapshot_1h": ":snap1h",
    "usage_history_1h": ":hist1h",
    "usage_ttl_switches": ":switch",
}
_USAGE_FIELDS = {
    ":one": "turns",
    ":in": "input_tokens",
    ":read": "cache_read_input_tokens",
    ":write": "cache_write_input_tokens",
    ":out": "output_tokens",
    ":usd": "cost_usd",
    ":break": "cache_breaks",
    ":uncached": "cost_without_cache_usd",
    ":snap1h": "snapshot_1h_turns",
    ":hist1h": "history_1h_turns",
    ":switch": "cache_ttl_switches",
}
_USD_FIELDS = frozenset({"cost_usd", "cost_without_cache_usd"})

DynamoClientFactory = Callable[[str], Any]
Item = dict[str, dict[str, Any]]


def _decimal(value: float) -> str:
    """A DynamoDB number for a USD amount: fixed-point, 8 decimals (never exponent notation); zero as `0`
    (moto cannot ADD to a stored `0.00000000`)."""
    text = f"{value:.8f}"
    return "0" if float(text) == 0 else text


def _epoch(moment: datetime) -> int:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp())


def _sortable(moment: datetime) -> str:
    """Fixed-width UTC text: string order is time order (the record store's format)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


class DynamoSessionStore:
    def __init__(self, table_name: str, client_factory: DynamoClientFactory) -> None:
        self._table = table_name
        self._client_factory = client_factory

    def _client(self, tenant: str) -> Any:
        return tenant_client(self._client_factory, tenant)

    @staticmethod
    def _pk(tenant: str, session_id: str) -> str:
        return f"{tenant}#SES#{session_id}"

    # ------------------------------------------------------------------ sessions

    def create(self, session: SessionRecord) -> None:
        item: Item = dynamo_item(
            pk=self._pk(session.tenant, session.id),
            sk="SES",
            kind="session",
            namespace=session.namespace,
            status=session.status.value,
            expires_at=_epoch(session.expires_at),
            actor=session.actor,
            doc=session.model_dump_json(),
        )
        if session.status is not SessionStatus.PURGED:
            listing = OPEN_LISTING if session.status is SessionStatus.OPEN else ENDED_LISTING
            item["gsi1pk"] = attr(f"{session.tenant}#{listing}")
            item["gsi1sk"] = attr(f"SES#{_sortable(session.expires_at)}#{session.id}")
        client = self._client(session.tenant)
        try:
            with upstream_errors("DynamoDB", "PutItem"):
                client.put_item(
                    TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(pk)"
                )
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":
                raise
            raise ConcurrentModification(
                f"session {session.id} already exists", session_id=session.id
            ) from error

    def count_open(
        self,
        tenant: str,
        now: datetime,
        *,
        limit: int,
        actor: str | None = None,
        namespace: str | None = None,
    ) -> int:
        client = self._client(tenant)
        request: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": "gsi1",
            # "~" sorts after every id character: a session expiring exactly now is already expired.
            "KeyConditionExpression": "gsi1pk = :pk AND gsi1sk > :after",
            # LeadingKeys checks only the base table's key: another tenant may write an item under its own pk
            # whose gsi1pk is this tenant's listing. Only items under this tenant's own pk are its sessions
            # (DynamoDB's Count is taken after the filter).
            "FilterExpression": "begins_with(pk, :own)",
            "ExpressionAttributeValues": expr_values(
                pk=f"{tenant}#SES", after=f"SES#{_sortable(now)}#~", own=f"{tenant}#"
            ),
            "Select": "COUNT",
        }
        if actor is not None:
            # Count after the filter: only the sessions this API key started (sessions stored before the
            # attribute existed carry none and are not counted against a key; they expire within the TTL).
            request["FilterExpression"] += " AND actor = :actor"
            request["ExpressionAttributeValues"][":actor"] = attr(actor)
        if namespace is not None:
            request["FilterExpression"] += " AND #namespace = :namespace"
            request["ExpressionAttributeNames"] = {"#namespace": "namespace"}
            request["ExpressionAttributeValues"][":namespace"] = attr(namespace)
        count = 0
        while count < limit:
            with upstream_errors("DynamoDB", "Query"):
                response = client.query(**request)
            count += int(response.get("Count", 0))
            last = response.get("LastEvaluatedKey")
            if not last:
                break
            request["ExclusiveStartKey"] = last
        return count

    @staticmethod
    def _session_from_item(item: Item) -> SessionRecord:
        data = json.loads(read_text(item, "doc"))
        data["status"] = read_text(item, "status")
        if "ended_at" in item:
            data["ended_at"] = read_text(item, "ended_at")
        totals: dict[str, Any] = {}
        for attribute, placeholder in _USAGE_ATTRIBUTES.items():
            if attribute in item:
                field = _USAGE_FIELDS[placeholder]
                usd = field in _USD_FIELDS
                totals[field] = float(read_decimal(item, attribute)) if usd else read_number(item, attribute)
        if totals:
            data["usage"] = SessionUsage(**totals)
        return SessionRecord.model_validate(data)

    def get(self, tenant: str, session_id: str) -> SessionRecord | None:
        client = self._client(tenant)
        with upstream_errors("DynamoDB", "GetItem"):
            response = client.get_item(
                TableName=self._table,
                Key=dynamo_item(pk=self._pk(tenant, session_id), sk="SES"),
                ConsistentRead=True,
            )
        item = response.get("Item")
        return self._session_from_item(item) if item else None

    def end(self, tenant: str, session_id: str, at: datetime) -> SessionRecord | None:
        client = self._client(tenant)
        try:
            with upstream_errors("DynamoDB", "UpdateItem"):
                response = client.update_item(
                    TableName=self._table,
                    Key=dynamo_item(pk=self._pk(tenant, session_id), sk="SES"),
                    # Out of the open-sessions listing (gsi1) into the ended one, as it is ended.
                    UpdateExpression="SET #status = :ended, ended_at = :at, gsi1pk = :listing",
                    ConditionExpression="attribute_exists(pk) AND #status = :open",
                    ExpressionAttributeNames={"#status": "status"},
                    ExpressionAttributeValues=expr_values(
                        ended=SessionStatus.ENDED.value,
                        open=SessionStatus.OPEN.value,
                        at=_iso(at),
                        listing=f"{tenant}#{ENDED_LISTING}",
                    ),
                    ReturnValues="ALL_NEW",
                )
        except ClientError as error:
            if error_code(error) != "ConditionalCheckFailedException":
                raise
            # Missing, or already ended: ending is idempotent.
            return self.get(tenant, session_id)
        return self._session_from_item(response["Attributes"])

    # ------------------------------------------------------------------ turns

    def append_turn(self, turn: TurnRecord, *, now: datetime) -> None:
        session = self.get(turn.tenant, turn.session_id)
        if session is None:
            raise SessionClosed(
                f"session {turn.session_id} no longer exists; the turn was not saved",
                session_id=turn.session_id,
            )
        doc = turn.model_dump_json()
        if len(doc.encode("utf-8")) > MAX_TURN_ITEM_BYTES:
            raise TooLarge(
                f"this turn's messages take {len(doc.encode('utf-8')):,} bytes; one turn holds at most "
                f"{MAX_TURN_ITEM_BYTES:,}. Send shorter messages or lower the tool-result limit",
                limit=MAX_TURN_ITEM_BYTES,
            )
        items = self._turn_items(turn, doc, session.expires_at, now)
        client = self._client(turn.tenant)
        try:
            with upstream_errors("DynamoDB", "TransactWriteItems"):
                client.transact_write_items(TransactItems=items)
        except ClientError as error:
            if error_code(error) != "TransactionCanceledException":
                raise
            reasons = [r.get("Code", "None") for r in error.response.get("CancellationReasons") or []]
            if reasons and reasons[0] == "ConditionalCheckFailed":
                raise SessionClosed(
                    f"session {turn.session_id} is no longer open (ended or expired); the turn was not saved",
                    session_id=turn.session_id,
                ) from error
            if len(reasons) > 1 and reasons[1] == "ConditionalCheckFailed":
                raise ConcurrentModification(
                    f"another turn {turn.index + 1} of session {turn.session_id} was saved first; send the "
                    "message again",
                    session_id=turn.session_id,
                    turn=turn.index + 1,
                ) from error
            if "TransactionConflict" in reasons:
                raise ConcurrentModification(
                    f"session {turn.session_id} is being changed by another request; send the message again",
                    session_id=turn.session_id,
                ) from error
            raise

    def _turn_items(self, turn: TurnRecord, doc: str, expires_at: datetime, now: datetime) -> list[Item]:
        """The transaction that stores a turn: the session's open-and-unexpired condition with the atomic
        ADD of the turn's figures to its totals, and the put of the turn if its index is free."""
        pk = self._pk(turn.tenant, turn.session_id)
        # The turn's own figures, as SessionUsage adds them (the same arithmetic as the local store).
        delta = SessionUsage().plus(turn).model_dump()
        added = {
            # USD amounts as fixed-point text: the serializer would write Decimal("0.00000001") as 1E-8
            placeholder: {"N": _decimal(delta[field])} if field in _USD_FIELDS else attr(int(delta[field]))
            for placeholder, field in _USAGE_FIELDS.items()
        }
        items = [
            {
                # The condition that the session is open, and the atomic ADD of the turn's figures to the
                # session's totals: both in the transaction that stores the turn.
                "Update": {
                    "TableName": self._table,
                    "Key": dynamo_item(pk=pk, sk="SES"),
                    "ConditionExpression": "#status = :open AND expires_at > :now",
                    "UpdateExpression": "ADD "
                    + ", ".join(f"{attribute} {value}" for attribute, value in _USAGE_ATTRIBUTES.items()),
                    "ExpressionAttributeNames": {"#status": "status"},
                    "ExpressionAttributeValues": {
                        ":open": attr(SessionStatus.OPEN.value),
                        ":now": attr(_epoch(now)),
                        **added,
                    },
                }
            },
            {
                "Put": {
                    "TableName": self._table,
                    "Item": {
                        "pk": attr(pk),
                        "sk": attr(f"TURN#{turn.index:06d}"),
                        "kind": attr("turn"),
                        # Turns leave with their session.
                        "expires_at": attr(_epoch(expires_at)),
                        "doc": attr(doc),
                    },
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
        ]
        return items

    def list_turns(self, tenant: str, session_id: str) -> list[TurnRecord]:
        client = self._client(tenant)
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :turn)",
            "ExpressionAttributeValues": expr_values(pk=self._pk(tenant, session_id), turn="TURN#"),
            "ConsistentRead": True,
        }
        turns: list[TurnRecord] = []
        while True:
            with upstream_errors("DynamoDB", "Query"):
                response = client.query(**request)
            turns.extend(
                TurnRecord.model_validate_json(read_text(item, "doc")) for item in response.get("Items", [])
            )
            last = response.get("LastEvaluatedKey")
            if not last:
                return turns
            request["ExclusiveStartKey"] = last
