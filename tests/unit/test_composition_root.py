"""The composition root (`functions/agent_memory/wiring/`, docs/architecture.md "Composition"):

- only `wiring/` (and the adapters themselves) import an adapter; the API layer imports neither an adapter
  nor the wiring, so it cannot choose one;
- no module outside `wiring/` constructs a domain service (`...Service(...)`);
- one builder per Lambda function builds only what that function uses;
- the dreaming function's three task modules share one per-process graph (built once per warm container).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agent_memory.handlers import curator, dreaming, purge  # imported at collection: X-Ray opens a socket

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "functions" / "agent_memory"
COMPOSITION = ("wiring", "adapters")
"""Where adapters may be imported: the composition root and the adapters themselves."""


def _module(path: Path) -> list[str]:
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _package(path: Path) -> list[str]:
    return _module(path) if path.name == "__init__.py" else _module(path)[:-1]


def _name(path: Path) -> str:
    return str(path.relative_to(PACKAGE_ROOT)) if path.is_relative_to(PACKAGE_ROOT) else path.name


def _imports(path: Path, package: list[str] | None = None) -> Iterator[tuple[str, list[str], int]]:
    """(absolute module, imported names, line) of every import, relative ones resolved (from `package`, else
    the file's own), TYPE_CHECKING ones too."""
    package = package if package is not None else _package(path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield module, [alias.name for alias in node.names], node.lineno


def _reaches(module: str, names: list[str], layer: str) -> bool:
    """Whether the import reaches `agent_memory.<layer>` (`from .. import adapters` included)."""
    prefix = f"agent_memory.{layer}"
    targets = [module, *(f"{module}.{name}" for name in names)]
    return any(target == prefix or target.startswith(prefix + ".") for target in targets)


def _sources(*skip: str) -> list[Path]:
    return sorted(
        path
        for path in PACKAGE_ROOT.rglob("*.py")
        if "__pycache__" not in path.parts and path.relative_to(PACKAGE_ROOT).parts[0] not in skip
    )


def _adapter_imports(
    paths: list[Path], layer: str = "adapters", package: list[str] | None = None
) -> list[str]:
    return [
        f"{_name(path)}:{line} imports {module}"
        for path in paths
        for module, names, line in _imports(path, package)
        if _reaches(module, names, layer)
    ]


def test_only_the_composition_root_imports_adapters() -> None:
    offenders = _adapter_imports(_sources(*COMPOSITION))
    assert offenders == [], "choose adapters in wiring/ and hand the built service over: " + "; ".join(
        offenders
    )


def test_the_api_layer_imports_no_adapter_and_no_wiring() -> None:
    api = sorted((PACKAGE_ROOT / "api").rglob("*.py"))
    assert len(api) > 10, "the scan found no API module: it is broken"
    assert _adapter_imports(api) == []
    assert _adapter_imports(api, "wiring") == []


def _service_constructions(path: Path) -> list[str]:
    """Calls of a `...Service` class imported from the domain (`MemoryService(...)`, `erasure.ErasureService(...)`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    domain_names = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and "domain" in (node.module or "").split(".")
        for alias in node.names
    }
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        owner = (
            func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
        )
        if name.endswith("Service") and (name in domain_names or owner in domain_names):
            found.append(f"{_name(path)}:{node.lineno} builds {name}")
    return found


def test_no_module_outside_the_composition_root_builds_a_service() -> None:
    # the domain builds its own parts (a wing's service may hold another's); everything outside builds none
    offenders = [found for path in _sources(*COMPOSITION, "domain") for found in _service_constructions(path)]
    assert offenders == []


def test_the_checks_see_an_adapter_import_and_a_service_construction(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from ...adapters.archive_tree import ArchiveSourceTree\nfrom ... import adapters\n"
        "from ...domain.memory.service import MemoryService\nfrom ...domain import erasure\n"
        "memory = MemoryService(store=None)\npurge = erasure.ErasureService()\n",
        encoding="utf-8",
    )
    as_a_route = ["agent_memory", "api", "routes"]
    assert len(_adapter_imports([sample], package=as_a_route)) == 2
    assert [found.split(" builds ")[1] for found in _service_constructions(sample)] == [
        "MemoryService",
        "ErasureService",
    ]


# --------------------------------------------------------------------------- one builder per function


def test_each_function_builds_only_what_it_uses(aws_settings: Any) -> None:
    from agent_memory.domain.memory.service import MemoryService
    from agent_memory.wiring import aws
    from agent_memory.wiring.parts import AwsClients

    clients = AwsClients(sts=object(), bedrock_runtime=object(), stepfunctions=object())
    api = aws.build_api(aws_settings, clients)
    assert api.dreaming is None, "the sweep runs in the dreaming function"
    assert None not in (
        api.erasure,
        api.imports,
        api.curator,
        api.versioning,
        api.dream_launcher,
        api.idempotency,
    )

    chat = aws.build_chat(aws_settings, clients)
    assert chat.sessions is not None and chat.chat is not None and chat.versioning is not None
    assert (chat.erasure, chat.imports, chat.curator, chat.dreaming, chat.dream_launcher) == (None,) * 5

    jobs = aws.build_jobs(aws_settings, clients)
    assert isinstance(jobs.memory, MemoryService)
    assert jobs.upkeep.needed  # DynamoDB: the tree index's backfill
    worker = aws.build_worker(aws_settings, clients)
    assert {type(part).__name__ for part in (worker.dreaming, worker.curator, worker.erasure)} == {
        "DreamingService",
        "CuratorService",
        "ErasureService",
    }


def test_only_the_functions_that_serve_recall_get_the_reranker(aws_settings: Any) -> None:
    """Recall's Bedrock reranker is granted to the API function only (infra BedrockModels.grant_rerank): the
    builders of the other functions must not wire it even when the setting is present."""
    import dataclasses

    import boto3

    from agent_memory.wiring import aws
    from agent_memory.wiring.parts import AwsClients

    settings = dataclasses.replace(
        aws_settings,
        service=aws_settings.service.model_copy(update={"rerank_model_id": "amazon.rerank-v1:0"}),
    )
    rerank = boto3.client(
        "bedrock-agent-runtime", region_name="eu-central-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    clients = AwsClients(
        sts=object(), bedrock_runtime=object(), stepfunctions=object(), bedrock_agent_runtime=rerank
    )
    (reranker,) = aws.build_api(settings, clients).memory.parts.rerankers.values()
    assert (reranker.name, reranker.model) == ("bedrock", "amazon.rerank-v1:0")
    assert reranker.model_arn == "arn:aws:bedrock:eu-central-1::foundation-model/amazon.rerank-v1:0"
    assert aws.build_chat(settings, clients).memory.parts.rerankers == {}
    assert aws.build_jobs(settings, clients).memory.parts.rerankers == {}
    assert aws.build_worker(settings, clients).dreaming._memory.parts.rerankers == {}
    assert aws.build_api(aws_settings, clients).memory.parts.rerankers == {}  # off without the setting


def test_the_backfill_function_without_the_migration_wired_says_which_settings_are_missing(aws_settings: Any):
    from agent_memory.domain.errors import Misconfigured
    from agent_memory.wiring import aws
    from agent_memory.wiring.parts import AwsClients

    with pytest.raises(Misconfigured, match="AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET"):
        aws.build_backfill(aws_settings, AwsClients(sts=object(), bedrock_runtime=object()))


def test_the_dreaming_functions_tasks_share_one_graph_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_memory.wiring import aws, process

    builds: list[object] = []

    def build_worker(settings: object) -> Any:
        builds.append(settings)
        return SimpleNamespace(dreaming="the sweep", curator="the curator", erasure="the purge")

    monkeypatch.setattr(aws, "build_worker", build_worker)
    monkeypatch.setattr(process, "_settings", lambda: "settings read once")
    for module in (dreaming, curator, purge):
        module.configure(None)
    try:
        assert dreaming._service("acme") == "the sweep"
        assert curator._service() == "the curator"
        assert purge._service() == "the purge"
        assert dreaming._service("globex") == "the sweep"
        assert builds == ["settings read once"]
    finally:
        for module in (dreaming, curator, purge):
            module.configure(None)


def test_the_builders_read_only_the_settings_object_they_are_given(
    aws_settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_memory.settings import dreaming as dreaming_settings
    from agent_memory.settings import handlers, service, skills
    from agent_memory.settings.dreaming import DreamingSettings
    from agent_memory.settings.service import Settings
    from agent_memory.wiring import aws, config
    from agent_memory.wiring.local import build_local
    from agent_memory.wiring.parts import AwsClients

    def environment_read() -> Any:
        raise AssertionError("a builder read the environment")

    given = config.RuntimeSettings(
        service=aws_settings.service,
        dreaming=DreamingSettings(tenants=["acme"]),
        skills=aws_settings.skills,
        curator=aws_settings.curator,
        handlers=aws_settings.handlers,
    )
    for module, name in (
        (service, "get_settings"),
        (dreaming_settings, "get_dreaming_settings"),
        (skills, "get_skills_settings"),
        (skills, "get_curator_settings"),
        (handlers, "get_handler_settings"),
    ):
        monkeypatch.setattr(module, name, environment_read)
        monkeypatch.setattr(config, name, environment_read)
    clients = AwsClients(sts=object(), bedrock_runtime=object())
    assert aws.build_worker(given, clients).dreaming is not None
    assert aws.build_chat(given, clients).chat is not None
    local = replace_service(given, Settings(data_dir=tmp_path / "data", embedder="hashing"))
    assert build_local(local).services.dreaming is not None


def replace_service(given: Any, settings: Any) -> Any:
    from dataclasses import replace

    return replace(given, service=settings)
