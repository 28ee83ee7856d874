"""The local runtime (`agent-memory serve` and the CLI): SQLite records + FTS5 keywords + in-process vectors +
an offline embedder + a local files directory, every service in one process."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..adapters.clock import SystemClock
from ..api.context import Services
from ..api.latency import LatencyWindow
from ..domain.memory.service import MemoryService
from ..domain.ports import Clock, Embedder, FileStore, RecordStore, SearchIndex
from ..settings.service import Settings
from . import parts
from .config import RuntimeSettings
from .parts import AwsClients, NamespaceLister, WingParts

if TYPE_CHECKING:
    from ..adapters.local.api_keys import LocalApiKeys
    from ..domain.erasure.ports import ProcessCaches
    from ..domain.erasure.service import ErasureService
    from ..domain.erasure.snapshots import SnapshotReader
    from ..domain.files.memory_files import MemoryFilesService
    from ..domain.jobs.service import JobService
    from ..domain.memory.write_judge import JudgeModel
    from ..domain.migration.routing import VectorRouting
    from ..domain.migration.service import MigrationService
    from ..domain.skills.service import SkillsService


@dataclass(frozen=True)
class LocalRuntime:
    services: Services
    keys: LocalApiKeys
    data_dir: Path
    store: RecordStore | None = None
    """The record store under the services, for maintenance commands (`agent-memory repair`)."""


def build_local(
    settings: Settings | RuntimeSettings,
    clock: Clock | None = None,
    *,
    judge: JudgeModel | None = None,
    clients: AwsClients | None = None,
    in_process_jobs: bool | None = None,
) -> LocalRuntime:
    """Every service of the local runtime over `<data_dir>`.

    `judge`: an explicit write-judge model port; without one, AGENT_MEMORY_WRITE_JUDGE_MODEL_ID names a Bedrock
    model called with the machine's AWS credentials (`clients.bedrock_runtime` when given). There is no offline
    text model: a policy naming `write_judge_tenants` with neither is refused (Misconfigured).

    `in_process_jobs`: run jobs on a thread of this process rather than in a worker process; by default only
    when a clock, judge or clients are injected (the worker rebuilds the runtime from the settings alone)."""
    config = RuntimeSettings.of(settings)
    # What a job worker process cannot rebuild from the settings: with any of it, jobs run on a thread here.
    injected = clock is not None or judge is not None or clients is not None
    in_process = injected if in_process_jobs is None else in_process_jobs
    clock, clients = clock or SystemClock(), clients or AwsClients()
    data_dir = config.service.data_dir.expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    core = _local_core(config, data_dir, clock, judge, clients)
    jobs = local_jobs(config, data_dir, clock, in_process=in_process)
    services = _local_services(config, data_dir, core, clock, clients, jobs)
    services = replace(services, **parts.wing_services(_wing_parts(config, core, clock, clients), None))
    if services.jobs is not None:
        services.jobs.bind(job_executor(services))
    return LocalRuntime(
        services=services, keys=local_keys(config.service), data_dir=data_dir, store=core.store
    )


@dataclass(frozen=True)
class _LocalCore:
    """What every local service stands on: the records, the memory service over the tenant's embedding-migration
    routing (and that migration), the memory files and skills."""

    store: RecordStore
    routing: VectorRouting
    migration: MigrationService
    memory: MemoryService
    file_store: FileStore
    namespaces: NamespaceLister
    files: MemoryFilesService
    skills: SkillsService


def _local_core(
    config: RuntimeSettings, data_dir: Path, clock: Clock, judge: JudgeModel | None, clients: AwsClients
) -> _LocalCore:
    from ..adapters.local.embedders import build_embedder
    from ..adapters.local.sqlite_store import SqliteRecordStore
    from ..adapters.posix.file_store import PosixFileStore

    store = SqliteRecordStore(data_dir / "memory.db")
    embedder = build_embedder(config.service.embedder)
    # Vectors go through the tenant's embedding-migration routing (domain/migration): reads from one index,
    # writes to both during a migration.
    routing, migration = local_migration(data_dir, store, embedder, clock)
    memory = MemoryService(
        store=store,
        index=routing.index,
        embedder=embedder,
        clock=clock,
        policy=config.service.policy,
        judge=judge or parts.write_judge(config, clients),
        read_embedder=routing.read_embedder,
        lexicon=parts.lexicon(config.service.wordnet_dir),
    )
    files_root = data_dir / "files"
    file_store = PosixFileStore(files_root)
    scan = parts.scanner()
    return _LocalCore(
        store=store,
        routing=routing,
        migration=migration,
        memory=memory,
        file_store=file_store,
        namespaces=parts.namespace_dirs(files_root),
        files=parts.memory_files(config, file_store, clock, scan),
        skills=parts.skills(config, file_store, clock, scan),
    )


def _wing_parts(config: RuntimeSettings, core: _LocalCore, clock: Clock, clients: AwsClients) -> WingParts:
    return WingParts(
        config=config,
        clients=clients,
        clock=clock,
        store=core.store,
        memory=core.memory,
        file_store=core.file_store,
        namespaces=core.namespaces,
        files=core.files,
        skills=core.skills,
    )


def _local_services(
    config: RuntimeSettings,
    data_dir: Path,
    core: _LocalCore,
    clock: Clock,
    clients: AwsClients,
    jobs: JobService,
) -> Services:
    """Every service over the core: sessions and chat, dreaming (started as a job), the curator, versioning,
    the purge, imports and the jobs, each on its own store under `data_dir`."""
    from ..adapters.idempotency import IdempotentRunner
    from ..adapters.local.idempotency_store import SqliteIdempotencyStore
    from ..adapters.local.import_store import SqliteImportStore
    from ..adapters.local.session_store import SqliteSessionStore
    from ..adapters.local.versioning_store import SqliteVersioningStore
    from ..api.jobs import JobLauncher
    from ..settings.workflows import DREAMING

    memory, store, files, skills, namespaces = (
        core.memory,
        core.store,
        core.files,
        core.skills,
        core.namespaces,
    )
    sessions, chat = parts.sessions_and_chat(
        config, None, SqliteSessionStore(data_dir / "sessions.db"), files, memory, clock, skills
    )
    versions = SqliteVersioningStore(data_dir / "versioning.db")
    erasure = local_erasure(
        data_dir,
        store,
        core.routing.index,
        core.routing.read_embedder,
        core.file_store,
        namespaces,
        clock,
        snapshots=versions,
        caches=[memory],
    )
    return Services(
        memory=memory,
        files=files,
        recall_latency=LatencyWindow(),
        idempotency=IdempotentRunner(SqliteIdempotencyStore(data_dir / "idempotency.db")),
        sessions=sessions,
        chat=chat,
        dreaming=parts.dreaming(config, clients, memory, store, files, clock, namespaces),
        dream_launcher=JobLauncher(jobs, DREAMING),
        skills=skills,
        curator=parts.curator(config, clients, skills, core.file_store, clock, namespaces),
        migration=core.migration,
        versioning=parts.versioning(
            config, memory, store, core.file_store, versions, versions, clock, sessions, namespaces
        ),
        erasure=erasure,
        imports=parts.imports(memory, files, skills, SqliteImportStore(data_dir / "imports.db"), clock),
        archive_reader=parts.archive_reader,
        jobs=jobs,
    )


def local_jobs(
    settings: RuntimeSettings, data_dir: Path, clock: Clock, *, in_process: bool = False
) -> JobService:
    """Long work as jobs (domain/jobs) run by a separate worker process (adapters/local/job_process.py,
    wiring/job_worker.py) that starts with the first job; `in_process`: on a thread of this process instead
    (a runtime built with an injected clock, judge or clients, which the worker could not share). The local
    server (not a CLI command beside it) fails what a stopped server left unfinished (`JobService.recover`)."""
    from ..adapters.local.job_process import ProcessJobRunner, ThreadJobRunner
    from ..adapters.local.job_store import SqliteJobStore
    from ..domain.jobs.service import JobService
    from .job_worker import main as worker_main

    config = settings.service.jobs
    store = SqliteJobStore(data_dir / "jobs.db")
    service: JobService | None = None

    def worker_lost(pid: int, exit_code: int | None) -> int:
        assert service is not None
        return service.fail_running(pid, exit_code)

    def run_next(worker: int) -> Any:
        assert service is not None
        return service.run_next(worker)

    runner: ProcessJobRunner | ThreadJobRunner = (
        ThreadJobRunner(store.unfinished, run_next)
        if in_process
        else ProcessJobRunner(worker_main, (settings,), store.unfinished, worker_lost, config.workers)
    )
    service = JobService(
        store,
        runner,
        clock,
        batch_threshold=config.batch_threshold,
        max_queued_per_tenant=config.max_queued_per_tenant,
    )
    return service


def job_executor(services: Services) -> Any:
    """What runs each kind of job: the routes' synchronous paths (api/jobs.py) over this runtime's services."""
    from ..api.jobs import run_job

    return lambda job, payload: run_job(services, job, payload)


def local_keys(settings: Settings) -> LocalApiKeys:
    """The local server's API keys (`<data_dir>/api-keys.json`): `agent-memory keys` and the dev key."""
    from ..adapters.local.api_keys import LocalApiKeys

    return LocalApiKeys(settings.keys_file)


