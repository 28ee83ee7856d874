"""infra/config.py: the deployment config validates cdk.json and fails synth with actionable messages."""

from __future__ import annotations

import copy
import json
from typing import Any

import aws_cdk as cdk
import pytest
from infra_support import ROOT

from infra.config import CONTEXT_KEY, ConfigError, DeploymentConfig, load_cdk_json_context


def _shipped() -> dict[str, Any]:
    return copy.deepcopy(load_cdk_json_context(ROOT / "cdk.json")[CONTEXT_KEY])


def _error_for(raw: object) -> str:
    with pytest.raises(ConfigError) as caught:
        DeploymentConfig.from_context(raw)
    return str(caught.value)


def test_shipped_cdk_json_is_a_valid_environment_agnostic_deployment() -> None:
    config = DeploymentConfig.from_context(_shipped())
    assert config.account is None and config.region is None
    assert config.retain_data is True
    assert config.network.nat_gateways == 0
    assert config.embedding.dimensions in (256, 512, 1024)
    assert config.tenant_ids == tuple(t["id"] for t in _shipped()["tenants"])


def test_shipped_cdk_json_runs_the_app_with_the_venv_python_and_recommended_flags() -> None:
    data = json.loads((ROOT / "cdk.json").read_text())
    assert data["app"] == ".venv/bin/python app.py"
    assert data["context"]["@aws-cdk/aws-iam:minimizePolicies"] is True
    assert data["context"]["@aws-cdk/aws-s3:publicAccessBlockedByDefault"] is True


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"tenants": [{"id": "Acme", "display_name": "x"}]}, "tenants.0.id: tenant id 'Acme' is invalid"),
        ({"tenants": [{"id": "ab", "display_name": "x"}]}, "3-40 characters"),
        (
            {"tenants": [{"id": "acme", "display_name": "A"}, {"id": "acme", "display_name": "B"}]},
            "repeated: ['acme']",
        ),
        (
            {"tenants": [{"id": "acme", "display_name": "A", "time_zone": "Mars/Olympus"}]},
            "unknown IANA time zone",
        ),
        ({"embedding": {"dimensions": 768}}, "use one of [256, 512, 1024]"),
        ({"embedding": {"model_id": "cohere.embed-v4:0", "dimensions": 5000}}, "less than or equal to 4096"),
        ({"embedding": {"distance_metric": "euclidean"}}, "runtime ranks hits by cosine similarity"),
        ({"embedding": {"non_filterable_metadata_keys": ["body"]}}, "must contain 'text'"),
        ({"schedules": {"decay": {"expression": "cron(0 3 * * *)"}}}, "six fields"),
        ({"retention": {"log_days": 45}}, "only these retention days"),
        ({"functions": {"api": {"memory_mb": 1024, "timeout_seconds": 60}}}, "<= 29"),
        ({"network": {"interface_endpoints": ["bedrock-runtime", "ec2"]}}, "unknown endpoints ['ec2']"),
        ({"region": "Frankfurt"}, "is not an AWS region name"),
        ({"alarms": {"email": "not-an-address"}}, "is not an e-mail address"),
        ({"tenantz": []}, "tenantz: unknown key"),
    ],
)
def test_bad_values_are_refused_with_the_key_path_and_the_fix(change: dict[str, Any], expected: str) -> None:
    # Given the shipped config with one bad value
    raw = {**_shipped(), **change}
    # When it is validated, Then the message names the key and says what is allowed
    message = _error_for(raw)
    assert message.startswith(f"invalid deployment configuration (cdk.json context '{CONTEXT_KEY}')")
    assert expected in message


def test_every_bad_value_is_reported_at_once() -> None:
    message = _error_for({"embedding": {"dimensions": 0}, "retention": {"log_days": 2}})
    assert "embedding.dimensions" in message and "retention.log_days" in message


def test_context_given_as_json_on_the_command_line_is_accepted() -> None:
    # cdk synth -c agent-memory='{"tenants": [...]}' passes the value as a string
    raw = json.dumps({"tenants": [{"id": "acme", "display_name": "Acme"}]})
    assert DeploymentConfig.from_context(raw).tenant_ids == ("acme",)
    assert "not valid JSON" in _error_for("{tenants: nope")
    assert "must be a JSON object" in _error_for([1, 2])


def test_missing_context_says_where_to_put_it() -> None:
    assert "cdk.json has no 'agent-memory' context" in _error_for(None)


def test_synth_fails_before_building_anything_when_the_config_is_bad() -> None:
    from app import build_app

    # Given an app whose context has an invalid tenant id
    app = cdk.App(context={CONTEXT_KEY: {"tenants": [{"id": "-bad", "display_name": "x"}]}})
    # When the app is built, Then it stops with the config error and creates no stack
    with pytest.raises(ConfigError, match=r"tenants\.0\.id"):
        build_app(app)
    assert not [c for c in app.node.children if isinstance(c, cdk.Stack)]


def test_pinned_region_makes_the_stack_environment_specific() -> None:
    from app import build_app

    context = load_cdk_json_context(ROOT / "cdk.json")  # feature flags included, as the CLI passes them
    context[CONTEXT_KEY] = {**_shipped(), "account": "123456789012", "region": "eu-central-1"}
    app = cdk.App(context={**context, "aws:cdk:bundling-stacks": []})
    build_app(app)
    (stack,) = [c for c in app.node.children if isinstance(c, cdk.Stack)]
    assert stack.region == "eu-central-1"
    assert stack.account == "123456789012"


def test_skip_layer_build_switch_turns_off_bundling_for_offline_synth() -> None:
    from app import SKIP_LAYER_BUILD, build_app

    context = load_cdk_json_context(ROOT / "cdk.json")
    app = cdk.App(context={**context, SKIP_LAYER_BUILD: "true"})
    build_app(app, nag=False)
    assert app.node.try_get_context("aws:cdk:bundling-stacks") == []
    (stack,) = [c for c in app.node.children if isinstance(c, cdk.Stack)]
    assert stack.bundling_required is False
