"""The AWS runtime's parts: tenant credentials, the record store and vector index, the embedding migration,
the memory files (S3 Files mount or file function), the purge, and the optional Bedrock and Step Functions
adapters. The per-function builders (`wiring/aws.py`) pick the parts their function uses.

Every tenant-scoped call uses credentials assumed with the session tag tenant=<id>, so IAM confines a request
to its tenant's partition keys and vector index; the idempotency table, Bedrock, Step Functions and the file
function are called with the function's own role."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from ..adapters.clock import SystemClock
from ..domain import safety
from ..domain.memory.ports import Reranker
from ..domain.memory.service import MemoryService
from ..domain.ports import Clock, DreamLauncher, Embedder, FileStore, IndexBackfill, RecordStore
from ..settings.resources import IDEMPOTENCY
from ..settings.workflows import DREAMING, MIGRATION, PURGE, Workflow
from . import aws_jobs, parts
from .config import RuntimeSettings
from .parts import AwsClients, NamespaceLister

if TYPE_CHECKING:
    from ..adapters.aws.credentials import ClientFactory, TenantCredentials
    from ..adapters.aws.s3vectors_index import S3VectorsIndex
    from ..adapters.aws.stepfunctions import StepFunctionsLauncher
    from ..adapters.idempotency import IdempotentRunner
    from ..domain.erasure.ports import ProcessCaches
    from ..domain.erasure.service import ErasureService
    from ..domain.migration.routing import VectorRouting
    from ..domain.migration.service import MigrationService
    from ..domain.versioning.ports import SnapshotStore

S = TypeVar("S")


@dataclass
class AwsBase:
    """What every tenant-data function builds first: credentials, records, vectors, the embedder and (when the
    stack deployed it) the embedding migration's routing."""

    config: RuntimeSettings
    clients: AwsClients
    clock: Clock
    credentials: TenantCredentials
    store: RecordStore
    index: S3VectorsIndex
    embedder: Embedder
    routing: VectorRouting | None = None
    migration: MigrationService | None = None
    tree_index: IndexBackfill | None = None
    """The record store's tree-index backfill (the same DynamoRecordStore as `store`)."""

    @property
    def region(self) -> str | None:
        return self.config.service.region or None

    def tenant_client(self, service: str, client_config: Any = None) -> ClientFactory:
        """tenant → a client of `service` on that tenant's credentials."""
        return _tenant_client(self.credentials, self.region, service, client_config)


def _tenant_client(
    credentials: TenantCredentials, region: str | None, service: str, client_config: Any = None
) -> ClientFactory:
    from ..adapters.aws.credentials import ClientFactory

    return ClientFactory(service, credentials, region, client_config)


def aws_base(
    config: RuntimeSettings,
    clients: AwsClients,
    *,
    embedder: Embedder | None = None,
    migration_embedders: Callable[[str], Embedder] | None = None,
    clock: Clock | None = None,
) -> AwsBase:
    from ..adapters.aws.bedrock import TitanEmbedder
    from ..adapters.aws.credentials import TenantCredentials
    from ..adapters.aws.dynamodb_store import DynamoRecordStore
    from ..adapters.aws.s3vectors_index import S3VECTORS_CLIENT_CONFIG, S3VectorsIndex

    settings = config.service
    settings.require_aws()
    clock = clock or SystemClock()
    region = settings.region or None
    credentials = TenantCredentials(
        parts.client(config, clients.sts, "sts"), settings.tenant_role_arn, clock=clock, region_name=region
    )
    records = DynamoRecordStore(settings.table, _tenant_client(credentials, region, "dynamodb"))
    base = AwsBase(
        config,
        clients,
        clock,
        credentials,
        store=records,
        index=S3VectorsIndex(
            settings.vector_bucket, _tenant_client(credentials, region, "s3vectors", S3VECTORS_CLIENT_CONFIG)
        ),
        embedder=embedder
        or TitanEmbedder(
            parts.bedrock(config, clients),
            model_id=settings.embedding_model,
            dimensions=settings.embedding_dimensions,
        ),
        tree_index=records,
    )
    if settings.migration_state_machine_arn or settings.migration_archive_bucket:
        base.routing, base.migration = _migration(base, migration_embedders)
    return base


