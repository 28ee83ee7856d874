"""One builder per Lambda function of the AWS runtime, each building only what its function uses.

| function (handler module) | builder | builds |
|---|---|---|
| api (`handlers/api.py`) | `build_api` | every service the /v1 routes use; no dreaming sweep |
| job (`handlers/job_worker.py`) | `build_job_worker` | the API's graph, whose job service runs the jobs |
| chat (`handlers/chat.py`) | `build_chat` | memory, files, skills, sessions, chat, versioning (session references) |
| jobs (`handlers/jobs.py`) | `build_jobs` | the memory service (the decay job), the tree-index backfill |
| dreaming (`handlers/dreaming.py`, `curator.py`, `purge.py`) | `build_worker` | dreaming sweep, curator, purge |
| migration (`handlers/migration.py`) | `build_backfill` | the embedding migration |
| authorizer (`handlers/authorizer.py`) | `build_authorizer` | the API-key lookup |
| files (`handlers/files.py`) | `build_file_server` | the file server on the S3 Files mount |
| console (`handlers/console.py`) | none | static pages only |

`build_aws` builds every service in one graph: for tests that drive several functions' routes and tasks on
one set of moto or Stubber clients, never for a function."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..api.context import Services
from ..domain.errors import Misconfigured
from ..domain.files.memory_files import MemoryFilesService
from ..domain.memory.index_upkeep import IndexUpkeep
from ..domain.memory.service import MemoryService
from ..domain.ports import Clock, Embedder, FileStore
from ..settings.handlers import HandlerSettings
from ..settings.resources import API_KEYS
from ..settings.service import Settings
from . import aws_jobs, aws_parts, parts
from .aws_parts import AwsBase
from .config import RuntimeSettings
from .parts import AwsClients, NamespaceLister

if TYPE_CHECKING:
    from ..adapters.aws.api_keys import ApiKey
    from ..adapters.posix.file_server import FileServer
    from ..domain.dreaming.sweep import DreamingService
    from ..domain.erasure.service import ErasureService
    from ..domain.migration.service import MigrationService
    from ..domain.skills.curator import CuratorService
    from ..domain.skills.service import SkillsService


def _base(
    settings: Settings | RuntimeSettings,
    clients: AwsClients | None,
    embedder: Embedder | None = None,
    migration_embedders: Callable[[str], Embedder] | None = None,
    clock: Clock | None = None,
) -> AwsBase:
    return aws_parts.aws_base(
        RuntimeSettings.of(settings),
        clients or AwsClients(),
        embedder=embedder,
        migration_embedders=migration_embedders,
        clock=clock,
    )


def build_api(
    settings: Settings | RuntimeSettings,
    clients: AwsClients | None = None,
    *,
    embedder: Embedder | None = None,
    migration_embedders: Callable[[str], Embedder] | None = None,
    clock: Clock | None = None,
) -> Services:
    """The API function: DynamoDB records + S3 Vectors + Titan embeddings + memory files on the S3 Files mount
    or through the file function (`lean`), and everything the /v1 routes call; dreaming runs elsewhere (the
    routes start it through `dream_launcher`)."""
    return _services(_base(settings, clients, embedder, migration_embedders, clock), sweep=False)


def build_aws(
    settings: Settings | RuntimeSettings,
    clients: AwsClients | None = None,
    *,
    embedder: Embedder | None = None,
    migration_embedders: Callable[[str], Embedder] | None = None,
    clock: Clock | None = None,
) -> Services:
    """Every AWS service in one graph (tests: the routes of every function and the sweep on one set of
    clients)."""
    return _services(_base(settings, clients, embedder, migration_embedders, clock), sweep=True)


@dataclass(frozen=True)
class _Core:
    """What every tenant-data function above the decay job uses: memory, the memory files and skills."""

    memory: MemoryService
    file_store: FileStore
    namespaces: NamespaceLister
    files: MemoryFilesService
    skills: SkillsService


def _core(base: AwsBase, *, serves_recall: bool = False) -> _Core:
    """`serves_recall`: the function serves POST /v1/recall (the API function), so its memory service gets
    recall's optional reranker (a Bedrock grant only that function has)."""
    file_store, namespaces = aws_parts.file_store(base.config, base.clients)
    scan = aws_parts.scanner(base.config, base.clients)
    rerankers = aws_parts.rerankers(base.config, base.clients) if serves_recall else None
    return _Core(
        memory=aws_parts.memory(base, rerankers),
        file_store=file_store,
        namespaces=namespaces,
        files=parts.memory_files(base.config, file_store, base.clock, scan),
        skills=parts.skills(base.config, file_store, base.clock, scan),
    )


def _with_sessions(base: AwsBase, core: _Core) -> tuple[Services, Any]:
    """Memory, files, skills, sessions and chat, with versioning counting each session's snapshot references
    as it starts; and the versioning store (the purge deletes snapshot bundles through it)."""
    config, clients, clock = base.config, base.clients, base.clock
    sessions, chat = parts.sessions_and_chat(
        config, clients, aws_parts.session_store(base), core.files, core.memory, clock, core.skills
    )
    versions = aws_parts.versioning_store(base)
    versioning = parts.versioning(
        config, core.memory, base.store, core.file_store, versions, versions, clock, sessions, core.namespaces
    )
    services = Services(
        memory=core.memory,
        files=core.files,
        idempotency=aws_parts.idempotency(config, clients),
        sessions=sessions,
        chat=chat,
        skills=core.skills,
        versioning=versioning,
    )
    return services, versions


