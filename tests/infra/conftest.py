"""Shared fixtures of the infra tests: the app is synthesized once per run and profile (CDK synth is slow), with
cdk-nag's AwsSolutions pack attached and asset bundling skipped so no test reaches PyPI."""

from __future__ import annotations

from typing import Any

import pytest
from infra_support import DEFAULT_PROFILE, Synthesized, infra_test_context, synthesized_from

PROFILES = ("lean", "isolated")
"""infra.config.PROFILES: tests that take `profile_synthesized` run for each."""


@pytest.fixture(scope="session")
def synthesized() -> Synthesized:
    """The default profile's stack (cdk.json's `profile`)."""
    return _synthesize(DEFAULT_PROFILE)


@pytest.fixture(scope="session", params=PROFILES)
def profile_synthesized(request: pytest.FixtureRequest) -> Synthesized:
    """The stack of each profile, for the template-wide gates (the default one is synthesized only once)."""
    return _synthesize(request.param)


def _synthesize(profile: str) -> Synthesized:
    """One synth per profile for the whole run, shared with the other xdist worker and the IAM contract
    (tests/iam/synth.py)."""
    from tests.iam.synth import synthesize

    return synthesized_from(profile, synthesize(infra_test_context(profile)))


@pytest.fixture(scope="session")
def template(synthesized: Synthesized) -> Any:
    """The synthesized stack as an `aws_cdk.assertions.Template`."""
    from aws_cdk.assertions import Template

    return Template.from_json(synthesized.template)