def _migration(
    base: AwsBase, embedders: Callable[[str], Embedder] | None
) -> tuple[VectorRouting, MigrationService]:
    """The embedding migration (domain/migration) when the stack deployed it: the API function knows the
    backfill state machine (AGENT_MEMORY_MIGRATION_STATE_MACHINE_ARN), the backfill function the archive
    bucket (AGENT_MEMORY_MIGRATION_ARCHIVE_BUCKET); without either the vectors go straight to the tenant's
    index. The backfill function itself runs pages and starts nothing: it has no state machine ARN."""
    from ..adapters.aws.migration import (
        DynamoEmbeddingCache,
        DynamoMigrationStore,
        S3VectorsIndexCatalog,
        drift_metric,
        titan_embedders,
    )
    from ..adapters.aws.s3vectors_index import S3VECTORS_CLIENT_CONFIG, S3VectorsIndex
    from ..adapters.local.migration import SystemPacer
    from ..domain.migration.routing import VectorRouting
    from ..domain.migration.service import MigrationService

    config, settings = base.config, base.config.service
    dynamodb, vectors = (
        base.tenant_client("dynamodb"),
        base.tenant_client("s3vectors", S3VECTORS_CLIENT_CONFIG),
    )
    routing = VectorRouting(
        DynamoMigrationStore(settings.table, dynamodb),
        S3VectorsIndexCatalog(
            base.index,
            lambda suffix: S3VectorsIndex(settings.vector_bucket, vectors, index_suffix=suffix),
            base.tenant_client("s3"),
            settings.migration_archive_bucket,
        ),
        base.embedder,
        embedders or titan_embedders(parts.bedrock(config, base.clients)),
        base.clock,
        cache=DynamoEmbeddingCache(settings.table, dynamodb),
        on_drift=drift_metric(config.handlers.metrics_namespace),
        route_ttl_seconds=1.0,
    )
    launcher = workflow_launcher(config, base.clients, MIGRATION)
    return routing, MigrationService(base.store, routing, SystemPacer(), launcher=launcher)


def rerankers(config: RuntimeSettings, clients: AwsClients) -> dict[str, Reranker]:
    """Recall's second-stage rerankers, for the functions that serve recall: Bedrock's Rerank API on the model
    AGENT_MEMORY_RERANK_MODEL_ID names (the stack grants it to the API function only); none without it."""
    model_id = config.service.rerank_model_id
    if not model_id:
        return {}
    from ..adapters.aws.bedrock_rerank import RERANK_CLIENT_CONFIG, BedrockReranker

    client = parts.client(
        config, clients.bedrock_agent_runtime, "bedrock-agent-runtime", RERANK_CLIENT_CONFIG
    )
    return {BedrockReranker.name: BedrockReranker(client, model_id)}


def memory(base: AwsBase, rerankers: dict[str, Reranker] | None = None) -> MemoryService:
    return MemoryService(
        store=base.store,
        index=base.routing.index if base.routing else base.index,
        embedder=base.embedder,
        clock=base.clock,
        policy=base.config.service.policy,
        judge=parts.write_judge(base.config, base.clients),
        read_embedder=base.routing.read_embedder if base.routing else None,
        overlap_halves=True,  # the query embedding is a Bedrock call: the keyword half runs beside it
        lexicon=parts.lexicon(base.config.service.wordnet_dir),
        rerankers=rerankers,
    )


