"""What one page of `GET /v1/memories` over a namespace tree reads (issue 32), on both record stores.

A tenant holds `--records` records (2,000; `--dynamo-records`, 400, on moto, whose writes are slow) spread over
`--namespaces` namespaces (50) under `/org/team-<n>`, plus `--subtree` records (20) under `/me/users/u-<n>`.
Listing `/me` with its children, one page of 50, `RecordQuery(namespaces=("/me",), namespaces_below=("/me",))`:

- SQLite: one index range (by namespace, then oldest first);
- DynamoDB before the tree index (and for a tenant whose backfill has not completed): the tenant's records in
  creation order (gsi2) filtered by namespace, at most `SUBTREE_READ_BUDGET` read a page — O(tenant);
- DynamoDB after: one Query per range of the tree on gsi3 (`record_tree`) — O(page), whatever the tenant.

Then the large-tenant case (`--large`, 3,000 more records outside the tree on moto): the same page again.
Figures: records listed, DynamoDB Query requests and items scanned (moto, ScannedCount), wall time per page.
Both stores must list the same page (same ids, same order); the old path the same records over all its pages.

    .venv/bin/python bench/list_tree.py [--records 2000] [--namespaces 50] [--subtree 20] [--large 3000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.aws.support: the table as deployed

from agent_memory.adapters.aws.dynamodb_store import DynamoRecordStore
from agent_memory.adapters.local.sqlite_store import SqliteRecordStore
from agent_memory.domain.ports import RecordQuery, RecordStore, RecordWrite
from agent_memory.domain.records import MemoryRecord, MemoryType, content_hash
from tests.aws.support import REGION, TABLE, create_memory_table

TENANT = "bench"
T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _record(n: int, namespace: str) -> MemoryRecord:
    at = T0 + timedelta(seconds=n)
    content = f"fact {n} of {namespace}"
    return MemoryRecord(
        tenant=TENANT,
        namespace=namespace,
        type=MemoryType.DOMAIN_KNOWLEDGE,
        content=content,
        created_at=at,
        updated_at=at,
        last_access_at=at,
        valid_from=at,
        recorded_at=at,
        content_hash=content_hash(content),
        embedding_model="hashing-v1:384:norm",
    )


def fill(store: RecordStore, records: int, namespaces: int, subtree: int, offset: int = 0) -> None:
    rows = [_record(offset + n, f"/org/team-{n % namespaces}") for n in range(records)]
    rows += [_record(offset + records + n, f"/me/users/u-{n % 5}") for n in range(subtree)]
    rows.sort(key=lambda r: r.created_at)
    for start in range(0, len(rows), 25):
        store.commit([RecordWrite(r, None) for r in rows[start : start + 25]], [])


TREE = RecordQuery(namespaces=("/me",), namespaces_below=("/me",), limit=50)


def first_page(store: RecordStore) -> list[MemoryRecord]:
    return store.list(TENANT, TREE).items


def all_pages(store: RecordStore) -> list[MemoryRecord]:
    found, cursor = [], None
    while True:
        page = store.list(TENANT, RecordQuery(**{**TREE.__dict__, "cursor": cursor}))
        found += page.items
        if not page.next_cursor:
            return found
        cursor = page.next_cursor


def measure(label: str, run: Callable[[], list[MemoryRecord]], client: Any = None) -> list[MemoryRecord]:
    queries: list[int] = []
    if client is not None:

        def scanned(parsed: dict[str, Any], **_: Any) -> None:
            queries.append(int(parsed.get("ScannedCount", 0)))

        client.meta.events.register("after-call.dynamodb.Query", scanned)
    started = time.perf_counter()
    items = run()
    elapsed = (time.perf_counter() - started) * 1000
    if client is not None:
        client.meta.events.unregister("after-call.dynamodb.Query", scanned)
        extra = f"  {len(queries):4d} Query requests  {sum(queries):6d} items scanned"
    else:
        extra = ""
    print(f"{label:24s} {len(items):3d} listed  {elapsed:8.1f} ms{extra}")
    return items


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--namespaces", type=int, default=50)
    parser.add_argument("--subtree", type=int, default=20)
    parser.add_argument(
        "--dynamo-records",
        type=int,
        default=400,
        help="records outside the subtree on moto (its writes are slow)",
    )
    parser.add_argument("--large", type=int, default=3000, help="records added for the large-tenant case")
    args = parser.parse_args(argv)
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        local = SqliteRecordStore(Path(scratch) / "records.db")
        fill(local, args.records, args.namespaces, args.subtree)
        sqlite_page = measure("sqlite tree page", lambda: first_page(local))
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        create_memory_table(client)
        old = DynamoRecordStore(TABLE, lambda tenant: client)  # no backfill marker: the old filtered path
        fill(old, args.dynamo_records, args.namespaces, args.subtree)
        before = measure("dynamodb before (gsi2)", lambda: first_page(old), client)
        every = measure("  all pages before", lambda: all_pages(old), client)
        new = DynamoRecordStore(TABLE, lambda tenant: client)
        started = time.perf_counter()
        done = new.backfill_tree_index(TENANT)
        print(
            f"backfill: {done.read} read, {done.updated} keys added, {(time.perf_counter() - started):.2f} s"
        )
        after = measure("dynamodb after (gsi3)", lambda: first_page(new), client)
        if [r.id for r in after] != [r.id for r in sqlite_page]:
            failures.append("dynamodb and sqlite list different pages")
        if sorted(r.id for r in every) != sorted(r.id for r in all_pages(new)):
            failures.append("the old path and the tree index list different records")
        if {r.namespace for r in before} - {r.namespace for r in after}:
            failures.append("the old path found namespaces the tree index did not")
        fill(new, args.large, args.namespaces, 0, offset=args.dynamo_records + args.subtree)
        print(f"large tenant: {args.large} more records outside the tree")
        marker = {"pk": {"S": f"{TENANT}#META"}, "sk": {"S": "TREE_INDEX"}}
        kept = client.get_item(TableName=TABLE, Key=marker)["Item"]
        client.delete_item(TableName=TABLE, Key=marker)  # as if the backfill had not run
        measure(
            "dynamodb before (gsi2)", lambda: first_page(DynamoRecordStore(TABLE, lambda t: client)), client
        )
        client.put_item(TableName=TABLE, Item=kept)
        large = measure("dynamodb after (gsi3)", lambda: first_page(new), client)
        if [r.id for r in large] != [r.id for r in after]:
            failures.append("the large tenant's page differs")
    for failure in failures:
        print("FAIL", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
