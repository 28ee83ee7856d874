"""The file function (`handlers/files.py`) and the remote file store that invokes it (the `lean` profile).

The handler is called the way Lambda calls it; the remote store talks to it through a real botocore Lambda
client whose Invoke is answered in-process (tests/aws/file_function.py), so request shapes are the service
model's and the IAM contract records every Invoke.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from agent_memory.adapters.aws.remote_file_store import RemoteFileStore
from agent_memory.adapters.file_rpc import MAX_FILE_BYTES, MAX_PAYLOAD_BYTES, error_from, version_of
from agent_memory.adapters.posix.file_server import FileServer
from agent_memory.adapters.posix.file_store import PosixFileStore
from agent_memory.domain.errors import (
    CapExceeded,
    ConcurrentModification,
    DuplicateEntry,
    PathEscape,
    TooLarge,
    UpstreamFailed,
    UpstreamUnavailable,
    ValidationFailed,
)
from agent_memory.domain.files.memory_files import MemoryFilesService
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.domain.retry import CONCURRENT_WRITE
from agent_memory.handlers import files as files_handler
from tests.aws.file_function import (
    FILE_FUNCTION,
    FileFunctionContext,
    InvokeLog,
    file_function_serving,
    in_process_lambda_client,
)

NS = "/projects/billing"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "mnt-memory"
    path.mkdir()
    return path


@pytest.fixture
def invoke(root: Path):
    """The Lambda handler of the file function, serving `root`."""
    with file_function_serving(root):
        yield lambda event: files_handler.handler(event, FileFunctionContext())


@pytest.fixture
def log() -> InvokeLog:
    return InvokeLog()


@pytest.fixture
def remote(root: Path, log: InvokeLog):
    with file_function_serving(root):
        yield RemoteFileStore(in_process_lambda_client(log), FILE_FUNCTION)


# --------------------------------------------------------------------------- the handler


def test_each_operation_of_the_handler(invoke, root: Path) -> None:
    base = {"tenant": "acme", "namespace": NS}
    assert invoke({"op": "read", **base, "path": "MEMORY.md"}) == {
        "ok": True,
        "result": {"text": None, "version": None},
    }
    written = invoke({"op": "write", **base, "path": "MEMORY.md", "text": "one\n", "expected": None})
    assert written == {"ok": True, "result": {"version": version_of("one\n")}}
    assert (root / "acme" / "projects" / "billing" / "MEMORY.md").read_text() == "one\n"
    assert invoke({"op": "read", **base, "path": "MEMORY.md"})["result"] == {
        "text": "one\n",
        "version": version_of("one\n"),
    }
    assert invoke({"op": "append", **base, "path": "memory/2026-12-01.md", "text": "- a\n"})["ok"]
    assert invoke({"op": "append", **base, "path": "memory/2026-12-01.md", "text": "- b\n"})["ok"]
    assert (root / "acme" / "projects" / "billing" / "memory" / "2026-12-01.md").read_text() == "- a\n- b\n"
    assert invoke({"op": "list", **base})["result"] == {"paths": ["MEMORY.md", "memory/2026-12-01.md"]}
    assert invoke({"op": "list", **base, "prefix": "memory/"})["result"] == {
        "paths": ["memory/2026-12-01.md"]
    }
    assert invoke({"op": "namespaces", "tenant": "acme"})["result"] == {"namespaces": [NS]}
    assert invoke({"op": "namespaces", "tenant": "globex"})["result"] == {"namespaces": []}


def test_a_write_is_a_compare_and_swap_on_the_version_read(invoke, root: Path) -> None:
    base = {"tenant": "acme", "namespace": NS, "path": "MEMORY.md"}
    invoke({"op": "write", **base, "text": "v1", "expected": None})
    # A writer that read before v1 existed (expected: absent) is refused, and v1 stays
    stale = invoke({"op": "write", **base, "text": "lost", "expected": None})
    assert stale["ok"] is False and stale["error"]["code"] == "concurrent_modification"
    assert (root / "acme" / "projects" / "billing" / "MEMORY.md").read_text() == "v1"
    # So is one holding another version; the holder of v1's version wins
    assert invoke({"op": "write", **base, "text": "x", "expected": version_of("v0")})["ok"] is False
    assert invoke({"op": "write", **base, "text": "v2", "expected": version_of("v1")})["ok"] is True
    assert (root / "acme" / "projects" / "billing" / "MEMORY.md").read_text() == "v2"
    # A write must say what it read
    missing = invoke({"op": "write", **base, "text": "v3"})
    assert missing["error"]["code"] == "validation_failed"


@pytest.mark.parametrize(
    ("event", "code"),
    [
        (
            {"op": "read", "tenant": "acme", "namespace": NS, "path": "../../globex/p/MEMORY.md"},
            "path_escape",
        ),
        ({"op": "read", "tenant": "acme", "namespace": NS, "path": "/etc/passwd"}, "path_escape"),
        (
            {"op": "write", "tenant": "acme", "namespace": NS, "path": "x.sh", "text": "", "expected": None},
            None,
        ),
        ({"op": "read", "tenant": "../globex", "namespace": NS, "path": "MEMORY.md"}, "validation_failed"),
        ({"op": "read", "tenant": "ACME", "namespace": NS, "path": "MEMORY.md"}, "validation_failed"),
        ({"op": "read", "tenant": "acme", "namespace": "/p/../../globex", "path": "MEMORY.md"}, None),
        ({"op": "list", "tenant": "acme", "namespace": NS, "prefix": "../"}, None),
        ({"op": "namespaces", "tenant": "../"}, "validation_failed"),
        ({"op": "read", "tenant": ["acme"], "namespace": NS, "path": "MEMORY.md"}, "validation_failed"),
        ({"op": "read", "tenant": "acme", "namespace": NS, "path": 7}, "validation_failed"),
        (
            {
                "op": "write",
                "tenant": "acme",
                "namespace": NS,
                "path": "MEMORY.md",
                "text": "x",
                "expected": 1,
            },
            None,
        ),
        ({"op": "delete", "tenant": "acme", "namespace": NS, "path": "MEMORY.md"}, "validation_failed"),
        ({"tenant": "acme"}, "validation_failed"),
    ],
)
def test_the_handler_trusts_no_field_of_the_request(
    invoke, root: Path, event: dict, code: str | None
) -> None:
    (root / "globex" / "p").mkdir(parents=True)
    (root / "globex" / "p" / "MEMORY.md").write_text("globex's memory")
    before = sorted(str(p) for p in root.rglob("*"))

    response = invoke(event)

    assert response["ok"] is False
    assert response["error"]["code"] == (code or response["error"]["code"])
    assert isinstance(error_from(response["error"]), ValidationFailed)  # 422 family, never a 5xx
    assert sorted(str(p) for p in root.rglob("*")) == before, "a refused request created nothing"
    assert (root / "globex" / "p" / "MEMORY.md").read_text() == "globex's memory"


def test_a_symbolic_link_cannot_lead_the_file_function_to_another_tenant(invoke, root: Path) -> None:
    (root / "globex" / "p").mkdir(parents=True)
    (root / "globex" / "p" / "MEMORY.md").write_text("secret")
    (root / "acme" / "p").mkdir(parents=True)
    os.symlink(root / "globex" / "p" / "MEMORY.md", root / "acme" / "p" / "MEMORY.md")

    response = invoke({"op": "read", "tenant": "acme", "namespace": "/p", "path": "MEMORY.md"})

    assert response["error"]["code"] == "path_escape"
    assert "secret" not in json.dumps(response)


def test_a_file_too_large_for_an_invocation_is_refused_not_truncated(invoke, root: Path) -> None:
    directory = root / "acme" / "p"
    directory.mkdir(parents=True)
    (directory / "MEMORY.md").write_text("x" * (MAX_FILE_BYTES + 1))

    response = invoke({"op": "read", "tenant": "acme", "namespace": "/p", "path": "MEMORY.md"})

    assert response["error"]["code"] == "too_large"
    big = invoke(
        {
            "op": "write",
            "tenant": "acme",
            "namespace": "/p",
            "path": "USER.md",
            "text": "y" * (MAX_FILE_BYTES + 1),
        }
    )
    assert big["error"]["code"] == "too_large"
    assert not (directory / "USER.md").exists()


def test_an_answer_over_the_lambda_payload_limit_becomes_too_large(root: Path) -> None:
    # Control characters are escaped six-fold in JSON: a file under the byte cap can still make an answer
    # larger than Lambda returns; the file function says so instead of failing the invocation.
    directory = root / "acme" / "p"
    directory.mkdir(parents=True)
    (directory / "MEMORY.md").write_text("\x01" * (MAX_FILE_BYTES - 1))

    response = FileServer(root).handle(
        {"op": "read", "tenant": "acme", "namespace": "/p", "path": "MEMORY.md"}
    )

    assert response["error"]["code"] == "too_large"
    assert response["error"]["details"]["limit"] == MAX_PAYLOAD_BYTES


# --------------------------------------------------------------------------- the remote store


def test_the_remote_store_reads_writes_appends_and_lists_through_invoke(
    remote: RemoteFileStore, root: Path, log: InvokeLog
) -> None:
    assert remote.read("acme", NS, "MEMORY.md") is None
    assert remote.update("acme", NS, "MEMORY.md", lambda text: (text or "") + "- one\n") == "- one\n"
    assert remote.update("acme", NS, "MEMORY.md", lambda text: (text or "") + "- two\n") == "- one\n- two\n"
    remote.append("acme", NS, "memory/2026-12-01.md", "- note\n")
    assert remote.read("acme", NS, "MEMORY.md") == "- one\n- two\n"
    assert remote.list("acme", NS) == ["MEMORY.md", "memory/2026-12-01.md"]
    assert remote.list_namespaces("acme") == [NS]
    assert (root / "acme" / "projects" / "billing" / "MEMORY.md").read_text() == "- one\n- two\n"
    # Every call is a synchronous Invoke of the named function, as botocore serialised it
    assert {r["function"] for r in log.requests} == {FILE_FUNCTION}
    assert {r["invocation_type"] for r in log.requests} == {b"RequestResponse"}


def test_delete_removes_one_confined_file_on_both_stores(remote: RemoteFileStore, root: Path) -> None:
    remote.update("acme", NS, ".dreams/2026-11-01/run.json", lambda _: "{}")
    remote.update("acme", NS, ".dreams/2026-11-01/done.json", lambda _: "{}")
    assert remote.delete("acme", NS, ".dreams/2026-11-01/run.json") is True
    assert remote.delete("acme", NS, ".dreams/2026-11-01/run.json") is False  # already gone
    assert remote.delete("acme", NS, ".dreams/2026-12-24/run.json") is False  # no such directory
    assert remote.read("acme", NS, ".dreams/2026-11-01/run.json") is None
    assert remote.read("acme", NS, ".dreams/2026-11-01/done.json") == "{}"  # the other file stays
    with pytest.raises(ValidationFailed):  # confined like every other operation
        remote.delete("acme", NS, "../../globex/projects/billing/MEMORY.md")
    local = PosixFileStore(root)
    assert local.delete("acme", NS, ".dreams/2026-11-01/done.json") is True
    assert not (root / "acme" / "projects" / "billing" / ".dreams" / "2026-11-01" / "done.json").exists()


def test_an_unchanged_update_writes_nothing(remote: RemoteFileStore, log: InvokeLog) -> None:
    remote.update("acme", NS, "MEMORY.md", lambda text: "same")
    calls = len(log.requests)
    assert remote.update("acme", NS, "MEMORY.md", lambda text: text or "") == "same"
    assert len(log.requests) == calls + 1  # the read only


def test_errors_of_the_file_function_come_back_as_the_same_domain_errors(remote: RemoteFileStore) -> None:
    with pytest.raises(PathEscape):
        remote.read("acme", NS, "../../globex/p/MEMORY.md")
    with pytest.raises(ValidationFailed, match="invalid tenant"):
        remote.list("../globex", NS)
    with pytest.raises(ValidationFailed):
        remote.update("acme", NS, "notes.exe", lambda text: "x")


def test_a_failing_change_writes_nothing(remote: RemoteFileStore, root: Path) -> None:
    remote.update("acme", NS, "MEMORY.md", lambda text: "kept")

    def over_cap(text: str | None) -> str:
        raise CapExceeded("MEMORY.md would exceed its cap", used=10, limit=5)

    with pytest.raises(CapExceeded):
        remote.update("acme", NS, "MEMORY.md", over_cap)
    assert remote.read("acme", NS, "MEMORY.md") == "kept"


def test_a_concurrent_writer_makes_the_update_retry_from_a_fresh_read(
    remote: RemoteFileStore, root: Path
) -> None:
    # Given a change that, on its first run only, lets another writer change the file after the read
    remote.update("acme", NS, "MEMORY.md", lambda text: "- a\n")
    runs: list[str | None] = []

    def change(text: str | None) -> str:
        runs.append(text)
        if len(runs) == 1:
            (root / "acme" / "projects" / "billing" / "MEMORY.md").write_text("- a\n- other\n")
        return (text or "") + "- mine\n"

    # Then the conditional write is refused, the change runs again on the new text, and nothing is lost
    assert remote.update("acme", NS, "MEMORY.md", change) == "- a\n- other\n- mine\n"
    assert runs == ["- a\n", "- a\n- other\n"]
    assert remote.read("acme", NS, "MEMORY.md") == "- a\n- other\n- mine\n"


def test_an_update_that_always_loses_gives_up_with_a_conflict(root: Path) -> None:
    with file_function_serving(root):
        pauses: list[float] = []
        remote = RemoteFileStore(
            in_process_lambda_client(), FILE_FUNCTION, max_attempts=3, sleep=pauses.append
        )
        target = root / "acme" / "projects" / "billing" / "MEMORY.md"
        remote.update("acme", NS, "MEMORY.md", lambda text: "0")
        runs = []

        def change(text: str | None) -> str:
            runs.append(text)
            target.write_text(str(len(runs)))  # someone else always writes in between
            return "mine"

        with pytest.raises(ConcurrentModification, match="3 attempts"):
            remote.update("acme", NS, "MEMORY.md", change)
        assert len(runs) == 3
        assert target.read_text() == "3"
        # full-jitter pauses between the attempts (domain/retry.py), none after the last
        assert len(pauses) == 2 and all(0 <= p <= CONCURRENT_WRITE.max_delay for p in pauses)


def test_concurrent_updates_through_the_file_function_lose_no_write(remote: RemoteFileStore) -> None:
    def add(n: int) -> None:
        remote.update("acme", NS, "MEMORY.md", lambda text: (text or "") + f"- {n}\n")

    threads = [threading.Thread(target=add, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = (remote.read("acme", NS, "MEMORY.md") or "").splitlines()
    assert sorted(lines) == [f"- {n}" for n in range(4)]


def test_a_crashed_file_function_is_upstream_unavailable(remote: RemoteFileStore, monkeypatch) -> None:
    def crash(self: Any, request: Any) -> dict:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(FileServer, "handle", crash)
    with pytest.raises(UpstreamUnavailable, match="the file function failed during read"):
        remote.read("acme", NS, "MEMORY.md")


def test_a_request_over_the_payload_limit_is_refused_before_invoking(
    remote: RemoteFileStore, log: InvokeLog
) -> None:
    with pytest.raises(TooLarge):
        remote.append("acme", NS, "memory/2026-12-01.md", "z" * (MAX_PAYLOAD_BYTES + 1))
    assert log.requests == []


def test_an_unknown_error_code_is_upstream_failed() -> None:
    error = error_from({"code": "from_a_newer_version", "message": "?"})
    assert isinstance(error, UpstreamFailed)


def test_the_memory_files_service_behaves_the_same_on_the_remote_store(remote: RemoteFileStore) -> None:
    # The domain service over the remote store: entry rules and caps still apply (409 with used/limit)
    from agent_memory.adapters.clock import SystemClock
    from agent_memory.domain import safety

    caps = MemoryPolicy().caps
    service = MemoryFilesService(remote, caps, safety.first_rule, SystemClock())
    service.add("acme", NS, "memory", "The invoices are due on the 5th.")
    assert "invoices" in (remote.read("acme", NS, "MEMORY.md") or "")
    with pytest.raises(DuplicateEntry):
        service.add("acme", NS, "memory", "The invoices are due on the 5th.")
    with pytest.raises(CapExceeded) as raised:
        for n in range(caps.memory_md):
            service.add("acme", NS, "memory", f"Fact number {n} about the billing project.")
    assert raised.value.details["limit"] == caps.memory_md
    assert len(remote.read("acme", NS, "MEMORY.md") or "") <= caps.memory_md


# --------------------------------------------------------------------------- wiring


def test_the_stack_s_variable_selects_the_file_function(monkeypatch) -> None:
    from agent_memory.settings.service import Settings

    monkeypatch.setenv("AGENT_MEMORY_FILE_FUNCTION", "AgentMemory-FileFunction-abc")
    assert Settings().file_function == "AgentMemory-FileFunction-abc"
    monkeypatch.delenv("AGENT_MEMORY_FILE_FUNCTION")
    assert Settings().file_function == ""


def test_the_aws_wiring_with_a_file_function_writes_through_it_not_to_a_mount(
    root: Path, tmp_path: Path, log: InvokeLog, monkeypatch
) -> None:
    from moto import mock_aws

    from agent_memory.adapters.local.embedders import HashingEmbedder
    from agent_memory.settings.service import Settings
    from agent_memory.wiring.aws import build_aws
    from agent_memory.wiring.parts import AwsClients

    no_mount = tmp_path / "no-mount-here"
    settings = Settings(
        runtime="aws",
        table="MemoryTable",
        vector_bucket="vectors",
        tenant_role_arn="arn:aws:iam::123456789012:role/TenantAccessRole",
        region="us-east-1",
        files_root=no_mount,
        file_function=FILE_FUNCTION,
    )
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(name, "testing")
    with mock_aws(), file_function_serving(root):  # moto: the other clients are built, never called
        services = build_aws(
            settings, AwsClients(lambda_=in_process_lambda_client(log)), embedder=HashingEmbedder()
        )
        services.files.add("acme", NS, "memory", "The invoices are due on the 5th.")
        assert "invoices" in services.files.read("acme", NS, "memory").text
    assert "invoices" in (root / "acme" / "projects" / "billing" / "MEMORY.md").read_text()
    assert not no_mount.exists()
    assert log.requests and {r["function"] for r in log.requests} == {FILE_FUNCTION}


def test_every_invoke_is_recorded_for_the_iam_contract(remote: RemoteFileStore) -> None:
    # tests/iam judges each recorded call against the synthesized template: the remote store's Invoke is the
    # API function's (its own role), naming the file function
    from tests.iam import recorder

    before = len(recorder.recorded())
    remote.read("acme", NS, "MEMORY.md")
    calls = [c for c in recorder.recorded()[before:] if c["service"] == "lambda"]
    assert [c["operation"] for c in calls] == ["Invoke"]
    assert calls[0]["principal"]["kind"] == "function" and calls[0]["principal"]["function"] == "api"
    assert calls[0]["params"]["FunctionName"] == FILE_FUNCTION
    assert calls[0]["params"]["InvocationType"] == "RequestResponse"


def test_the_dreaming_sweep_lists_namespaces_through_the_file_function(root: Path, log: InvokeLog) -> None:
    from agent_memory.settings.service import Settings
    from agent_memory.wiring.aws_parts import file_store
    from agent_memory.wiring.config import RuntimeSettings
    from agent_memory.wiring.parts import AwsClients

    (root / "acme" / "projects" / "billing").mkdir(parents=True)
    (root / "acme" / "projects" / "billing" / "MEMORY.md").write_text("- x\n")
    settings = Settings(runtime="aws", file_function=FILE_FUNCTION, files_root=root / "unused")
    with file_function_serving(root):
        config = RuntimeSettings.of(settings)
        store, lister = file_store(config, AwsClients(lambda_=in_process_lambda_client(log)))
        assert isinstance(store, RemoteFileStore)
        assert lister("acme") == [NS]
    assert [r["function"] for r in log.requests] == [FILE_FUNCTION]