def _services(base: AwsBase, *, sweep: bool) -> Services:
    config, clients, clock = base.config, base.clients, base.clock
    core = _core(base, serves_recall=True)
    services, versions = _with_sessions(base, core)
    memory, files, skills, namespaces = core.memory, core.files, core.skills, core.namespaces
    services = replace(
        services,
        dreaming=parts.dreaming(config, clients, memory, base.store, files, clock, namespaces)
        if sweep
        else None,
        dream_launcher=aws_parts.dream_launcher(config, clients),
        curator=parts.curator(config, clients, skills, core.file_store, clock, namespaces),
        migration=base.migration,
        erasure=aws_parts.erasure(base, core.file_store, namespaces, versions, caches=[memory]),
        imports=parts.imports(memory, files, skills, aws_parts.import_store(base), clock),
        archive_reader=parts.archive_reader,
        **parts.wing_services(_wing_parts(base, core), None if sweep else "api"),
    )
    return aws_jobs.with_jobs(base, services)  # imports and large batches as jobs, when the stack set one


def build_chat(settings: Settings | RuntimeSettings, clients: AwsClients | None = None) -> Services:
    """The chat function (/v1/sessions): sessions and chat turns over memory, files and skills; versioning
    counts each session's snapshot references as it starts."""
    base = _base(settings, clients)
    core = _core(base)
    return replace(_with_sessions(base, core)[0], **parts.wing_services(_wing_parts(base, core), "chat"))


def _wing_parts(base: AwsBase, core: _Core) -> parts.WingParts:
    return parts.WingParts(
        config=base.config,
        clients=base.clients,
        clock=base.clock,
        store=base.store,
        memory=core.memory,
        file_store=core.file_store,
        namespaces=core.namespaces,
        files=core.files,
        skills=core.skills,
    )


@dataclass(frozen=True)
class Jobs:
    """The decay job's services: forgetting (the memory service) and the tree index's bounded backfill."""

    memory: MemoryService
    upkeep: IndexUpkeep


def build_jobs(settings: Settings | RuntimeSettings, clients: AwsClients | None = None) -> Jobs:
    """The scheduled decay job: the memory service, and the tree-index backfill on the same record store."""
    base = _base(settings, clients)
    return Jobs(memory=aws_parts.memory(base), upkeep=IndexUpkeep(base.tree_index))


@dataclass(frozen=True)
class Worker:
    """The dreaming function's services: its three workflows (dreaming, curator, purge) share one graph."""

    dreaming: DreamingService
    curator: CuratorService
    erasure: ErasureService


def build_job_worker(settings: Settings | RuntimeSettings, clients: AwsClients | None = None) -> Services:
    """The job function: the API function's graph (it runs the routes' synchronous paths), with the jobs."""
    services = build_api(settings, clients)
    if services.jobs is None:
        raise Misconfigured("the job function needs AGENT_MEMORY_JOB_FUNCTION (its own name) and the table")
    return services


def build_worker(settings: Settings | RuntimeSettings, clients: AwsClients | None = None) -> Worker:
    """The dreaming function: the nightly sweep, the skills curator and the purge steps (it mounts the files)."""
    base = _base(settings, clients)
    config, clients, clock, core = base.config, base.clients, base.clock, _core(base)
    return Worker(
        dreaming=parts.dreaming(config, clients, core.memory, base.store, core.files, clock, core.namespaces),
        curator=parts.curator(config, clients, core.skills, core.file_store, clock, core.namespaces),
        erasure=aws_parts.erasure(
            base, core.file_store, core.namespaces, aws_parts.versioning_store(base), caches=[core.memory]
        ),
    )


def build_backfill(
    settings: Settings | RuntimeSettings, clients: AwsClients | None = None
) -> MigrationService:
    """The migration function: backfill pages of an embedding migration. Raises Misconfigured when the stack
    did not deploy the migration (AGENT_MEMORY_MIGRATION_* unset)."""

    migration = _base(settings, clients).migration
    if migration is None:
        raise Misconfigured(
            "this deployment does not wire the embedding migration (AGENT_MEMORY_MIGRATION_STATE_MACHINE_ARN "
            "and AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET unset)"
        )
    return migration


class ApiKeyLookup:
    """The authorizer's view of the key table: a bearer token → its key record (None when unknown)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def find(self, token: str) -> ApiKey | None:
        from ..adapters.aws.api_keys import hash_api_key

        return self.store.get(hash_api_key(token))


def build_authorizer(settings: HandlerSettings) -> ApiKeyLookup:
    """The authorizer: the key table (AGENT_MEMORY_API_KEYS_TABLE) read with the function's own role. It
    takes the handler settings only: its cold start loads no pydantic-settings model."""
    from ..adapters.aws.api_keys import DynamoApiKeyStore
    from ..adapters.aws.clients import default_client

    table = API_KEYS.name_in(settings)
    if not table:
        raise Misconfigured(f"{API_KEYS.variable} is not set for the authorizer function")
    return ApiKeyLookup(DynamoApiKeyStore(table, default_client("dynamodb")))


def build_file_server(settings: HandlerSettings) -> FileServer:
    """The file function: memory files on the S3 Files mount (AGENT_MEMORY_FILES_ROOT), no AWS client."""
    from ..adapters.posix.file_server import FileServer

    return FileServer(Path(settings.files_root))
