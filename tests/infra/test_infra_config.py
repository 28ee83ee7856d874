"""infra/config.py: the deployment config validates cdk.json and fails synth with actionable messages."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from infra_support import ROOT, Deferred

from infra.config import CONTEXT_KEY, ConfigError, DeploymentConfig, load_cdk_json_context

cdk = Deferred("aws_cdk")  # the jsii kernel: started by the worker that runs these tests, not at collection


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
        ({"network": {"interface_endpoints": ["sts", "logs", "kms"]}}, "no function calls ['logs', 'kms']"),
        (
            {"account": "123456789012", "region": "eu-central-1"},
            "chat_model_ids.0: 'us.anthropic.claude-haiku-4-5-20251001-v1:0' is an inference profile for US "
            "('us.'), but the stack deploys to eu-central-1 (from `region` in cdk.json), which cannot call it: use "
            "'eu.anthropic.claude-haiku-4-5-20251001-v1:0' or 'global.anthropic.claude-haiku-4-5-20251001-v1:0'",
        ),
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
    context[CONTEXT_KEY] = {
        **_shipped(),
        "account": "123456789012",
        "region": "eu-central-1",
        "chat_model_ids": ["eu.anthropic.claude-haiku-4-5-20251001-v1:0"],  # the EU profile in an EU region
    }
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


HAIKU = "anthropic.claude-haiku-4-5-20251001-v1:0"


@pytest.mark.parametrize(
    ("region", "model_id"),
    [
        ("us-east-1", f"us.{HAIKU}"),
        ("eu-central-1", f"eu.{HAIKU}"),
        ("eu-west-3", f"global.{HAIKU}"),
        ("ap-northeast-1", f"jp.{HAIKU}"),
        ("ap-northeast-1", f"apac.{HAIKU}"),
        ("ap-southeast-2", f"au.{HAIKU}"),
        ("ap-south-1", f"apac.{HAIKU}"),
        ("ca-central-1", f"ca.{HAIKU}"),
        ("us-gov-west-1", f"us-gov.{HAIKU}"),
        ("sa-east-1", "anthropic.claude-3-haiku-20240307-v1:0"),  # a model id without a profile prefix
    ],
)
def test_models_of_the_regions_geography_are_accepted(region: str, model_id: str) -> None:
    raw = {**_shipped(), "account": "123456789012", "region": region, "chat_model_ids": [model_id]}
    assert DeploymentConfig.from_context(raw).chat_model_ids == (model_id,)


@pytest.mark.parametrize(
    ("region", "change", "expected"),
    [
        ("eu-west-1", {"chat_model_ids": [f"us.{HAIKU}"]}, f"use 'eu.{HAIKU}' or 'global.{HAIKU}'"),
        ("us-west-2", {"chat_model_ids": [f"eu.{HAIKU}"]}, "is an inference profile for EU ('eu.')"),
        (
            "ap-south-1",
            {"chat_model_ids": [f"jp.{HAIKU}"]},
            "for Japan ('jp.'), but the stack deploys to ap-south-1",
        ),
        ("us-gov-west-1", {"chat_model_ids": [f"global.{HAIKU}"]}, f"use 'us-gov.{HAIKU}'"),
        ("sa-east-1", {"chat_model_ids": [f"us.{HAIKU}"]}, f"use 'global.{HAIKU}'"),
        (
            "eu-central-1",
            {"chat_model_ids": [f"eu.{HAIKU}"], "schedules": {"dreaming": {"model_id": f"apac.{HAIKU}"}}},
            "schedules.dreaming.model_id: 'apac.",
        ),
        (
            "eu-central-1",
            {
                "chat_model_ids": [f"eu.{HAIKU}"],
                "embedding": {"model_id": "us.cohere.embed-v4:0", "dimensions": 1536},
            },
            "embedding.model_id: 'us.cohere.embed-v4:0' is an inference profile for US",
        ),
    ],
)
def test_a_model_outside_the_regions_geography_fails_synth_naming_the_key_and_the_fix(
    region: str, change: dict[str, Any], expected: str
) -> None:
    message = _error_for({**_shipped(), "account": "123456789012", "region": region, **change})
    assert expected in message


def test_an_environment_agnostic_stack_checks_its_models_against_the_clis_region() -> None:
    from app import build_app

    # Given the shipped cdk.json (no region; the US chat profile) deployed where the CLI points, e.g. Frankfurt
    message = _error_for_target(_shipped(), "eu-central-1")
    assert "deploys to eu-central-1 (from the CDK CLI (CDK_DEFAULT_REGION))" in message
    assert f"use 'eu.{HAIKU}' or 'global.{HAIKU}'" in message
    # Then a US region is fine, and a region pinned in cdk.json wins over the CLI's
    assert DeploymentConfig.from_context(_shipped(), target_region="us-east-1")
    pinned = {**_shipped(), "account": "123456789012", "region": "us-west-2"}
    assert DeploymentConfig.from_context(pinned, target_region="eu-central-1").region == "us-west-2"
    # And the app passes the region on (app.py gives it CDK_DEFAULT_REGION, which the CLI sets)
    context = load_cdk_json_context(ROOT / "cdk.json")
    app = cdk.App(context={**context, "aws:cdk:bundling-stacks": []})
    with pytest.raises(ConfigError, match=r"chat_model_ids\.0"):
        build_app(app, nag=False, target_region="eu-central-1")


def _error_for_target(raw: object, target_region: str) -> str:
    with pytest.raises(ConfigError) as caught:
        DeploymentConfig.from_context(raw, target_region=target_region)
    return str(caught.value)
