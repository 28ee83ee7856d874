"""The /v1/sessions routes through the shared resolver (create_app + the sessions router) with the API
Gateway authorizer context: status codes, response shapes, scopes and tenant/namespace isolation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from agent_memory.api.app import create_app
from agent_memory.api.auth import authorizer_context_authenticator
from agent_memory.api.context import Services
from tests.contract.chat_fakes import (
    FakeChatModel,
    FakeLambdaContext,
    api_event,
    build_stack,
    text_reply,
    tool_reply,
)

NS = "/projects/billing"


class Api:
    def __init__(self, services: Services) -> None:
        self.app = create_app(
            APIGatewayRestResolver(enable_validation=True), lambda: services, authorizer_context_authenticator
        )  # create_app includes the sessions router; including it again registered every route twice

    def call(self, method: str, path: str, body: Any = None, **who: Any) -> tuple[int, dict[str, Any]]:
        result = self.app.resolve(api_event(method, path, body, **who), FakeLambdaContext())
        return result["statusCode"], json.loads(result["body"] or "null")


@pytest.fixture
def model(clock):
    return FakeChatModel(clock=clock)


@pytest.fixture
def stack(tmp_path, clock, model):
    return build_stack(tmp_path, clock, model)


@pytest.fixture
def api(stack):
    return Api(Services(memory=stack.memory, files=stack.files, sessions=stack.sessions, chat=stack.chat))


def test_given_start_request_then_201_with_prompt_blocks_digest_and_session(api, stack):
    stack.files.add("acme", NS, "memory", "Billing runs on Postgres 16")

    status, body = api.call("POST", "/v1/sessions", {"namespace": NS, "cache_ttl": "1h"})

    assert status == 201, body
    assert body["session"]["status"] == "open" and body["session"]["namespace"] == NS
    assert body["system"][2] == {"cachePoint": {"type": "default", "ttl": "1h"}}
    assert "Billing runs on Postgres 16" in body["system"][1]["text"]
    assert body["snapshot_sha256"] == body["session"]["snapshot_sha256"]
    assert body["token_monitor"] is None  # no monitor wired in this stack


def test_given_session_when_read_after_memory_writes_then_same_blocks(api, stack):
    _, started = api.call("POST", "/v1/sessions", {"namespace": NS})
    session_id = started["session"]["id"]
    stack.files.add("acme", NS, "memory", "Written during the session")

    status, body = api.call("GET", f"/v1/sessions/{session_id}")

    assert status == 200
    assert json.dumps(body["system"]) == json.dumps(started["system"])
    assert body["turns"] == 0


def test_given_other_tenant_or_namespace_then_not_found_and_forbidden(api):
    _, started = api.call("POST", "/v1/sessions", {"namespace": NS})
    session_id = started["session"]["id"]

    assert api.call("GET", f"/v1/sessions/{session_id}", tenant="globex")[0] == 404
    assert api.call("POST", f"/v1/sessions/{session_id}/turns", {"message": "hi"}, tenant="globex")[0] == 404
    assert api.call("POST", f"/v1/sessions/{session_id}/end", tenant="globex")[0] == 404
    assert api.call("GET", f"/v1/sessions/{session_id}", namespaces="/projects/search")[0] == 404
    status, body = api.call("POST", "/v1/sessions", {"namespace": NS}, namespaces="/projects/search")
    assert status == 403 and body["error"] == "forbidden"
    assert api.call("GET", f"/v1/sessions/{session_id}")[1]["session"]["status"] == "open"


def test_given_turn_then_reply_usage_cost_and_tool_calls(api, stack, model):
    _, started = api.call("POST", "/v1/sessions", {"namespace": NS})
    session_id = started["session"]["id"]
    model.script = [
        tool_reply("memory_file_add", {"kind": "user", "content": "Likes tea"}),
        text_reply("Noted."),
    ]

    status, body = api.call("POST", f"/v1/sessions/{session_id}/turns", {"message": "I like tea"})

    assert status == 200, body
    assert body["reply"] == "Noted." and body["turn"] == 1 and body["model_calls"] == 2
    assert body["tool_calls"] == [
        {"name": "memory_file_add", "status": "success", "summary": body["tool_calls"][0]["summary"]}
    ]
    assert body["usage"] == {
        "inputTokens": 20,
        "outputTokens": 10,
        "cacheReadInputTokens": 0,
        "cacheWriteInputTokens": 0,
        "cacheWrite1hInputTokens": 0,
    }
    assert body["cost_usd"] > 0
    assert stack.files.read("acme", NS, "user").entries == ["Likes tea"]
    assert api.call("GET", f"/v1/sessions/{session_id}")[1]["turns"] == 1


def test_given_read_only_key_then_it_may_read_a_session_but_not_start_end_or_chat(api, stack, model):
    """A session is stored state (its turns, what the memory tools write): starting, ending and chatting need
    the write scope; a read-only key reads (issue 16, defect 8)."""
    status, refused = api.call("POST", "/v1/sessions", {"namespace": NS}, scopes="read")
    assert status == 403 and refused["details"]["required"] == "write"
    _, started = api.call("POST", "/v1/sessions", {"namespace": NS})
    session_id = started["session"]["id"]
    model.script = [text_reply("Sorry.")]

    assert api.call("POST", f"/v1/sessions/{session_id}/turns", {"message": "hi"}, scopes="read")[0] == 403
    assert api.call("POST", f"/v1/sessions/{session_id}/end", scopes="read")[0] == 403
    status, read = api.call("GET", f"/v1/sessions/{session_id}", scopes="read")
    assert status == 200 and read["session"]["status"] == "open" and read["turns"] == 0


def test_given_ended_session_then_turn_is_409_session_closed(api):
    _, started = api.call("POST", "/v1/sessions", {"namespace": NS})
    session_id = started["session"]["id"]

    status, ended = api.call("POST", f"/v1/sessions/{session_id}/end")
    turn_status, body = api.call("POST", f"/v1/sessions/{session_id}/turns", {"message": "hi"})

    assert status == 200 and ended["status"] == "ended" and ended["ended_at"]
    assert turn_status == 409 and body["error"] == "session_closed"


def test_given_expired_session_then_status_expired_and_turn_409(api, clock):
    _, started = api.call("POST", "/v1/sessions", {"namespace": NS})
    session_id = started["session"]["id"]
    clock.advance(hours=25)

    assert api.call("GET", f"/v1/sessions/{session_id}")[1]["session"]["status"] == "expired"
    assert api.call("POST", f"/v1/sessions/{session_id}/turns", {"message": "hi"})[0] == 409


def test_given_no_chat_model_then_turn_is_501_with_how_to_configure(tmp_path, clock):
    stack = build_stack(tmp_path, clock, model=None)
    api = Api(Services(memory=stack.memory, files=stack.files, sessions=stack.sessions, chat=stack.chat))
    _, started = api.call("POST", "/v1/sessions", {"namespace": NS})

    status, body = api.call("POST", f"/v1/sessions/{started['session']['id']}/turns", {"message": "hi"})

    assert status == 501 and body["error"] == "not_configured"
    assert "AGENT_MEMORY_CHAT_PROVIDER" in body["message"]


def test_given_runtime_without_session_services_then_501(stack):
    api = Api(Services(memory=stack.memory, files=stack.files))
    status, body = api.call("POST", "/v1/sessions", {"namespace": NS})
    assert (
        status == 501 and body["error"] == "not_configured" and "sessions are not enabled" in body["message"]
    )


def test_given_bad_bodies_then_422(api):
    assert api.call("POST", "/v1/sessions", {"namespace": "no-slash"})[0] == 422
    assert api.call("POST", "/v1/sessions", {"namespace": NS, "cache_ttl": "10m"})[0] == 422
    assert api.call("POST", "/v1/sessions", {"namespace": NS, "tenant": "globex"})[0] == 422
    _, started = api.call("POST", "/v1/sessions", {"namespace": NS})
    assert api.call("POST", f"/v1/sessions/{started['session']['id']}/turns", {"message": ""})[0] == 422
