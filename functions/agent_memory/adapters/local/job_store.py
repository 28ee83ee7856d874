"""`JobStore` in SQLite (`<data_dir>/jobs.db`): one row per job, its JSON body, indexed by status so the
server can fail the jobs a stopped server left unfinished."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from ...domain.jobs.model import Job, JobStatus
from ._sqlite import SqliteDatabase, sortable_time, versioned_schema

_SCHEMA = versioned_schema(
    """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    tenant TEXT NOT NULL, id TEXT NOT NULL, status TEXT NOT NULL, finished_at TEXT, body TEXT NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs (status)
""",
    1,
    "jobs",
)
_UNFINISHED = (JobStatus.QUEUED.value, JobStatus.RUNNING.value)


class SqliteJobStore:
    def __init__(self, path: str | Path) -> None:
        self._db = SqliteDatabase(path, _SCHEMA)
        self._db.connection()

    def save(self, job: Job) -> None:
        finished = sortable_time(job.finished_at) if job.finished_at else None
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO jobs (tenant, id, status, finished_at, body) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT DO UPDATE SET status = excluded.status, finished_at = excluded.finished_at, "
                "body = excluded.body",
                (job.tenant, job.id, job.status.value, finished, job.model_dump_json()),
            )

    def get(self, tenant: str, job_id: str) -> Job | None:
        row = (
            self._db.connection()
            .execute("SELECT body FROM jobs WHERE tenant = ? AND id = ?", (tenant, job_id))
            .fetchone()
        )
        return Job.model_validate_json(row[0]) if row else None

    def delete(self, tenant: str, job_id: str) -> None:
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM jobs WHERE tenant = ? AND id = ?", (tenant, job_id))

    def unfinished(self) -> list[Job]:
        rows = (
            self._db.connection()
            .execute("SELECT body FROM jobs WHERE status IN (?, ?)", _UNFINISHED)
            .fetchall()
        )
        return [Job.model_validate_json(row[0]) for row in rows]

    def prune(self, finished_before: datetime) -> int:
        with self._db.transaction() as conn:
            cursor = conn.execute(
                "DELETE FROM jobs WHERE finished_at IS NOT NULL AND finished_at < ?",
                (sortable_time(finished_before),),
            )
            return cursor.rowcount

    def close(self) -> None:
        self._db.close()
