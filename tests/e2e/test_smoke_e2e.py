"""The after-deploy smoke test against a deployed stack (opt-in): set AGENT_MEMORY_E2E_URL to the stack's
ApiUrl output and AGENT_MEMORY_E2E_KEY to a key with read, write and admin scopes on `/smoke/*`
(`python -m infra.onboard api-key <tenant> --namespaces '/smoke/*' --scopes read,write,admin`)."""

from __future__ import annotations

import os
import uuid

import httpx
import pytest

from infra.smoke import SmokeRun

URL = os.environ.get("AGENT_MEMORY_E2E_URL", "")
KEY = os.environ.get("AGENT_MEMORY_E2E_KEY", "")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (URL and KEY), reason="set AGENT_MEMORY_E2E_URL and AGENT_MEMORY_E2E_KEY"),
]


def test_the_deployed_stack_passes_every_smoke_step() -> None:
    client = httpx.Client(base_url=URL, headers={"Authorization": f"Bearer {KEY}"}, timeout=60)
    results = SmokeRun(client, f"/smoke/{uuid.uuid4().hex[:12]}").run()
    for result in results:
        print(result.line())
    assert all(r.ok for r in results), [r.line() for r in results if not r.ok]
