"""Every Lambda handler the stack deploys empties the domain's request-scoped memos (domain/memo.py) when its
invocation ends, whatever the outcome (`handlers.request_scoped`, a Powertools middleware). Here, not in
tests/unit: importing a handler starts the X-Ray SDK's UDP emitter, which the unit tests' socket guard refuses."""

from __future__ import annotations

import contextlib
import importlib
import re
from pathlib import Path

import pytest

from tests.contract.chat_fakes import FakeLambdaContext
from tests.unit.test_memo_entry_points import SECRET, fill, held

ROOT = Path(__file__).resolve().parents[2]


def _deployed_handlers() -> list[str]:
    """Every Lambda handler the stack deploys, read from the infra sources (no CDK import)."""
    names: set[str] = set()
    for path in (ROOT / "infra").rglob("*.py"):
        names |= set(re.findall(r'"agent_memory\.handlers\.(\w+\.\w+)"', path.read_text(encoding="utf-8")))
    return sorted(names)


def test_the_stack_deploys_the_handlers_this_test_calls():
    assert len(_deployed_handlers()) >= 9
    assert "api.handler" in _deployed_handlers()


@pytest.mark.parametrize("name", _deployed_handlers())
def test_every_lambda_handler_empties_the_memos_whatever_its_outcome(name: str):
    module, function = name.rsplit(".", 1)
    handler = getattr(importlib.import_module(f"agent_memory.handlers.{module}"), function)
    fill()
    with contextlib.suppress(Exception):  # a bad event fails most handlers: the memos go all the same
        handler({"task": "no-such-task", "httpMethod": "GET", "path": "/nowhere"}, FakeLambdaContext())
    assert SECRET.casefold() not in held()
