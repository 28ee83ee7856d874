"""Shared fixtures of the infra tests: the app is synthesized once per session (CDK synth is slow), with
cdk-nag's AwsSolutions pack attached and asset bundling skipped so no test reaches PyPI."""

from __future__ import annotations

import json
from typing import Any

import pytest
from infra_support import DEFAULT_PROFILE, ROOT, Synthesized, infra_test_context

PROFILES = ("lean", "isolated")
"""infra.config.PROFILES: tests that take `profile_synthesized` run for each."""

_SYNTHESIZED: dict[str, Synthesized] = {}


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    """The default profile's stack (cdk.json's `profile`)."""
    return _synthesize(tmp_path_factory, DEFAULT_PROFILE)


@pytest.fixture(scope="session", params=PROFILES)
def profile_synthesized(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Synthesized:
    """The stack of each profile, for the template-wide gates (the default one is synthesized only once)."""
    return _synthesize(tmp_path_factory, request.param)


def _synthesize(tmp_path_factory: pytest.TempPathFactory, profile: str) -> Synthesized:
    if profile in _SYNTHESIZED:
        return _SYNTHESIZED[profile]
    import aws_cdk as cdk

    from app import build_app

    outdir = tmp_path_factory.mktemp(f"cdk.out-{profile}")
    app = cdk.App(context=infra_test_context(profile), outdir=str(outdir))
    build_app(app)  # attaches cdk-nag's AwsSolutions pack, exactly as `cdk synth` and `cdk deploy` do
    error: str | None = None
    try:
        app.synth()
    except RuntimeError as exc:  # cdk-nag findings fail synth; the tests below report them in detail
        error = str(exc)

    stack_name = json.loads((ROOT / "cdk.json").read_text())["context"]["agent-memory"]["stack_name"]
    key = cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY
    acknowledgments = [
        (construct.node.path, rule, reason)
        for construct in app.node.find_all()
        for entry in construct.node.metadata
        if entry.type == key
        for rule, reason in dict(entry.data).items()
    ]
    report_path = outdir / "validation-report.json"
    _SYNTHESIZED[profile] = Synthesized(
        profile=profile,
        stack_name=stack_name,
        template=json.loads((outdir / f"{stack_name}.template.json").read_text()),
        assembly_dir=outdir,
        synth_error=error,
        validation_report=json.loads(report_path.read_text()) if report_path.exists() else {},
        manifest=json.loads((outdir / "manifest.json").read_text()),
        acknowledgments=acknowledgments,
    )
    return _SYNTHESIZED[profile]


@pytest.fixture(scope="session")
def template(synthesized: Synthesized) -> Any:
    """The synthesized stack as an `aws_cdk.assertions.Template`."""
    from aws_cdk.assertions import Template

    return Template.from_json(synthesized.template)