def file_store(config: RuntimeSettings, clients: AwsClients) -> tuple[FileStore, NamespaceLister]:
    """The memory files and the namespace lister of the sweeps: through the file function when
    AGENT_MEMORY_FILE_FUNCTION is set (the `lean` profile: this function is outside the VPC), else on the S3
    Files mount at AGENT_MEMORY_FILES_ROOT (`isolated`)."""
    settings = config.service
    if settings.file_function:
        from ..adapters.aws.remote_file_store import LAMBDA_CLIENT_CONFIG, RemoteFileStore

        remote = RemoteFileStore(
            parts.client(config, clients.lambda_, "lambda", LAMBDA_CLIENT_CONFIG), settings.file_function
        )
        return remote, remote.list_namespaces
    from ..adapters.posix.file_store import PosixFileStore

    return PosixFileStore(settings.files_root), parts.namespace_dirs(settings.files_root)


def scanner(config: RuntimeSettings, clients: AwsClients) -> parts.Scanner:
    """Memory-file writes reach every later session's snapshot: Amazon Bedrock Guardrails screens them when
    AGENT_MEMORY_GUARDRAIL_ID is set (the stack sets it with the `guardrail` context on)."""
    return parts.scanner(content_screen(config, clients))


def content_screen(config: RuntimeSettings, clients: AwsClients) -> safety.ContentScreen | None:
    settings = config.service
    if not settings.guardrail_id:
        return None
    from ..adapters.aws.guardrails import BedrockGuardrailScreen

    return BedrockGuardrailScreen(
        parts.bedrock(config, clients), settings.guardrail_id, settings.guardrail_version
    )


def dream_launcher(config: RuntimeSettings, clients: AwsClients) -> DreamLauncher | None:
    """On-demand dreaming in AWS starts the state machine (the schedules start it nightly)."""
    return workflow_launcher(config, clients, DREAMING)


def workflow_launcher(
    config: RuntimeSettings, clients: AwsClients, workflow: Workflow[S]
) -> StepFunctionsLauncher[S] | None:
    """Starts `workflow`'s state machine, when the stack told this function its ARN (the settings field the
    declaration names, set by the stack's start grant); None otherwise. Runs with the function's own role."""
    from ..adapters.aws.stepfunctions import StepFunctionsLauncher

    arn = getattr(config.service, workflow.arn_setting or "", "")
    if not arn:
        return None
    client = parts.client(config, clients.stepfunctions, "stepfunctions")
    return StepFunctionsLauncher(client, arn, workflow.start_input, workflow.execution_name)


def idempotency(config: RuntimeSettings, clients: AwsClients) -> IdempotentRunner | None:
    """Idempotent writes (Idempotency-Key) on the idempotency table, with the function's own role."""
    table = IDEMPOTENCY.name_in(config.service)
    if not table:
        return None
    from ..adapters.aws.idempotency import dynamodb_idempotency_store
    from ..adapters.idempotency import IdempotentRunner

    store = dynamodb_idempotency_store(table, clients.idempotency_dynamodb, base_region(config))
    return IdempotentRunner(store)


def base_region(config: RuntimeSettings) -> str | None:
    return config.service.region or None


def versioning_store(base: AwsBase) -> Any:
    from ..adapters.aws.versioning_store import DynamoVersioningStore

    return DynamoVersioningStore(base.config.service.table, base.tenant_client("dynamodb"))


def session_store(base: AwsBase) -> Any:
    from ..adapters.aws.session_store import DynamoSessionStore

    return DynamoSessionStore(base.config.service.table, base.tenant_client("dynamodb"))


def import_store(base: AwsBase) -> Any:
    from ..adapters.aws.import_store import DynamoImportStore

    return DynamoImportStore(base.config.service.table, base.tenant_client("dynamodb"))


