"""What one page of `GET /v1/memories?include_children=true` reads (issue 32), on both record stores.

A tenant holds `--records` records (2,000; `--dynamo-records`, 400, on moto, whose writes are slow) spread over `--namespaces` namespaces (50) under `/org/team-<n>`,
plus `--subtree` records (20) under `/me/users/u-<n>`. Listing `/me` with its children, one page of 50:

- before (the listing of issue 32's first pass): the tenant's namespaces were found by reading every record
  (`VersioningService.namespaces`), then each namespace below the parent was queried and merged;
- after: one query, `RecordQuery(namespaces=("/me",), namespaces_below=("/me",))` (SQLite: an index range;
  DynamoDB: the tenant's records in creation order, filtered by namespace, at most `SUBTREE_READ_BUDGET` read a
  page).

Figures: records read (SQLite rows the query visits are not observable, so the records the store returned to
the caller), DynamoDB Query requests and items scanned (moto, ScannedCount), and wall time per page.

    .venv/bin/python bench/list_tree.py [--records 2000] [--namespaces 50] [--subtree 20]
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


def fill(store: RecordStore, records: int, namespaces: int, subtree: int) -> None:
    rows = [_record(n, f"/org/team-{n % namespaces}") for n in range(records)]
    rows += [_record(records + n, f"/me/users/u-{n % 5}") for n in range(subtree)]
    rows.sort(key=lambda r: r.created_at)
    for start in range(0, len(rows), 25):
        store.commit([RecordWrite(r, None) for r in rows[start : start + 25]], [])


def before(store: RecordStore) -> list[MemoryRecord]:
    found: set[str] = set()
    cursor = None
    while True:  # VersioningService.namespaces: every record of the tenant
        page = store.list(TENANT, RecordQuery(limit=1000, cursor=cursor))
        found.update(r.namespace for r in page.items)
        if not page.next_cursor:
            break
        cursor = page.next_cursor
    chosen = tuple(sorted(ns for ns in found if ns == "/me" or ns.startswith("/me/")))
    return store.list(TENANT, RecordQuery(namespaces=chosen, limit=50)).items


def after(store: RecordStore) -> list[MemoryRecord]:
    return store.list(TENANT, RecordQuery(namespaces=("/me",), namespaces_below=("/me",), limit=50)).items


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
    args = parser.parse_args(argv)
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        local = SqliteRecordStore(Path(scratch) / "records.db")
        fill(local, args.records, args.namespaces, args.subtree)
        old = measure("sqlite before", lambda: before(local))
        new = measure("sqlite after", lambda: after(local))
        failures += [] if [r.id for r in old] == [r.id for r in new] else ["sqlite: the listings differ"]
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        create_memory_table(client)
        dynamo = DynamoRecordStore(TABLE, lambda tenant: client)
        fill(dynamo, args.dynamo_records, args.namespaces, args.subtree)
        old = measure("dynamodb (moto) before", lambda: before(dynamo), client)
        new = measure("dynamodb (moto) after", lambda: after(dynamo), client)
        failures += [] if [r.id for r in old] == [r.id for r in new] else ["dynamodb: the listings differ"]
    for failure in failures:
        print("FAIL", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