def local_migration(
    data_dir: Path, records: RecordStore, embedder: Embedder, clock: Clock
) -> tuple[VectorRouting, MigrationService]:
    """The routing the memory service reads and writes through, and the migration service over it, with the
    backfill on a thread of this process."""
    from ..adapters.local.migration import (
        LocalBackfillLauncher,
        LocalIndexCatalog,
        SqliteEmbeddingCache,
        SqliteMigrationStore,
        SystemPacer,
        build_embedder_spec,
    )
    from ..adapters.local.search_index import LocalSearchIndex
    from ..domain.migration.routing import VectorRouting
    from ..domain.migration.service import MigrationService

    routing = VectorRouting(
        SqliteMigrationStore(data_dir / "migrations.db"),
        LocalIndexCatalog(data_dir, LocalSearchIndex(data_dir / "index")),
        embedder,
        build_embedder_spec,
        clock,
        cache=SqliteEmbeddingCache(data_dir / "embedding_cache.db"),
    )
    service: MigrationService | None = None

    def current() -> MigrationService:
        assert service is not None
        return service

    service = MigrationService(records, routing, SystemPacer(), launcher=LocalBackfillLauncher(current))
    return routing, service


def local_erasure(
    data_dir: Path,
    records: RecordStore,
    index: SearchIndex,
    embedder_of: Any,
    files: FileStore,
    file_namespaces: NamespaceLister,
    clock: Clock,
    snapshots: SnapshotReader | None = None,
    caches: Sequence[ProcessCaches] = (),
) -> ErasureService:
    """The purge over every store of the local runtime (`<data_dir>`); `caches`: this process's memory
    service, whose cross-request entries of the tenant a purge ending here drops."""
    from ..adapters.local import erasure as local
    from ..adapters.local.import_store import SqliteImportStore
    from ..adapters.local.raw_scan import LedgerSeal, RawDataScan
    from ..domain.erasure.archives import ArchivedVectors
    from ..domain.erasure.files import MemoryFileLines, PosixFileEraser
    from ..domain.erasure.imports import ImportContent
    from ..domain.erasure.ports import ContentStore
    from ..domain.erasure.service import ErasureService
    from ..domain.erasure.snapshots import SnapshotBundles

    record_eraser = local.SqliteRecordEraser(data_dir / "memory.db")
    extra: list[ContentStore] = [
        ImportContent(SqliteImportStore(data_dir / "imports.db")),
        ArchivedVectors(local.LocalVectorArchives(data_dir)),
    ]
    if snapshots is not None:
        deleter = local.SqliteSnapshotDeleter(data_dir / "versioning.db")
        extra.append(SnapshotBundles(snapshots, deleter, record_eraser.namespaces))
    return ErasureService(
        records=records,
        record_eraser=record_eraser,
        index=index,
        embedder_of=embedder_of,
        files=MemoryFileLines(files, PosixFileEraser(files), file_namespaces),
        stores=[
            local.SqliteSessionEraser(data_dir / "sessions.db"),
            local.SqliteIdempotencyEraser(data_dir / "idempotency.db"),
            local.SqliteJobEraser(data_dir / "jobs.db"),
            local.SqliteEmbeddingCacheEraser(data_dir / "embedding_cache.db"),
            *extra,
        ],
        ledger=local.SqlitePurgeLedger(data_dir / "purges.db"),
        clock=clock,
        index_probe=local.LocalIndexProbe(data_dir),
        finalizers=[RawDataScan(data_dir)],
        sealers=[LedgerSeal(data_dir / "purges.db")],
        retention=local.LOCAL_RETENTION,
        caches=caches,
    )


def open_source_tree(path: Path) -> Any:
    """A directory or file on disk, or an archive (by its name): the importers' `SourceTree` (`agent-memory
    import`)."""
    from ..adapters.archive_tree import ArchiveSourceTree
    from ..adapters.posix.source_tree import PosixSourceTree
    from ..domain.errors import ValidationFailed

    name = path.name.lower()
    if name.endswith((".zip", ".tar.gz", ".tgz")):
        try:
            data = path.read_bytes()
        except OSError as error:
            raise ValidationFailed(f"cannot read {path}: {error.strerror or error}") from None
        return ArchiveSourceTree(data, name=str(path), max_files=20_000, max_total_bytes=512 * 1024 * 1024)
    return PosixSourceTree(path)
