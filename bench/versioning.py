"""Export, bundle import, snapshot and diff throughput (issue 14, part B) on a real local data directory
(SQLite records, local index, memory files, versioning.db) with the offline hashing embedder.

A namespace is filled with `--records` memories through `remember_batch` (seeded), a tenth of them corrected
and a tenth archived, plus MEMORY.md / USER.md entries and daily logs. Then, each timed:
export (records/s), the `.tar.gz` it packs to, import into an empty tenant (records/s, the reindex included),
a snapshot, a diff between two snapshots, and a restore dry run.

    .venv/bin/python bench/versioning.py [--records 2000] [--seed 14]

Exit status 1 when the round trip is not exact (active records, their hashes and links, file texts), when the
diff does not find exactly the changes made between the snapshots, or when a throughput target is missed
(export ≥ 500 records/s, import ≥ 100 records/s, on the machine's 2 shared cores).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from agent_memory.domain.interop import bundle as bundles
from agent_memory.domain.memory.service import RememberInput
from agent_memory.domain.ports import RecordQuery
from agent_memory.domain.records import MemoryType, Status
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import LocalRuntime, build_local

NS = "/bench/versioning"
EXPORT_TARGET = 500.0
IMPORT_TARGET = 100.0
SUBJECTS = [
    f"{a}-{b}"
    for a in ("billing", "search", "auth", "ledger", "media", "orders")
    for b in ("api", "db", "ui")
]
FACTS = ["runs on {}", "is owned by team {}", "deploys every {}", "pages {} on failure", "stores data in {}"]
VALUES = ["PostgreSQL", "Redis", "Tuesday", "Friday", "platform", "payments", "S3", "the on-call", "Kafka"]


def _records(
    runtime: LocalRuntime, tenant: str
) -> dict[str, tuple[str, str, str | None, str | None, str | None]]:
    found = {}
    cursor = None
    while True:
        page = runtime.services.memory.list(tenant, RecordQuery(namespaces=(NS,), limit=100, cursor=cursor))
        for r in page.items:
            found[r.id] = (r.status.value, r.content_hash, r.supersedes, r.superseded_by, r.corrected_from)
        if not page.next_cursor:
            return found
        cursor = page.next_cursor


def fill(runtime: LocalRuntime, count: int, rng: random.Random) -> list[str]:
    memory, files = runtime.services.memory, runtime.services.files
    ids: list[str] = []
    for start in range(0, count, 100):
        items = [
            RememberInput(
                content=f"Service {rng.choice(SUBJECTS)}-{n} {rng.choice(FACTS).format(rng.choice(VALUES))} (note {n})",
                namespace=NS,
                type=MemoryType.DOMAIN_KNOWLEDGE,
            )
            for n in range(start, min(count, start + 100))
        ]
        for result in memory.remember_batch("bench", items, actor="bench"):
            if result.record is not None and result.record.status is Status.ACTIVE:
                ids.append(result.record.id)
    for record_id in rng.sample(ids, len(ids) // 10):
        memory.correct("bench", record_id, f"Corrected: {record_id} moved to EKS", actor="bench")
    for record_id in rng.sample(
        [i for i in ids if memory.get("bench", i).status is Status.ACTIVE], len(ids) // 10
    ):
        memory.archive("bench", record_id, actor="bench")
    for n in range(10):
        files.add("bench", NS, "memory", f"Bench note {n}: keep deploys small")
        files.append_daily("bench", NS, f"Bench log line {n}")
    files.add("bench", NS, "user", "Prefers terse answers")
    return ids


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=14)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        runtime = build_local(Settings(data_dir=Path(tmp) / "data", embedder="hashing"))
        versioning = runtime.services.versioning
        assert versioning is not None
        started = time.perf_counter()
        ids = fill(runtime, args.records, rng)
        print(
            f"filled {len(ids)} memories (+ corrections, archives, files) in {time.perf_counter() - started:.1f} s"
        )

        started = time.perf_counter()
        bundle = versioning.export("bench", [NS])
        export_s = time.perf_counter() - started
        packed = bundles.pack_tar(bundle)
        counts = bundle.counts()
        export_rate = counts["records"] / export_s
        print(
            f"export: {counts} in {export_s:.2f} s = {export_rate:,.0f} records/s; .tar.gz {len(packed):,} bytes"
        )

        started = time.perf_counter()
        report = versioning.import_bundle("empty", bundles.unpack_tar(packed), actor="bench")
        import_s = time.perf_counter() - started
        import_rate = len(report.created) / import_s
        print(
            f"import into an empty tenant: {report.counts()} in {import_s:.2f} s = {import_rate:,.0f} records/s"
        )
        if _records(runtime, "empty") != _records(runtime, "bench"):
            failures.append("round trip: the imported records, hashes or links differ")
        for path in ("MEMORY.md", "USER.md"):
            if runtime.services.files.read_file("empty", NS, path) != runtime.services.files.read_file(
                "bench", NS, path
            ):
                failures.append(f"round trip: {path} differs")

        started = time.perf_counter()
        versioning.create_snapshot("bench", NS, "one", actor="bench")
        print(f"snapshot: {time.perf_counter() - started:.2f} s")
        active = [i for i, r in _records(runtime, "bench").items() if r[0] == "active"]
        changed = rng.sample(active, 20)
        for record_id in changed:
            runtime.services.memory.archive("bench", record_id, actor="bench")
        versioning.create_snapshot("bench", NS, "two", actor="bench")
        started = time.perf_counter()
        diff = versioning.diff_snapshots("bench", NS, "one", "two")
        print(f"diff of two snapshots: {diff.counts()} in {time.perf_counter() - started:.2f} s")
        if sorted(r.id for r in diff.records) != sorted(changed) or diff.counts()["archived"] != 20:
            failures.append(f"diff found {diff.counts()}, expected exactly the 20 archived")
        started = time.perf_counter()
        plan = versioning.restore_snapshot("bench", NS, "one", actor="bench", dry_run=True)
        print(f"restore dry run: {plan.counts()} in {time.perf_counter() - started:.2f} s")
        if plan.counts().get("unarchived") != 20:
            failures.append(f"restore plan {plan.counts()}, expected 20 unarchived")

    if export_rate < EXPORT_TARGET:
        failures.append(f"export {export_rate:,.0f} records/s < target {EXPORT_TARGET:,.0f}")
    if import_rate < IMPORT_TARGET:
        failures.append(f"import {import_rate:,.0f} records/s < target {IMPORT_TARGET:,.0f}")
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
