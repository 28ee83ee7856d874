"""The nightly dreaming sweep at 10,000 namespaces, executed by moto's Step Functions interpreter (issue 30).

The synthesized-ASL builder (`workflows/dreaming_asl.py`) runs in moto 5 with `execute_state_machine` on: moto
executes the Distributed Map (its `DistributedIterationComponent`: one child per item, ItemsPath from the
state, no ItemReader needed), the ListTargets pages and the Tally loop. Every Lambda task is answered by the
stub of tests/aws/test_dreaming_stepfunctions.py (ListTargets runs the real handler over 10,000 namespace
names; Light/REM/Deep answer realistic payloads; every 25th namespace fails in REM and is recorded). What moto
does not model, and this bench therefore does not measure: the real service's history-event accounting
(tests/infra/test_infra_sweep_scale.py computes it from the ASL), child-execution billing and wall-clock
time on AWS.

Figures: execution status, namespaces completed and failed, pages listed, Map runs, the largest state
payload (against 256 KiB) and the wall time in moto.

    .venv/bin/python bench/sweep_scale.py [--namespaces 10000] [--concurrency 40]

Exit status 1 when the execution does not succeed or a count is off.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "unit")]
for name, value in {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}.items():
    os.environ[name] = value

from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl  # noqa: E402

from tests.aws.test_dreaming_stepfunctions import STATE_PAYLOAD_LIMIT, run_paged_sweep  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--namespaces", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=40)
    args = parser.parse_args(argv)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(retrier_decl, "time", SimpleNamespace(sleep=lambda seconds: None))
        started = time.monotonic()
        described, sweep, payloads = run_paged_sweep(
            monkeypatch, args.namespaces, max_concurrency=args.concurrency, timeout_seconds=3_600
        )
        elapsed = time.monotonic() - started
    status = described["status"]
    output = json.loads(described.get("output") or "{}")
    failed = len(sweep.failing)
    largest = max(size for *_, size in payloads.sizes)
    print(f"status {status}; {args.namespaces:,} namespaces, max concurrency {args.concurrency}")
    print(f"output {output} (expected completed {args.namespaces - failed:,}, failed {failed:,})")
    print(
        f"ListTargets pages {len(payloads.of('TaskStateExited', 'ListTargets'))}, Map runs "
        f"{len(payloads.of('MapStateEntered', 'SweepNamespaces'))}, Tally {len(payloads.of('PassStateExited', 'Tally'))}"
    )
    print(
        f"largest state payload {largest:,} bytes of {STATE_PAYLOAD_LIMIT:,}; wall time in moto {elapsed:,.0f} s"
    )
    ok = (
        status == "SUCCEEDED"
        and output.get("completed") == args.namespaces - failed
        and output.get("failed") == failed
        and largest < STATE_PAYLOAD_LIMIT
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
