"""The committed OpenAPI document is the generated one (refresh: `make openapi`)."""

from __future__ import annotations

import json
from pathlib import Path

from agent_memory.api.openapi import openapi_document

COMMITTED = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_committed_openapi_matches_the_routes():
    generated = json.loads(json.dumps(openapi_document(), sort_keys=True))
    committed = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert committed == generated, "docs/openapi.json is stale: run `make openapi`"


def test_every_v1_operation_is_documented_with_a_security_requirement():
    document = openapi_document()
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    operations = [
        op for path, item in document["paths"].items() for op in item.values() if path != "/v1/health"
    ]
    assert len(operations) >= 18
