"""The file function's `purge` operation (domain/erasure): deletes any file of a namespace, but only for a
named purge plan; `delete` stays limited to `.dreams/`; confinement is the same as for every operation."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_memory.adapters.aws.remote_file_store import RemoteFileStore
from agent_memory.domain.errors import ValidationFailed
from tests.aws.file_function import FILE_FUNCTION, file_function_serving, in_process_lambda_client

NS = "/projects/billing"
PLAN = "purge_" + "0123456789abcdef" * 2


@pytest.fixture
def remote(tmp_path: Path):
    with file_function_serving(tmp_path):
        yield RemoteFileStore(in_process_lambda_client(), FILE_FUNCTION)


def test_purge_deletes_any_file_for_a_named_plan_only(remote: RemoteFileStore) -> None:
    remote.update("acme", NS, "MEMORY.md", lambda _: "Ada prefers tea")
    remote.update("acme", NS, "memory/2026-11-30.md", lambda _: "- noted")
    with pytest.raises(ValidationFailed, match=r"only files under \.dreams/"):
        remote.delete("acme", NS, "MEMORY.md")  # the housekeeping delete is unchanged
    for plan in ("", "purge_x", "../" + PLAN):
        with pytest.raises(ValidationFailed, match="purge needs `plan`"):
            remote.purge_file("acme", NS, "MEMORY.md", plan)
    assert remote.read("acme", NS, "MEMORY.md") == "Ada prefers tea"
    assert remote.purge_file("acme", NS, "MEMORY.md", PLAN) is True
    assert remote.purge_file("acme", NS, "MEMORY.md", PLAN) is False  # already gone: idempotent
    assert remote.read("acme", NS, "MEMORY.md") is None
    assert remote.read("acme", NS, "memory/2026-11-30.md") == "- noted"
    with pytest.raises(ValidationFailed):
        remote.purge_file("acme", NS, "../../globex/projects/billing/MEMORY.md", PLAN)