def erasure(
    base: AwsBase,
    files: FileStore,
    namespaces: NamespaceLister,
    snapshots: SnapshotStore | None,
    caches: Sequence[ProcessCaches] = (),
) -> ErasureService:
    """The purge (domain/erasure) over the memory table (tenant credentials), the vector index the memory
    service writes (both indexes during a migration), the memory files (the file function's `purge`
    operation, or the S3 Files mount), the idempotency table, the import state, the archived vectors and the
    embedding cache of the migration routing; `caches`: this function's memory service, whose cross-request
    entries of the tenant a purge ending here drops."""
    from ..adapters.aws import erasure as aws
    from ..adapters.aws.s3vectors_index import S3VECTORS_CLIENT_CONFIG
    from ..domain.erasure.archives import ArchivedVectors
    from ..domain.erasure.files import FileEraser, MemoryFileLines, PosixFileEraser
    from ..domain.erasure.imports import ImportContent
    from ..domain.erasure.ports import ContentStore
    from ..domain.erasure.retention import aws_retention
    from ..domain.erasure.service import ErasureService
    from ..domain.erasure.snapshots import SnapshotBundles

    config, settings, routing = base.config, base.config.service, base.routing
    table, dynamodb = settings.table, base.tenant_client("dynamodb")
    stores: list[ContentStore] = [aws.DynamoSessionEraser(table, dynamodb)]
    if IDEMPOTENCY.name_in(settings):
        own = parts.client(config, base.clients.idempotency_dynamodb, "dynamodb")
        stores.append(aws.DynamoIdempotencyEraser(IDEMPOTENCY.name_in(settings), own))
    if routing is not None:
        stores.append(aws.DynamoEmbeddingCacheEraser(table, dynamodb, _fingerprints(routing)))
    stores.append(ImportContent(import_store(base)))
    stores.append(aws_jobs.job_eraser(base))  # jobs' results and requests (wiring/aws_jobs.py)
    if settings.migration_archive_bucket:
        archives = aws.S3VectorArchives(settings.migration_archive_bucket, base.tenant_client("s3"))
        stores.append(ArchivedVectors(archives))
    record_eraser = aws.DynamoRecordEraser(table, dynamodb)
    if snapshots is not None:
        deleter = aws.DynamoSnapshotDeleter(table, dynamodb)
        stores.append(SnapshotBundles(snapshots, deleter, record_eraser.namespaces))
    eraser: FileEraser = files if hasattr(files, "purge_file") else PosixFileEraser(files)  # type: ignore[assignment]
    launcher = workflow_launcher(config, base.clients, PURGE)
    vectors = base.tenant_client("s3vectors", S3VECTORS_CLIENT_CONFIG)
    return ErasureService(
        records=base.store,
        record_eraser=record_eraser,
        index=routing.index if routing else base.index,
        embedder_of=routing.read_embedder if routing else (lambda _tenant: base.embedder),
        files=MemoryFileLines(files, eraser, namespaces),
        stores=stores,
        ledger=aws.dynamo_purge_ledger(table, dynamodb),
        clock=base.clock,
        index_probe=aws.S3VectorsIndexProbe(settings.vector_bucket, vectors, _index_names(base)),
        launcher=launcher,
        retention=aws_retention(settings.erasure_retention),
        caches=caches,
    )


def _index_names(base: AwsBase) -> Callable[[str], list[str]]:
    """tenant → the vector indexes holding its vectors: `mem-<t>`, and `mem-<t>.e<n>` of each migration."""
    from ..adapters.aws.s3vectors_index import index_name_for

    routing = base.routing

    def index_names(tenant: str) -> list[str]:
        if routing is None:
            return [base.index.index_name(tenant)]
        routes = routing.routes(tenant)
        return sorted(
            {
                index_name_for(tenant, suffix=f".{target.index_name}" if target.index_name else "")
                for target in (routes.read, *routes.writes)
            }
        )

    return index_names


def _fingerprints(routing: VectorRouting) -> Callable[[str], list[str]]:
    def fingerprints(tenant: str) -> list[str]:
        routes = routing.routes(tenant)
        return sorted({target.fingerprint for target in (routes.read, *routes.writes)})

    return fingerprints
