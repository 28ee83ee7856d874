"""The two runtimes the fuzz suite drives (see harness.py): the local ASGI app in process and the Lambda
handler on moto, both with the `alpha` principal of tests/behaviour/conftest.py, the hashing embedder and a
chat model that always answers, so a chat turn is not a 503 for want of a model."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from agent_memory.local_server import build_asgi
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local
from tests.behaviour.conftest import PRINCIPALS, LambdaContext, _with_chat, serve_api
from tests.contract.chat_fakes import text_reply
from tests.fuzz.harness import SEED_NAMESPACE, Seeded, Target, lambda_target, local_target
from tests.fuzz.lazy_build import install

install()  # each operation's test is built when it first runs, not at every worker's collection


class AnsweringChatModel:
    model_id = "anthropic.claude-sonnet-4-5-20250929-v1:0"

    def converse(
        self,
        *,
        system: Sequence[Mapping[str, Any]],
        messages: Sequence[Mapping[str, Any]],
        tool_config: Mapping[str, Any] | None,
        inference_config: Mapping[str, Any],
    ) -> Any:
        return text_reply("Noted.")


def seed(target: Target) -> Seeded:
    status, remembered = target.request(
        "POST",
        "/v1/memories",
        None,
        {"content": "The fuzz team prefers green tea.", "namespace": SEED_NAMESPACE},
    )
    assert status in (200, 201), remembered
    status, session = target.request("POST", "/v1/sessions", None, {"namespace": SEED_NAMESPACE})
    assert status in (200, 201), session
    return Seeded(memory_id=remembered["memory"]["id"], session_id=session["session"]["id"])


def report(target: Target) -> None:
    """One line per operation and status (how many cases), to AGENT_MEMORY_FUZZ_REPORT when set."""
    path = os.environ.get("AGENT_MEMORY_FUZZ_REPORT")
    if not path:
        return
    lines = [f"{target.runtime} {op} {status} {n}" for (op, status), n in sorted(target.outcomes.items())]
    lines.append(f"{target.runtime} cases {len(target.timings)} send-seconds {sum(target.timings):.1f}")
    with open(path, "a", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def local_fuzz_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    # The fuzzer sends thousands of requests with one key, faster than its token bucket allows: without the
    # rate limit (tests/integration/test_rate_limit.py covers it), so no case nor state read is throttled.
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("fuzz-data"),
        embedder="hashing",
        rate_limit={"requests_per_second": 0},
    )
    runtime = build_local(settings)
    runtime = dataclasses.replace(
        runtime, services=_with_chat(runtime.services, settings, AnsweringChatModel())
    )
    tenant, namespaces, scopes = PRINCIPALS["alpha"]
    key = runtime.keys.create(tenant, namespaces, scopes).key
    target = local_target(
        build_asgi(settings, runtime), key, runtime.services.dream_launcher, runtime.services.jobs
    )
    target.seeded = seed(target)
    yield target
    report(target)


@pytest.fixture(scope="module")
def aws_fuzz_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    from agent_memory.handlers.api import handler

    for api in serve_api("aws", tmp_path_factory, chat_model=AnsweringChatModel()):
        client = api.client("alpha")
        target = lambda_target(client._event, lambda event: handler(event, LambdaContext()))
        target.seeded = seed(target)
        yield target
        report(target)
