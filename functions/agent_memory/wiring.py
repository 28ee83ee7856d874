"""Composition root: builds the services for the local or the AWS runtime from Settings.

Nothing here runs at import time; handlers and the local server call these builders lazily, once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .adapters.clock import SystemClock
from .api.context import Services
from .domain import safety
from .domain.files.memory_files import MemoryFilesService
from .domain.memory.service import MemoryService
from .domain.ports import Clock, DreamLauncher, Embedder, RecordStore
from .settings.service import Settings

if TYPE_CHECKING:
    from .adapters.local.api_keys import LocalApiKeys
    from .domain.dreaming.extraction import TextModel
    from .domain.dreaming.sweep import DreamingService
    from .domain.sessions.chat import ChatService
    from .domain.sessions.ports import SessionStore, TokenCounter
    from .domain.sessions.sessions import SessionService


@dataclass(frozen=True)
class LocalRuntime:
    services: Services
    keys: LocalApiKeys
    data_dir: Path
    store: RecordStore | None = None
    """The record store under the services, for maintenance commands (`agent-memory repair`)."""


def build_local(settings: Settings, clock: Clock | None = None) -> LocalRuntime:
    """SQLite records + FTS5 keywords + in-process vectors + an offline embedder + a local files directory."""
    from .adapters.idempotency import IdempotentRunner
    from .adapters.local.api_keys import LocalApiKeys
    from .adapters.local.dream_launcher import LocalDreamLauncher
    from .adapters.local.embedders import build_embedder
    from .adapters.local.idempotency_store import SqliteIdempotencyStore
    from .adapters.local.search_index import LocalSearchIndex
    from .adapters.local.session_store import SqliteSessionStore
    from .adapters.local.sqlite_store import SqliteRecordStore
    from .adapters.posix.file_store import PosixFileStore

    clock = clock or SystemClock()
    data_dir = settings.data_dir.expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    store = SqliteRecordStore(data_dir / "memory.db")
    memory = MemoryService(
        store=store,
        index=LocalSearchIndex(data_dir / "index"),
        embedder=build_embedder(settings.embedder),
        clock=clock,
        policy=settings.policy,
    )
    files_root = data_dir / "files"
    files = MemoryFilesService(PosixFileStore(files_root), settings.policy.caps, safety.first_rule, clock)
    sessions, chat = _sessions_and_chat(
        settings, SqliteSessionStore(data_dir / "sessions.db"), files, memory, clock, bedrock_runtime=None
    )
    dreaming = _dreaming(
        memory, store, files, clock, files_root, text_model=_dreaming_text_model(settings, AwsClients())
    )
    return LocalRuntime(
        services=Services(
            memory=memory,
            files=files,
            idempotency=IdempotentRunner(SqliteIdempotencyStore(data_dir / "idempotency.db")),
            sessions=sessions,
            chat=chat,
            dreaming=dreaming,
            dream_launcher=LocalDreamLauncher(
                lambda tenant, namespace: dreaming.run(tenant, namespace), dreaming.namespaces
            ),
        ),
        keys=LocalApiKeys(settings.keys_file),
        data_dir=data_dir,
        store=store,
    )


@dataclass(frozen=True)
class AwsClients:
    """How the AWS runtime gets its clients; tests replace any of these (moto, Stubber)."""

    sts: object | None = None
    bedrock_runtime: object | None = None
    idempotency_dynamodb: object | None = None
    stepfunctions: object | None = None


def build_aws(
    settings: Settings,
    clients: AwsClients | None = None,
    *,
    embedder: Embedder | None = None,
    clock: Clock | None = None,
) -> Services:
    """DynamoDB records + S3 Vectors (vector and BM25 text search) + Titan embeddings + memory files on the
    S3 Files mount. Every tenant-scoped call uses credentials assumed with the session tag tenant=<id>, so
    IAM confines a request to its tenant's partition keys and vector index."""
    from .adapters.aws.bedrock import BEDROCK_CLIENT_CONFIG, TitanEmbedder
    from .adapters.aws.clients import default_client
    from .adapters.aws.credentials import ClientFactory, TenantCredentials
    from .adapters.aws.dynamodb_store import DynamoRecordStore
    from .adapters.aws.idempotency import dynamodb_idempotency_store
    from .adapters.aws.s3vectors_index import S3VECTORS_CLIENT_CONFIG, S3VectorsIndex
    from .adapters.aws.session_store import DynamoSessionStore
    from .adapters.idempotency import IdempotentRunner
    from .adapters.posix.file_store import PosixFileStore

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
    memory = MemoryService(
        store=store,
        index=S3VectorsIndex(
            settings.vector_bucket, ClientFactory("s3vectors", credentials, region, S3VECTORS_CLIENT_CONFIG)
        ),
        embedder=embedder
        or TitanEmbedder(
            clients.bedrock_runtime or default_client("bedrock-runtime", region, BEDROCK_CLIENT_CONFIG),
            model_id=settings.embedding_model,
            dimensions=settings.embedding_dimensions,
        ),
        clock=clock,
        policy=settings.policy,
    )
    # Memory-file writes reach every later session's snapshot: the optional guardrail screens them too.
    files = MemoryFilesService(
        PosixFileStore(settings.files_root),
        settings.policy.caps,
        safety.first_rule_with(_content_screen(settings, clients)),
        clock,
    )
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
            settings.files_root,
            text_model=_dreaming_text_model(settings, clients),
        ),
        dream_launcher=_dream_launcher(settings, clients),
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
    files_root: Path,
    *,
    text_model: TextModel | None,
) -> DreamingService:
    """The nightly sweep over the same services; namespaces come from the memory-file directories (plus the
    configured ones and those holding short-term records)."""
    from .adapters.posix.namespace_dirs import list_namespace_dirs
    from .domain.dreaming.sweep import DreamingService
    from .settings.dreaming import get_dreaming_settings

    return DreamingService(
        memory,
        store,
        files,
        clock,
        get_dreaming_settings().config,
        text_model=text_model,
        namespace_lister=lambda tenant: list_namespace_dirs(files_root, tenant),
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


def _sessions_and_chat(
    settings: Settings,
    store: SessionStore,
    files: MemoryFilesService,
    memory: MemoryService,
    clock: Clock,
    *,
    bedrock_runtime: object | None,
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
    monitor = build_prefix_monitor(settings.chat, settings.prompt_cache, counter, exact=exact)
    sessions = SessionService(store, files, clock, settings.sessions, monitor=monitor)
    chat = ChatService(sessions, files, memory, model, clock, settings.chat, settings.prompt_cache)
    return sessions, chat
