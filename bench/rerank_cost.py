"""What recall's optional Bedrock reranker (`"rerank": "bedrock"` on POST /v1/recall) costs for a volume of
reranked recalls a month, per model; the latency it adds is stated beside it (an estimate: this machine cannot
call AWS, and each reranked recall reports its own `rerank.latency_ms`).

Pricing (Amazon Bedrock, on demand): reranking is billed per *query*, one Rerank call of up to 100 document chunks
(https://docs.aws.amazon.com/bedrock/latest/userguide/rerank-pricing.html); a call with more documents counts as
several queries. Per 1,000 queries (https://aws.amazon.com/bedrock/pricing/, "Rerank models"; PRICE_SOURCE): Amazon
Rerank 1.0 $1.00, Cohere Rerank 3.5 $2.00. A recall sends the hybrid ranking's top `rerank_depth` (50) memories in
one call: one query. With the `isolated` profile the API function reaches Bedrock's agent runtime through one more
interface endpoint in every AZ (0.01 $/endpoint-AZ-hour, bench/cost_at_rest.py), billed whether or not anyone
reranks; `lean` needs none.

    .venv/bin/python bench/rerank_cost.py --recalls 100000
    .venv/bin/python bench/rerank_cost.py --recalls 1000000 --candidates 150 --profile isolated
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.cost_at_rest import ENDPOINT_AZ_HOUR, HOURS  # noqa: E402

PRICE_PER_1000_QUERIES = {"amazon.rerank-v1:0": 1.00, "cohere.rerank-v3-5:0": 2.00}
"""US dollars per 1,000 Rerank queries (on demand)."""
PRICE_SOURCE = (
    "https://aws.amazon.com/bedrock/pricing/ (Rerank models; the query unit: "
    "https://docs.aws.amazon.com/bedrock/latest/userguide/rerank-pricing.html)"
)
DOCUMENTS_PER_QUERY = 100
ADDED_LATENCY_ESTIMATE_MS = (100, 500)
"""An estimate, not a measurement: one HTTPS round trip in-Region (tens of ms) plus a cross-encoder over 50 short
memories (about 50 x 64 tokens) on Bedrock's side. Bounded by the adapter's timeouts: at most ~3 s (1 s connect +
2 s read, no retry) before recall keeps its hybrid order."""
TIMEOUT_BOUND_S = 3


def queries_per_recall(candidates: int) -> int:
    return math.ceil(candidates / DOCUMENTS_PER_QUERY)


def monthly_cost(model: str, recalls: int, candidates: int = 50) -> float:
    return recalls * queries_per_recall(candidates) * PRICE_PER_1000_QUERIES[model] / 1000


def endpoint_cost(profile: str, azs: int) -> float:
    return azs * HOURS * ENDPOINT_AZ_HOUR if profile == "isolated" else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recalls", type=int, default=100_000, help="reranked recalls a month")
    parser.add_argument("--candidates", type=int, default=50, help="memories sent per recall (rerank_depth)")
    parser.add_argument("--profile", choices=("lean", "isolated"), default="lean")
    parser.add_argument("--azs", type=int, default=2, help="AZs of the isolated profile's endpoints")
    args = parser.parse_args(argv)
    queries = queries_per_recall(args.candidates)
    unit = "query" if queries == 1 else "queries"
    print(
        f"{args.recalls:,} reranked recalls a month, {args.candidates} candidates each = {queries} {unit} each"
    )
    print(f"prices: {PRICE_SOURCE}")
    endpoint = endpoint_cost(args.profile, args.azs)
    for model in PRICE_PER_1000_QUERIES:
        calls = monthly_cost(model, args.recalls, args.candidates)
        print(
            f"  {model:<22} ${PRICE_PER_1000_QUERIES[model]:.2f}/1,000 queries: ${calls:,.2f}/month"
            + (f" + ${endpoint:.2f} endpoint ({args.profile}, {args.azs} AZs)" if endpoint else "")
        )
    low, high = ADDED_LATENCY_ESTIMATE_MS
    print(
        f"added latency per reranked recall: ~{low}-{high} ms (estimate, not measured; each answer reports "
        f"rerank.latency_ms); bounded at ~{TIMEOUT_BOUND_S} s, then the hybrid order"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
