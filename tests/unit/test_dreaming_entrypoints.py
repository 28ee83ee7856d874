"""The on-demand entry points: POST /v1/admin/dream (admin scope) through the shared resolver with the API
Gateway authorizer context, and `agent-memory dream` through its argparse hook."""

from __future__ import annotations

import argparse
import json
from types import SimpleNamespace
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from dreaming_world import NS, TENANT, World
from pydantic import ValidationError

from agent_memory.adapters.posix.namespace_dirs import list_namespace_dirs
from agent_memory.api.app import PREFIX, create_app
from agent_memory.api.auth import authorizer_context_authenticator
from agent_memory.api.context import Services
from agent_memory.cli.dream import add_dream_parser, run_dream
from agent_memory.domain.dreaming.sweep import DreamingService
from agent_memory.settings.dreaming import DreamingSettings

INVOICES = "Invoices are generated on the first day of each month by the billing cron job"


class LambdaContext:
    function_name = "agent-memory-api"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:eu-west-1:123456789012:function:agent-memory-api"
    aws_request_id = "req-1"


def event(body: Any, *, namespaces: str = "*", scopes: str = "read,write,admin") -> dict[str, Any]:
    authorizer = {
        "principalId": "k1",
        "tenant": TENANT,
        "namespaces": namespaces,
        "scopes": scopes,
        "key_id": "k1",
    }
    path = f"{PREFIX}/admin/dream"
    return {
        "resource": "/v1/{proxy+}",
        "path": path,
        "httpMethod": "POST",
        "headers": {"Content-Type": "application/json"},
        "multiValueHeaders": {"Content-Type": ["application/json"]},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": {"proxy": "admin/dream"},
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/v1/{proxy+}",
            "httpMethod": "POST",
            "path": f"/live{path}",
            "stage": "live",
            "requestId": "req-1",
            "identity": {"sourceIp": "127.0.0.1"},
            "authorizer": authorizer,
        },
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


@pytest.fixture
def world(tmp_path, clock) -> World:
    world = World.build(tmp_path, clock)
    world.short_term(INVOICES)
    world.recall_daily(
        [
            "when are invoices generated",
            "invoice generation schedule",
            "billing cron job day",
            "first day month invoices",
        ]
    )
    return world


def call(world: World, body: Any, *, wired: bool = True, **who: Any) -> tuple[int, dict[str, Any]]:
    dreaming = world.dreaming() if wired else None
    services = Services(memory=world.memory, files=world.files, dreaming=dreaming)
    app = create_app(
        APIGatewayRestResolver(enable_validation=True), lambda: services, authorizer_context_authenticator
    )
    result = app.resolve(event(body, **who), LambdaContext())
    return result["statusCode"], json.loads(result["body"])


def test_given_admin_dry_run_then_every_decision_explained_and_nothing_written(world):
    status, body = call(world, {"namespace": NS, "dry_run": True})

    assert status == 200, body
    (run,) = body["runs"]
    assert run["dry_run"] is True and run["status"] == "completed"
    (candidate,) = run["candidates"]
    assert candidate["decision"] == "promoted" and candidate["text"] == INVOICES
    assert set(candidate["signals"]) == {
        "frequency",
        "relevance",
        "diversity",
        "recency",
        "consolidation",
        "conceptual",
    }
    assert candidate["gates"]["min_unique_queries"] == {"value": 4.0, "threshold": 3.0, "passed": True}
    assert world.memory_md() == [] and world.dream_files() == []


def test_given_admin_run_without_namespace_then_every_namespace_is_swept(world):
    status, body = call(world, {})
    assert status == 200, body
    assert [run["namespace"] for run in body["runs"]] == [NS]
    assert body["runs"][0]["summary"]["decisions"] == {"promoted": 1}
    assert world.memory_md() == [INVOICES]


def test_given_keys_without_the_right_scope_or_namespaces_then_forbidden(world):
    assert call(world, {"namespace": NS}, scopes="read,write")[0] == 403
    assert call(world, {}, namespaces="/projects/billing")[0] == 403
    assert call(world, {"namespace": "/projects/other"}, namespaces="/projects/billing")[0] == 403
    assert call(world, {"namespace": NS, "explain": 5000})[0] == 422
    assert world.memory_md() == []


def test_given_no_dreaming_service_wired_then_501(world):
    status, body = call(world, {"namespace": NS}, wired=False)
    assert status == 501 and body["error"] == "not_configured" and "not configured" in body["message"]


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="agent-memory")
    parser.add_argument("--tenant", default=TENANT)
    add_dream_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def test_given_cli_dry_run_then_the_report_is_printed_and_nothing_written(world, capsys):
    runtime = SimpleNamespace(services=SimpleNamespace(dreaming=world.dreaming()))

    assert run_dream(parse(["dream", "--dry-run", "-n", NS]), runtime) == 0

    out = capsys.readouterr().out
    assert "(dry run: nothing written)" in out and "## Promoted (1)" in out and INVOICES in out
    assert world.dream_files() == []


def test_given_cli_runs_twice_then_json_first_and_already_swept_second(world, capsys):
    # After the first sweep the namespace has no short-term record left: it is found by its files directory.
    service = DreamingService(
        world.memory,
        world.store,
        world.files,
        world.clock,
        namespace_lister=lambda tenant: list_namespace_dirs(world.root / "files", tenant),
    )
    runtime = SimpleNamespace(services=SimpleNamespace(dreaming=service))

    run_dream(parse(["dream", "--json"]), runtime)
    (report,) = json.loads(capsys.readouterr().out)
    run_dream(parse(["dream"]), runtime)

    assert report["namespace"] == NS and report["summary"]["decisions"] == {"promoted": 1}
    assert "already swept" in capsys.readouterr().out
    assert world.memory_md() == [INVOICES]


def test_given_cli_without_the_wiring_then_a_clear_error(world):
    with pytest.raises(RuntimeError, match="dreaming is not wired"):
        run_dream(parse(["dream"]), SimpleNamespace(services=SimpleNamespace()))


def test_given_dreaming_environment_when_parsed_then_typed_settings_and_clear_errors(monkeypatch):
    monkeypatch.setenv("AGENT_MEMORY_DREAMING_CONFIG", '{"gates": {"min_score": 0.75}, "max_promotions": 4}')
    monkeypatch.setenv("AGENT_MEMORY_DREAMING_TENANTS", '["acme", "beta-co"]')
    monkeypatch.setenv("AGENT_MEMORY_DREAMING_NAMESPACES", '{"acme": ["/projects/billing"]}')
    settings = DreamingSettings()
    assert settings.config.gates.min_score == 0.75 and settings.config.max_promotions == 4
    assert settings.config.weights.relevance == 0.30  # the rest keeps the design's defaults
    assert settings.tenants == ["acme", "beta-co"] and settings.namespaces == {"acme": ["/projects/billing"]}
    monkeypatch.setenv("AGENT_MEMORY_DREAMING_TENANTS", '["Not A Tenant"]')
    with pytest.raises(ValidationError, match="invalid tenant"):
        DreamingSettings()
