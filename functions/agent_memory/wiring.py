"""Composition root: builds the services for the local or the AWS runtime from Settings.

Nothing here runs at import time; handlers and the local server call these builders lazily, once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .adapters.clock import SystemClock
from .api.context import Services
from .api.latency import LatencyWindow
from .domain import safety
from .domain.files.memory_files import MemoryFilesService
from .domain.memory.service import MemoryService
from .domain.ports import Clock, DreamLauncher, Embedder, FileStore, RecordStore
from .settings.service import Settings

if TYPE_CHECKING:
    from .adapters.aws.credentials import TenantCredentials
    from .adapters.aws.s3vectors_index import S3VectorsIndex
    from .adapters.local.api_keys import LocalApiKeys
    from .domain.dreaming.extraction import TextModel
    from .domain.dreaming.sweep import DreamingService
    from .domain.erasure.service import ErasureService
    from .domain.interop.ports import ImportStore
    from .domain.interop.service import ImportService
    from .domain.jobs.service import JobService
    from .domain.memory.write_judge import JudgeModel
    from .domain.migration.routing import VectorRouting
    from .domain.migration.service import MigrationService
    from .domain.sessions.chat import ChatService
    from .domain.sessions.ports import SessionStore, TokenCounter
    from .domain.sessions.sessions import SessionService
    from .domain.skills.curator import CuratorService
    from .domain.skills.service import SkillsService
    from .domain.versioning.ports import ReferenceStore, SnapshotStore
    from .domain.versioning.service import VersioningService


@dataclass(frozen=True)
class LocalRuntime:
    services: Services
    keys: LocalApiKeys
    data_dir: Path
    store: RecordStore | None = None
    """The record store under the services, for maintenance commands (`agent-memory repair`)."""


def build_local(
    settings: Settings,
    clock: Clock | None = None,
    *,
    judge: JudgeModel | None = None,
    clients: AwsClients | None = None,
) -> LocalRuntime:
    """SQLite records + FTS5 keywords + in-process vectors + an offline embedder + a local files directory.

    `judge`: an explicit write-judge model port; without one, AGENT_MEMORY_WRITE_JUDGE_MODEL_ID names a Bedrock
    model called with the machine's AWS credentials (`clients.bedrock_runtime` when given). There is no offline
    text model: a policy naming `write_judge_tenants` with neither is refused (Misconfigured)."""
    from .adapters.idempotency import IdempotentRunner
    from .adapters.local.api_keys import LocalApiKeys
    from .adapters.local.dream_launcher import LocalDreamLauncher
    from .adapters.local.embedders import build_embedder
    from .adapters.local.idempotency_store import SqliteIdempotencyStore
    from .adapters.local.import_store import SqliteImportStore
    from .adapters.local.migration import build_local_migration
    from .adapters.local.session_store import SqliteSessionStore
    from .adapters.local.sqlite_store import SqliteRecordStore
    from .adapters.posix.file_store import PosixFileStore

    clock = clock or SystemClock()
    clients = clients or AwsClients()
    data_dir = settings.data_dir.expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    store = SqliteRecordStore(data_dir / "memory.db")
    embedder = build_embedder(settings.embedder)
    # Vectors go through the tenant's embedding-migration routing (domain/migration): reads from one index,
    # writes to both during a migration.
    routing, migration = build_local_migration(data_dir, store, embedder, clock)
    memory = MemoryService(
        store=store,
        index=routing.index,
        embedder=embedder,
        clock=clock,
        policy=settings.policy,
        judge=judge or _write_judge(settings, clients),
        read_embedder=routing.read_embedder,
    )
    files_root = data_dir / "files"
    local_files = PosixFileStore(files_root)
    files = MemoryFilesService(local_files, settings.policy.caps, safety.refusing_rule, clock)
    skills, curator = _skills(
        settings, clients, local_files, safety.refusing_rule, clock, _namespace_dirs(files_root)
    )
    sessions, chat = _sessions_and_chat(
        settings,
        SqliteSessionStore(data_dir / "sessions.db"),
        files,
        memory,
        clock,
        bedrock_runtime=None,
        skills=skills,
    )
    dreaming = _dreaming(
        memory,
        store,
        files,
        clock,
        _namespace_dirs(files_root),
        text_model=_dreaming_text_model(settings, clients),
    )
    from .adapters.local.versioning_store import SqliteVersioningStore

    versioning_store = SqliteVersioningStore(data_dir / "versioning.db")
    versioning = _versioning(
        settings,
        memory,
        store,
        local_files,
        versioning_store,
        versioning_store,
        clock,
        sessions,
        _namespace_dirs(files_root),
    )
    from .adapters.local.erasure import build_local_erasure

    erasure = build_local_erasure(
        data_dir,
        store,
        routing.index,
        routing.read_embedder,
        local_files,
        _namespace_dirs(files_root),
        clock,
        snapshots=versioning_store,
    )
    return LocalRuntime(
        services=Services(
            memory=memory,
            files=files,
            recall_latency=LatencyWindow(),
            idempotency=IdempotentRunner(SqliteIdempotencyStore(data_dir / "idempotency.db")),
            sessions=sessions,
            chat=chat,
            dreaming=dreaming,
            dream_launcher=LocalDreamLauncher(
                lambda tenant, namespace: dreaming.run(tenant, namespace), dreaming.namespaces
            ),
            skills=skills,
            curator=curator,
            migration=migration,
            versioning=versioning,
            erasure=erasure,
            imports=_imports(memory, files, skills, SqliteImportStore(data_dir / "imports.db"), clock),
            jobs=_local_jobs(settings, data_dir, clock),
        ),
        keys=LocalApiKeys(settings.keys_file),
        data_dir=data_dir,
        store=store,
    )


def _local_jobs(settings: Settings, data_dir: Path, clock: Clock) -> JobService:
    """Imports and large batches as jobs on a bounded background pool (domain/jobs); its threads start with
    the first job. The local server (not a CLI command beside it) fails what a stopped server left unfinished
    (`JobService.recover`)."""
    from .adapters.local.job_pool import FairJobPool
    from .adapters.local.job_store import SqliteJobStore
    from .domain.jobs.service import JobService

    config = settings.jobs
    return JobService(
        SqliteJobStore(data_dir / "jobs.db"),
        FairJobPool(config.workers, config.max_queued_per_tenant),
        clock,
        batch_threshold=config.batch_threshold,
    )


@dataclass(frozen=True)
class AwsClients:
    """How the AWS runtime gets its clients; tests replace any of these (moto, Stubber)."""

    sts: object | None = None
    bedrock_runtime: object | None = None
    idempotency_dynamodb: object | None = None
    stepfunctions: object | None = None
    lambda_: object | None = None
    """Invokes the file function (the `lean` profile's memory files)."""


def build_aws(
    settings: Settings,
    clients: AwsClients | None = None,
    *,
    embedder: Embedder | None = None,
    migration_embedders: Callable[[str], Embedder] | None = None,
    clock: Clock | None = None,
) -> Services:
    """DynamoDB records + S3 Vectors (vector and BM25 text search) + Titan embeddings + memory files on the
    S3 Files mount, or through the file function when AGENT_MEMORY_FILE_FUNCTION names it (`lean`). Every
    tenant-scoped call uses credentials assumed with the session tag tenant=<id>, so
    IAM confines a request to its tenant's partition keys and vector index."""
    from .adapters.aws.bedrock import BEDROCK_CLIENT_CONFIG, TitanEmbedder
    from .adapters.aws.clients import default_client
    from .adapters.aws.credentials import ClientFactory, TenantCredentials
    from .adapters.aws.dynamodb_store import DynamoRecordStore
    from .adapters.aws.idempotency import dynamodb_idempotency_store
    from .adapters.aws.import_store import DynamoImportStore
    from .adapters.aws.s3vectors_index import S3VECTORS_CLIENT_CONFIG, S3VectorsIndex
    from .adapters.aws.session_store import DynamoSessionStore
    from .adapters.idempotency import IdempotentRunner

    settings.require_aws()
    clients = clients or AwsClients()
    region = settings.region or None
    clock = clock or SystemClock()
    credentials = TenantCredentials(
        clients.sts or default_client("sts", region),
        settings.tenant_role_arn,
        clock=clock,
        region_name=region,
    )
    store = DynamoRecordStore(settings.table, ClientFactory("dynamodb", credentials, region))
    vectors = ClientFactory("s3vectors", credentials, region, S3VECTORS_CLIENT_CONFIG)
    index = S3VectorsIndex(settings.vector_bucket, vectors)
    embedder = embedder or TitanEmbedder(
        clients.bedrock_runtime or default_client("bedrock-runtime", region, BEDROCK_CLIENT_CONFIG),
        model_id=settings.embedding_model,
        dimensions=settings.embedding_dimensions,
    )
    routing, migration = _aws_migration(
        settings, clients, store, index, embedder, credentials, clock, migration_embedders
    )
    memory = MemoryService(
        store=store,
        index=routing.index if routing else index,
        embedder=embedder,
        clock=clock,
        policy=settings.policy,
        judge=_write_judge(settings, clients),
        read_embedder=routing.read_embedder if routing else None,
        overlap_halves=True,  # the query embedding is a Bedrock call: the keyword half runs beside it
    )
    file_store, namespace_lister = _aws_file_store(settings, clients)
    # Memory-file writes reach every later session's snapshot: the optional guardrail screens them too.
    scanner = safety.first_rule_with(_content_screen(settings, clients), safety.refusing_rule)
    files = MemoryFilesService(file_store, settings.policy.caps, scanner, clock)
    skills, curator = _skills(settings, clients, file_store, scanner, clock, namespace_lister)
    idempotency = (
        IdempotentRunner(
            dynamodb_idempotency_store(settings.idempotency_table, clients.idempotency_dynamodb, region)
        )
        if settings.idempotency_table
        else None
    )
    sessions, chat = _sessions_and_chat(
        settings,
        DynamoSessionStore(settings.table, ClientFactory("dynamodb", credentials, region)),
        files,
        memory,
        clock,
        bedrock_runtime=clients.bedrock_runtime,
        skills=skills,
    )
    from .adapters.aws.versioning_store import DynamoVersioningStore

    versioning_store = DynamoVersioningStore(settings.table, ClientFactory("dynamodb", credentials, region))
    versioning = _versioning(
        settings,
        memory,
        store,
        file_store,
        versioning_store,
        versioning_store,
        clock,
        sessions,
        namespace_lister,
    )
    erasure = _aws_erasure(
        settings,
        clients,
        store,
        routing,
        index,
        embedder,
        file_store,
        namespace_lister,
        credentials,
        clock,
        snapshots=versioning_store,
    )
    return Services(
        memory=memory,
        files=files,
        idempotency=idempotency,
        sessions=sessions,
        chat=chat,
        dreaming=_dreaming(
            memory,
            store,
            files,
            clock,
            namespace_lister,
            text_model=_dreaming_text_model(settings, clients),
        ),
        dream_launcher=_dream_launcher(settings, clients),
        skills=skills,
        curator=curator,
        migration=migration,
        versioning=versioning,
        erasure=erasure,
        imports=_imports(
            memory,
            files,
            skills,
            DynamoImportStore(settings.table, ClientFactory("dynamodb", credentials, region)),
            clock,
        ),
    )


def _imports(
    memory: MemoryService,
    files: MemoryFilesService,
    skills: SkillsService | None,
    store: ImportStore,
    clock: Clock,
) -> ImportService:
    """Importers from other agent tools (domain/interop) over the public services."""
    from .domain.interop.service import ImportService as Imports

    return Imports(memory, files, skills, store, clock)


def _aws_erasure(
    settings: Settings,
    clients: AwsClients,
    store: RecordStore,
    routing: VectorRouting | None,
    index: S3VectorsIndex,
    embedder: Embedder,
    file_store: FileStore,
    namespace_lister: Callable[[str], list[str]],
    credentials: TenantCredentials,
    clock: Clock,
    snapshots: SnapshotStore | None = None,
) -> ErasureService:
    """The purge (domain/erasure) over the memory table (tenant credentials), the vector index the memory
    service writes (both indexes during a migration), the memory files, the idempotency table and the
    embedding cache of the migration routing."""
    from .adapters.aws.clients import default_client
    from .adapters.aws.credentials import ClientFactory
    from .adapters.aws.erasure import (
        S3VectorArchives,
        S3VectorsIndexProbe,
        StepFunctionsPurgeLauncher,
        build_aws_erasure,
    )
    from .adapters.aws.import_store import DynamoImportStore
    from .adapters.aws.s3vectors_index import S3VECTORS_CLIENT_CONFIG, index_name_for
    from .domain.erasure.retention import aws_retention

    region = settings.region or None
    archive_bucket = settings.migration_archive_bucket

    def index_names(tenant: str) -> list[str]:
        if routing is None:
            return [index.index_name(tenant)]
        routes = routing.routes(tenant)
        # A catalog name ("" for the original, "e<n>" for a migration's) → `mem-<t>` / `mem-<t>.e<n>`.
        return sorted(
            {
                index_name_for(tenant, suffix=f".{target.index_name}" if target.index_name else "")
                for target in (routes.read, *routes.writes)
            }
        )

    def fingerprints(tenant: str) -> list[str]:
        assert routing is not None
        routes = routing.routes(tenant)
        return sorted({target.fingerprint for target in (routes.read, *routes.writes)})

    return build_aws_erasure(
        table=settings.table,
        dynamodb=ClientFactory("dynamodb", credentials, region),
        idempotency_table=settings.idempotency_table or None,
        idempotency_client=clients.idempotency_dynamodb or default_client("dynamodb", region),
        records=store,
        index=routing.index if routing else index,
        embedder_of=routing.read_embedder if routing else (lambda _tenant: embedder),
        files=file_store,
        file_namespaces=namespace_lister,
        clock=clock,
        cache_fingerprints=fingerprints if routing else None,
        snapshots=snapshots,
        index_probe=S3VectorsIndexProbe(
            settings.vector_bucket,
            ClientFactory("s3vectors", credentials, region, S3VECTORS_CLIENT_CONFIG),
            index_names,
        ),
        launcher=StepFunctionsPurgeLauncher(
            clients.stepfunctions or default_client("stepfunctions", region), settings.purge_state_machine_arn
        )
        if settings.purge_state_machine_arn
        else None,
        imports=DynamoImportStore(settings.table, ClientFactory("dynamodb", credentials, region)),
        archives=S3VectorArchives(archive_bucket, ClientFactory("s3", credentials, region))
        if archive_bucket
        else None,
        retention=aws_retention(settings.erasure_retention),
    )


def _versioning(
    settings: Settings,
    memory: MemoryService,
    store: RecordStore,
    file_store: FileStore,
    snapshots: SnapshotStore,
    references: ReferenceStore,
    clock: Clock,
    sessions: SessionService,
    file_namespaces: Callable[[str], list[str]],
) -> VersioningService:
    """Export, snapshots, diff, restore and references (domain/versioning), counting each session's snapshot
    entries as it starts (best effort: a failure to count is logged, never fails the session)."""
    import logging

    from .domain.errors import DomainError
    from .domain.sessions.sessions import StartedSession
    from .domain.versioning.service import VersioningService as Versioning

    service = Versioning(
        memory,
        store,
        file_store,
        snapshots,
        references,
        clock,
        caps=settings.policy.caps,
        scan=safety.refusing_rule,
        file_namespaces=file_namespaces,
    )

    def count(started: StartedSession) -> None:
        session = started.session
        try:
            service.record_session(session.tenant, session.namespace, session.snapshot)
        except DomainError as error:
            logging.getLogger(__name__).warning("session references not counted: %s", error.message)

    sessions.add_observer(count)
    return service


def _skills(
    settings: Settings,
    clients: AwsClients,
    file_store: FileStore,
    scanner: Callable[[str], str | None],
    clock: Clock,
    namespace_lister: Callable[[str], list[str]],
) -> tuple[SkillsService, CuratorService]:
    """Skills on the memory-file store (same safety scan as memory files) and their curator; the curator's
    optional LLM review uses AGENT_MEMORY_CURATOR_MODEL_ID, a text model apart from the chat model."""
    from .domain.skills.curator import CuratorService
    from .domain.skills.service import SkillsService
    from .settings.skills import get_curator_settings, get_skills_settings

    curator_settings = get_curator_settings()
    skills = SkillsService(file_store, scanner, clock, get_skills_settings().config)
    review = None
    if curator_settings.model_id:
        from .adapters.aws.bedrock import BEDROCK_CLIENT_CONFIG
        from .adapters.aws.bedrock_text import BedrockTextModel
        from .adapters.aws.clients import default_client

        client = clients.bedrock_runtime or default_client(
            "bedrock-runtime", settings.region or None, BEDROCK_CLIENT_CONFIG
        )
        review = BedrockTextModel(client, curator_settings.model_id)
    curator = CuratorService(
        skills,
        file_store,
        clock,
        curator_settings.config,
        review_model=review,
        namespace_lister=namespace_lister,
    )
    return skills, curator


def _aws_file_store(settings: Settings, clients: AwsClients) -> tuple[FileStore, Callable[[str], list[str]]]:
    """The memory files and the namespace lister of the dreaming sweep: through the file function when
    AGENT_MEMORY_FILE_FUNCTION is set (the `lean` profile: this function is outside the VPC), else on the S3
    Files mount at AGENT_MEMORY_FILES_ROOT (`isolated`)."""
    if settings.file_function:
        from .adapters.aws.clients import default_client
        from .adapters.aws.remote_file_store import LAMBDA_CLIENT_CONFIG, RemoteFileStore

        client = clients.lambda_ or default_client("lambda", settings.region or None, LAMBDA_CLIENT_CONFIG)
        remote = RemoteFileStore(client, settings.file_function)
        return remote, remote.list_namespaces
    from .adapters.posix.file_store import PosixFileStore

    return PosixFileStore(settings.files_root), _namespace_dirs(settings.files_root)


def _namespace_dirs(files_root: Path) -> Callable[[str], list[str]]:
    from .adapters.posix.namespace_dirs import list_namespace_dirs

    return lambda tenant: list_namespace_dirs(files_root, tenant)


def _aws_migration(
    settings: Settings,
    clients: AwsClients,
    store: RecordStore,
    index: S3VectorsIndex,
    embedder: Embedder,
    credentials: TenantCredentials,
    clock: Clock,
    embedders: Callable[[str], Embedder] | None = None,
) -> tuple[VectorRouting | None, MigrationService | None]:
    """The embedding migration (domain/migration) when the stack deployed it: the API function knows the
    backfill state machine (AGENT_MEMORY_MIGRATION_STATE_MACHINE_ARN), the backfill function the archive
    bucket (AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET); without either the vectors go straight to the tenant's
    index."""
    if not (settings.migration_state_machine_arn or settings.migration_archive_bucket):
        return None, None
    from .adapters.aws.bedrock import BEDROCK_CLIENT_CONFIG
    from .adapters.aws.clients import default_client
    from .adapters.aws.credentials import ClientFactory
    from .adapters.aws.migration import build_aws_migration, drift_metric, titan_embedders
    from .adapters.aws.s3vectors_index import S3VECTORS_CLIENT_CONFIG, S3VectorsIndex
    from .settings.handlers import get_handler_settings

    region = settings.region or None
    vectors = ClientFactory("s3vectors", credentials, region, S3VECTORS_CLIENT_CONFIG)
    bedrock = clients.bedrock_runtime or default_client("bedrock-runtime", region, BEDROCK_CLIENT_CONFIG)
    return build_aws_migration(
        settings,
        store,
        index,
        lambda suffix: S3VectorsIndex(settings.vector_bucket, vectors, index_suffix=suffix),
        ClientFactory("dynamodb", credentials, region),
        ClientFactory("s3", credentials, region),
        embedder,
        embedders or titan_embedders(bedrock),
        clock,
        (clients.stepfunctions or default_client("stepfunctions", region))
        if settings.migration_state_machine_arn
        else None,
        on_drift=drift_metric(get_handler_settings().metrics_namespace),
    )


def _content_screen(settings: Settings, clients: AwsClients) -> safety.ContentScreen | None:
    """Amazon Bedrock Guardrails on memory-file writes, when AGENT_MEMORY_GUARDRAIL_ID is set (the stack sets
    it with the `guardrail` context on)."""
    if not settings.guardrail_id:
        return None
    from .adapters.aws.bedrock import BEDROCK_CLIENT_CONFIG
    from .adapters.aws.clients import default_client
    from .adapters.aws.guardrails import BedrockGuardrailScreen

    client = clients.bedrock_runtime or default_client(
        "bedrock-runtime", settings.region or None, BEDROCK_CLIENT_CONFIG
    )
    return BedrockGuardrailScreen(client, settings.guardrail_id, settings.guardrail_version)


def _dream_launcher(settings: Settings, clients: AwsClients) -> DreamLauncher | None:
    """On-demand dreaming in AWS starts the state machine (the schedules start it nightly)."""
    if not settings.dreaming_state_machine_arn:
        return None
    from .adapters.aws.clients import default_client
    from .adapters.aws.stepfunctions import StepFunctionsDreamLauncher

    client = clients.stepfunctions or default_client("stepfunctions", settings.region or None)
    return StepFunctionsDreamLauncher(client, settings.dreaming_state_machine_arn)


def _dreaming(
    memory: MemoryService,
    store: RecordStore,
    files: MemoryFilesService,
    clock: Clock,
    namespace_lister: Callable[[str], list[str]],
    *,
    text_model: TextModel | None,
) -> DreamingService:
    """The nightly sweep over the same services; namespaces come from the memory-file directories (plus the
    configured ones and those holding short-term records)."""
    from .domain.dreaming.sweep import DreamingService
    from .settings.dreaming import get_dreaming_settings

    return DreamingService(
        memory,
        store,
        files,
        clock,
        get_dreaming_settings().config,
        text_model=text_model,
        namespace_lister=namespace_lister,
    )


def _dreaming_text_model(settings: Settings, clients: AwsClients) -> TextModel | None:
    """The LLM extraction strategies run only when AGENT_MEMORY_DREAMING_MODEL_ID names a Bedrock model (in
    either runtime; locally it uses the machine's AWS credentials)."""
    from .settings.dreaming import get_dreaming_settings

    model_id = get_dreaming_settings().model_id
    if not model_id:
        return None
    from .adapters.aws.bedrock import BEDROCK_CLIENT_CONFIG
    from .adapters.aws.bedrock_text import BedrockTextModel
    from .adapters.aws.clients import default_client

    client = clients.bedrock_runtime or default_client(
        "bedrock-runtime", settings.region or None, BEDROCK_CLIENT_CONFIG
    )
    return BedrockTextModel(client, model_id)


def _write_judge(settings: Settings, clients: AwsClients) -> JudgeModel | None:
    """The optional LLM write judge on Bedrock Converse, built only when the policy names judged tenants and
    AGENT_MEMORY_WRITE_JUDGE_MODEL_ID names the model (MemoryService refuses judged tenants without one)."""
    if not settings.policy.write_judge_tenants or not settings.write_judge_model_id:
        return None
    from .adapters.aws.bedrock import BEDROCK_CLIENT_CONFIG
    from .adapters.aws.bedrock_text import BedrockTextModel
    from .adapters.aws.clients import default_client

    client = clients.bedrock_runtime or default_client(
        "bedrock-runtime", settings.region or None, BEDROCK_CLIENT_CONFIG
    )
    return BedrockTextModel(client, settings.write_judge_model_id)


def _sessions_and_chat(
    settings: Settings,
    store: SessionStore,
    files: MemoryFilesService,
    memory: MemoryService,
    clock: Clock,
    *,
    bedrock_runtime: object | None,
    skills: SkillsService | None = None,
) -> tuple[SessionService, ChatService]:
    """Sessions always work (they return the cache-stable prompt blocks); a chat model is wired only when
    configured (`AGENT_MEMORY_CHAT_PROVIDER=bedrock`), with exact token counts from CountTokens."""
    from .domain.sessions.chat import ChatService, build_prefix_monitor
    from .domain.sessions.prompt_cache import CharTokenEstimator
    from .domain.sessions.sessions import SessionService

    model = None
    counter: TokenCounter = CharTokenEstimator()
    exact = False
    if settings.chat_provider == "bedrock":
        from .adapters.aws.bedrock import BEDROCK_CLIENT_CONFIG, BedrockTokenCounter
        from .adapters.aws.bedrock_chat import BedrockChatModel
        from .adapters.aws.clients import default_client

        client = bedrock_runtime or default_client(
            "bedrock-runtime", settings.region or None, BEDROCK_CLIENT_CONFIG
        )
        model = BedrockChatModel(client, settings.chat.model_id)
        counter = BedrockTokenCounter(client, settings.chat.foundation_model_id())
        exact = True
    monitor = build_prefix_monitor(
        settings.chat, settings.prompt_cache, counter, exact=exact, skills=skills is not None
    )
    sessions = SessionService(store, files, clock, settings.sessions, monitor=monitor)
    chat = ChatService(
        sessions, files, memory, model, clock, settings.chat, settings.prompt_cache, skills=skills
    )
    return sessions, chat
