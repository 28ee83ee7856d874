#!/usr/bin/env python3
"""CDK entry point: validate the deployment config from cdk.json, build the stack. No AWS calls here."""

from __future__ import annotations

import os
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from infra.config import CONTEXT_KEY, DeploymentConfig
from infra.stacks import MemoryStack

PROJECT_ROOT = Path(__file__).resolve().parent
SKIP_LAYER_BUILD = "skip-layer-build"
"""`-c skip-layer-build=true`: synthesize without running pip (fully offline). The template is complete for
review, diff and lint, but its layer asset is unbuilt: never deploy such a synth."""


def build_app(app: cdk.App | None = None, *, nag: bool = True, target_region: str | None = None) -> cdk.App:
    """Build the app. With `nag` (the default, also for deploy) cdk-nag's AwsSolutions pack runs at synth
    and any unacknowledged finding fails it. `target_region`: where an environment-agnostic stack is going
    (the CDK CLI's region), so the config can check the models against it; `region` in cdk.json wins."""
    app = app or cdk.App()
    if str(app.node.try_get_context(SKIP_LAYER_BUILD)).lower() == "true":
        # The CLI refuses `aws:` context keys, so the documented switch maps onto CDK's own one here.
        app.node.set_context("aws:cdk:bundling-stacks", [])
    config = DeploymentConfig.from_context(app.node.try_get_context(CONTEXT_KEY), target_region=target_region)
    # Environment-agnostic unless cdk.json pins an account/region: synth needs no credentials.
    env = cdk.Environment(account=config.account, region=config.region) if config.region else None
    MemoryStack(
        app,
        config.stack_name,
        config=config,
        project_root=PROJECT_ROOT,
        env=env,
        description="Agent memory service: memory API, memory files (S3 Files), per-tenant vectors",
    )
    if nag:
        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app


if __name__ == "__main__":
    # The CDK CLI runs the app with CDK_DEFAULT_REGION set to the region it deploys an environment-agnostic
    # stack to (AWS_REGION or the profile's), so `cdk deploy` checks the Bedrock models against that region.
    build_app(target_region=os.environ.get("CDK_DEFAULT_REGION")).synth()
