"""Synthesize the CDK app once per test run for each context, with the infra suite's test context (no PyPI, no
bundling), shared by every process of the run.

A synth takes tens of seconds. The infra suite (both profiles, on whichever xdist worker runs it), the IAM
contract (the controller, after the tests) and the docs-claims test all need the same few templates, so the
result of each context is written once to a directory the controller chose (`SYNTH_DIR_ENV`, handed to the
workers by tests/iam/plugin.py) under a file lock: the first process synthesizes, the others read. Outside a
pytest run (or with the variable unset) each process synthesizes for itself, once.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SYNTH_DIR_ENV = "AGENT_MEMORY_TEST_SYNTH_DIR"

_IN_PROCESS: dict[str, dict[str, Any]] = {}


def _paths() -> None:
    for path in (str(ROOT), str(ROOT / "tests" / "infra")):
        if path not in sys.path:
            sys.path.insert(0, path)


def context_key(context: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(context, sort_keys=True).encode()).hexdigest()[:16]


def synthesize(context: dict[str, Any]) -> dict[str, Any]:
    """The synthesized app of `context` (cdk-nag attached, as `cdk synth` does): `template`, `stack_name`,
    `assembly_dir`, `synth_error` (cdk-nag findings fail synth; the template is written all the same),
    `validation_report`, `manifest` and `acknowledgments` ([construct path, rule, reason])."""
    key = context_key(context)
    if key in _IN_PROCESS:
        return _IN_PROCESS[key]
    shared = os.environ.get(SYNTH_DIR_ENV)
    if not shared:
        _IN_PROCESS[key] = _synthesize(context, Path(tempfile.mkdtemp(prefix="cdk-out-")))
        return _IN_PROCESS[key]
    from filelock import FileLock

    directory = Path(shared)
    directory.mkdir(parents=True, exist_ok=True)
    result_path = directory / f"{key}.json"
    with FileLock(str(directory / f"{key}.lock")):
        if result_path.exists():
            result = json.loads(result_path.read_text())
        else:
            result = _synthesize(context, directory / f"cdk.out-{key}")
            partial = result_path.with_suffix(".tmp")
            partial.write_text(json.dumps(result))
            partial.replace(result_path)
    _IN_PROCESS[key] = result
    return result


def _synthesize(context: dict[str, Any], outdir: Path) -> dict[str, Any]:
    _paths()
    import aws_cdk as cdk

    from app import build_app

    app = cdk.App(context=context, outdir=str(outdir))
    build_app(app)  # attaches cdk-nag's AwsSolutions pack, exactly as `cdk synth` and `cdk deploy` do
    error: str | None = None
    try:
        app.synth()
    except RuntimeError as exc:  # cdk-nag findings fail synth; the infra tests report them in detail
        error = str(exc)
    stack_name = json.loads((ROOT / "cdk.json").read_text())["context"]["agent-memory"]["stack_name"]
    stack_name = context.get("agent-memory", {}).get("stack_name", stack_name)
    acknowledged = cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    acknowledgments = [
        [construct.node.path, rule, reason]
        for construct in app.node.find_all()
        for entry in construct.node.metadata
        if entry.type == acknowledged
        for rule, reason in dict(entry.data).items()
    ]
    report_path = outdir / "validation-report.json"
    return {
        "template": json.loads((outdir / f"{stack_name}.template.json").read_text()),
        "stack_name": stack_name,
        "assembly_dir": str(outdir),
        "synth_error": error,
        "validation_report": json.loads(report_path.read_text()) if report_path.exists() else {},
        "manifest": json.loads((outdir / "manifest.json").read_text()),
        "acknowledgments": acknowledgments,
    }


PROFILES = ("lean", "isolated")
"""infra.config.PROFILES: the contract judges every call against each profile's template."""


def synthesized_template(profile: str = "lean") -> dict[str, Any]:
    """A profile's template of the infra suite's test deployment (what the IAM contract judges)."""
    _paths()
    from infra_support import infra_test_context

    return synthesize(infra_test_context(profile))["template"]
