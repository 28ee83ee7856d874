"""Synthesize the CDK app once per process and profile, with the infra suite's test context (no PyPI, no
bundling)."""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


PROFILES = ("lean", "isolated")
"""infra.config.PROFILES: the contract judges every call against each profile's template."""


@lru_cache(maxsize=2)
def synthesized_template(profile: str = "lean") -> dict[str, Any]:
    for path in (str(ROOT), str(ROOT / "tests" / "infra")):
        if path not in sys.path:
            sys.path.insert(0, path)
    import aws_cdk as cdk
    from infra_support import infra_test_context

    from app import build_app

    outdir = tempfile.mkdtemp(prefix="iam-cdk-out-")
    app = cdk.App(context=infra_test_context(profile), outdir=outdir)
    build_app(app)
    # cdk-nag findings fail synth: the infra suite reports them; the template is written all the same
    with contextlib.suppress(RuntimeError):
        app.synth()
    stack_name = json.loads((ROOT / "cdk.json").read_text())["context"]["agent-memory"]["stack_name"]
    return json.loads((Path(outdir) / f"{stack_name}.template.json").read_text())
