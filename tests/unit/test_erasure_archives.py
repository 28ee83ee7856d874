"""The purge of embedding-migration archives on the local runtime (domain/erasure/archives.py, issue 18 gap
2): a memory, subject, namespace or tenant purge rewrites the parts of `archive/<tenant>/<migration>/` without
the purged vectors and the manifest with matching counts and SHA-256 (the archive still verifies); other
tenants' archives are untouched; a part cut short by a crash is completed by the resumed purge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_memory.adapters.local.migration import LocalIndexCatalog, _verify
from agent_memory.adapters.local.search_index import LocalSearchIndex
from agent_memory.domain.erasure.archives import ArchivedVectors, names_vector
from agent_memory.domain.erasure.model import EraseScope, PurgeKind, PurgeState, PurgeTarget
from agent_memory.domain.memory.service import RememberInput
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import LocalRuntime, build_local

SECRET = "Harbour gate code is 4417 for the night shift"


@pytest.fixture
def runtime(tmp_path: Path) -> LocalRuntime:
    return build_local(Settings(data_dir=tmp_path, embedder="hashing"))


def _seed(runtime: LocalRuntime, tenant: str) -> list[str]:
    memory = runtime.services.memory
    ids = [
        memory.remember(tenant, RememberInput(text, namespace), actor="t").record.id
        for text, namespace in (
            (SECRET, "/ops"),
            ("The ferry leaves at noon", "/ops"),
            ("Standups start at nine sharp", "/team"),
        )
    ]
    catalog = LocalIndexCatalog(runtime.data_dir, LocalSearchIndex(runtime.data_dir / "index"))
    receipt = catalog.export(tenant, "", "mig_1")
    assert receipt.vectors == receipt.verified_count == 3
    return ids


def _lines(runtime: LocalRuntime, tenant: str) -> list[dict]:
    folder = runtime.data_dir / "archive" / tenant / "mig_1"
    return [
        json.loads(line) for part in sorted(folder.glob("*.jsonl")) for line in part.read_text().splitlines()
    ]


def _manifest(runtime: LocalRuntime, tenant: str) -> Path:
    return runtime.data_dir / "archive" / tenant / "mig_1" / "manifest.json"


def test_a_memory_purge_removes_its_vector_from_the_archive_and_the_archive_still_verifies(
    runtime: LocalRuntime,
) -> None:
    ids = _seed(runtime, "acme")
    other = _seed(runtime, "beta")
    before_beta = _lines(runtime, "beta")
    erasure = runtime.services.erasure
    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.MEMORY, record_id=ids[0]), actor="key:admin")
    finding = next(f for f in plan.plan if f.store == "archives")
    assert finding.items == 1 and finding.refs == ["vectors-00000.jsonl:1"]
    done = erasure.execute("acme", plan.id, reason="erasure request", actor="key:admin")
    assert done.state is PurgeState.COMPLETED and done.verification.remaining == 0
    assert {line["id"] for line in _lines(runtime, "acme")} == set(ids[1:])
    assert _verify(_manifest(runtime, "acme")) == 2  # counts and SHA-256 rewritten consistently
    assert json.loads(_manifest(runtime, "acme").read_text())["purges"] == [plan.id]
    assert _lines(runtime, "beta") == before_beta and other[0] in {line["id"] for line in before_beta}


def test_namespace_and_tenant_purges_empty_what_they_cover(runtime: LocalRuntime) -> None:
    ids = _seed(runtime, "acme")
    erasure = runtime.services.erasure
    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.NAMESPACE, namespace="/team"), actor="key:admin")
    assert next(f for f in plan.plan if f.store == "archives").items == 1
    assert erasure.execute("acme", plan.id, reason="r", actor="a").state is PurgeState.COMPLETED
    assert {line["id"] for line in _lines(runtime, "acme")} == set(ids[:2])
    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.TENANT), actor="key:admin")
    assert next(f for f in plan.plan if f.store == "archives").items == 2
    assert erasure.execute("acme", plan.id, reason="r", actor="a").state is PurgeState.COMPLETED
    assert _lines(runtime, "acme") == [] and _verify(_manifest(runtime, "acme")) == 0


def test_a_rewrite_interrupted_after_the_manifest_is_completed_when_the_purge_resumes(
    runtime: LocalRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _seed(runtime, "acme")
    erasure = runtime.services.erasure
    step = next(s for s in erasure.steps() if s.name == "archives")
    assert isinstance(step, ArchivedVectors)
    import agent_memory.adapters.local.erasure as local_erasure

    real = local_erasure._replace
    calls = {"n": 0}

    def crash_after_the_manifest(path: Path, data: bytes) -> None:
        calls["n"] += 1
        if path.name.endswith(".jsonl") and calls["n"] == 2:
            raise OSError("disk went away")
        real(path, data)

    monkeypatch.setattr(local_erasure, "_replace", crash_after_the_manifest)
    plan = erasure.plan("acme", PurgeTarget(kind=PurgeKind.MEMORY, record_id=ids[0]), actor="key:admin")
    with pytest.raises(OSError):
        erasure.execute("acme", plan.id, reason="r", actor="a")
    assert ids[0] in {line["id"] for line in _lines(runtime, "acme")}  # the part is intact, not half-written
    done = erasure.execute("acme", plan.id, reason="r", actor="a")
    assert done.state is PurgeState.COMPLETED
    assert ids[0] not in {line["id"] for line in _lines(runtime, "acme")}
    assert _verify(_manifest(runtime, "acme")) == 2


def test_a_vector_line_is_matched_by_key_namespace_or_text_never_by_its_numbers() -> None:
    scope = EraseScope("acme", PurgeKind.SUBJECT, ("rec_1",), ("Marit Quell",), ("/a",), "Marit Quell")
    assert names_vector(scope, json.dumps({"key": "rec_1", "data": {"float32": [0.1]}}))
    assert names_vector(scope, json.dumps({"key": "r2", "metadata": {"text": "ask marit  quell first"}}))
    assert not names_vector(scope, json.dumps({"key": "r3", "metadata": {"namespace": "/a", "text": "x"}}))
    assert not names_vector(scope, json.dumps({"id": "r4", "namespace": "/b", "vector": [0.5, 0.25]}))
    whole = EraseScope("acme", PurgeKind.NAMESPACE, (), (), ("/a",))
    assert names_vector(whole, json.dumps({"key": "r3", "metadata": {"namespace": "/a"}}))
    assert names_vector(whole, json.dumps({"id": "r5", "namespace": "/a", "vector": [0.5]}))
