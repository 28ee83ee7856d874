"""A new wing's service is one `WingService` entry in `wiring/parts.py` (`WING_SERVICES`): the local runtime and
the AWS builders of the functions it names build it from the same parts, with no line in `wiring/local.py` or
`wiring/aws.py`. Proved with a throwaway service on a throwaway `Services` field (what the wing's own touch
adds to `api/context.py`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_memory.api.context import Services
from agent_memory.domain.files.memory_files import MemoryFilesService
from agent_memory.domain.memory.service import MemoryService
from agent_memory.settings.service import Settings
from agent_memory.wiring import aws, local, parts
from agent_memory.wiring.config import RuntimeSettings
from agent_memory.wiring.parts import AwsClients, WingParts, WingService


@dataclass(frozen=True)
class ThingsService:
    """A throwaway wing's service: it keeps what it was built from."""

    built_from: WingParts


WithThings = dataclasses.make_dataclass(
    "Services", [("things", Any, dataclasses.field(default=None))], bases=(Services,), frozen=True
)
"""`Services` with the field a new wing adds."""


@pytest.fixture
def declared(monkeypatch: pytest.MonkeyPatch) -> Any:
    def declare(*functions: str) -> None:
        service = WingService("things", lambda wing: ThingsService(wing), functions=functions)
        monkeypatch.setattr(parts, "WING_SERVICES", (service,))

    monkeypatch.setattr(local, "Services", WithThings)
    monkeypatch.setattr(aws, "Services", WithThings)
    return declare


CLIENTS = AwsClients(sts=object(), bedrock_runtime=object(), stepfunctions=object())


def test_the_local_runtime_builds_a_declared_service_from_its_own_parts(
    declared: Any, tmp_path: Path
) -> None:
    declared("api")
    runtime = local.build_local(Settings(data_dir=tmp_path, embedder="hashing"))
    things = runtime.services.things  # type: ignore[attr-defined]
    assert isinstance(things, ThingsService)
    assert things.built_from.memory is runtime.services.memory
    assert things.built_from.files is runtime.services.files
    assert things.built_from.skills is runtime.services.skills
    assert things.built_from.store is runtime.store


def test_each_aws_function_builds_it_only_when_declared(declared: Any, aws_settings: RuntimeSettings) -> None:
    declared("api")
    api = aws.build_api(aws_settings, CLIENTS)
    assert isinstance(api.things, ThingsService)  # type: ignore[attr-defined]
    assert api.things.built_from.memory is api.memory  # type: ignore[attr-defined]
    assert isinstance(api.things.built_from.memory, MemoryService)  # type: ignore[attr-defined]
    assert isinstance(api.things.built_from.files, MemoryFilesService)  # type: ignore[attr-defined]
    assert aws.build_chat(aws_settings, CLIENTS).things is None  # type: ignore[attr-defined]
    declared("chat")
    assert isinstance(aws.build_chat(aws_settings, CLIENTS).things, ThingsService)  # type: ignore[attr-defined]
    assert aws.build_api(aws_settings, CLIENTS).things is None  # type: ignore[attr-defined]
    assert isinstance(aws.build_aws(aws_settings, CLIENTS).things, ThingsService)  # type: ignore[attr-defined]


def test_no_service_is_declared_twice_or_on_a_field_services_lacks() -> None:
    fields = {f.name for f in dataclasses.fields(Services)}
    declared = [s.field for s in parts.WING_SERVICES]
    assert len(declared) == len(set(declared)) and set(declared) <= fields
    assert all(set(s.functions) <= {"api", "chat"} for s in parts.WING_SERVICES)
