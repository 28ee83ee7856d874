"""What a recall costs a model through the MCP server: bytes per hit and per answer, compact (the default)
against `verbose=true` (the API's records), on a local server with the offline hashing embedder.

A namespace is filled with `--records` memories of realistic length (one sentence to a short paragraph, a few
long ones), then `--queries` recalls run through `build_server`'s `recall` tool at k = 8. Bytes are compact
JSON in UTF-8, as a client serialises the structured answer.

    .venv/bin/python bench/mcp_recall_bytes.py [--records 200] [--queries 20] [--seed 32]

Exit status 1 when a compact hit is over 300 bytes or carries a tenant, hash or embedding model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local
from agent_memory_client import AsyncClient, Client
from agent_memory_client.mcp_server import build_server

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from tests.integration.conftest import start_server  # noqa: E402  (the server the tests start)

NS = "/bench/mcp"
TOPICS = ["billing", "search", "auth", "ledger", "media", "orders", "the data platform", "the mobile app"]
FACTS = [
    "{} deploys every Tuesday after the change freeze is lifted",
    "The user wants answers about {} short, with the command first",
    "{} runs on PostgreSQL 16 in eu-west-1 with a read replica in eu-central-1",
    "Incidents on {} page the on-call engineer of the payments team",
    "The runbook for {} says: check the canary dashboard, widen the rollout to 10 %, then 50 %, then all; "
    "roll back with make rollback if the error rate passes 1 % for five minutes",
]
HIDDEN = ("tenant", "content_hash", "embedding_model", "query_hash")


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


async def _recall(url: str, key: str, query: str, verbose: bool) -> dict[str, Any]:
    async with AsyncClient(url, key) as client:
        result = await build_server(client, NS).call_tool(
            "recall", {"query": query, "k": 8, "verbose": verbose}
        )
    structured = result.structured_content or {}
    return dict(structured.get("result", structured))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--seed", type=int, default=32)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(data_dir=Path(data), embedder="hashing")
        runtime = build_local(settings)
        key = runtime.keys.create("bench", ["*"], ["read", "write"]).key
        server, thread, url = start_server(settings, runtime)
        try:
            with Client(url, key) as client:
                for i in range(args.records):
                    fact = rng.choice(FACTS).format(rng.choice(TOPICS))
                    client.remember(f"{fact} (note {i})", NS)
            compact, verbose = [], []
            for _ in range(args.queries):
                query = f"how does {rng.choice(TOPICS)} deploy and who is paged"
                compact.append(asyncio.run(_recall(url, key, query, False)))
                verbose.append(asyncio.run(_recall(url, key, query, True)))
        finally:
            server.should_exit = True
            thread.join(timeout=10)
    hits = [_size(hit) for answer in compact for hit in answer["results"]]
    full_hits = [_size(hit) for answer in verbose for hit in answer["results"]]
    print(f"recall at k=8 over {args.records} memories, {args.queries} queries")
    print(
        f"  compact: {statistics.mean(hits):.0f} B/hit (max {max(hits)}), "
        f"{statistics.mean(_size(a) for a in compact):.0f} B/answer"
    )
    print(
        f"  verbose: {statistics.mean(full_hits):.0f} B/hit (max {max(full_hits)}), "
        f"{statistics.mean(_size(a) for a in verbose):.0f} B/answer"
    )
    leaked = [word for word in HIDDEN if any(word in json.dumps(a) for a in compact)]
    if max(hits) > 300 or leaked:
        print(f"FAIL: largest compact hit {max(hits)} B; hidden fields present: {leaked}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
