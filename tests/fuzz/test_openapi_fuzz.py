"""Schemathesis from docs/openapi.json against the local server (ASGI) and the Lambda handler (moto); what
is checked and how is in harness.py. `pytest -m fuzz` runs only this suite (`-m "not fuzz"` skips it);
AGENT_MEMORY_FUZZ_EXAMPLES changes the fuzzing examples per operation (default harness.FUZZ_EXAMPLES)."""

from __future__ import annotations

import json
import os

import pytest
from schemathesis import Case

from tests.fuzz.harness import SPEC_PATH, Target, load_schema, run_case, undocumented_statuses

pytestmark = pytest.mark.fuzz

# The coverage phase (most of the cases) runs on the local runtime, where a case costs a few milliseconds; the
# Lambda handler on moto gets the examples and fuzzing phases, and the coverage phase too when
# AGENT_MEMORY_FUZZ_FULL=1 (about three times as long).
local_schema = load_schema(coverage=True)
aws_schema = load_schema(coverage=os.environ.get("AGENT_MEMORY_FUZZ_FULL") == "1")


@local_schema.parametrize()
def test_local_server(case: Case, local_fuzz_target: Target) -> None:
    run_case(local_fuzz_target, case)


@aws_schema.parametrize()
def test_lambda_handler(case: Case, aws_fuzz_target: Target) -> None:
    run_case(aws_fuzz_target, case)


def test_document_describes_every_status() -> None:
    """The fuzzing is judged against the committed document as it is: it must describe the 201/202 of the
    create routes and every refusal, each as an ErrorBody, never Powertools' HTTPValidationError."""
    text = SPEC_PATH.read_text(encoding="utf-8")
    missing = undocumented_statuses(json.loads(text))
    assert not missing, json.dumps(missing, indent=1)
    assert "HTTPValidationError" not in text
