"""`JobStore` in SQLite (`<data_dir>/jobs.db`): one row per job, its JSON body, indexed by status so the
server can fail the jobs a stopped server left unfinished; and, in `job_payloads`, what a queued job is to do
(its request, as JSON), kept only until the job finishes. The request process writes both; the job worker
process (job_worker.py) claims queued jobs from here, tenants in turn, and writes their progress back."""

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
CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs (status);
CREATE TABLE IF NOT EXISTS job_payloads (
    tenant TEXT NOT NULL, id TEXT NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (tenant, id)
)
""",
    1,
    "jobs",
)
_UNFINISHED = (JobStatus.QUEUED.value, JobStatus.RUNNING.value)


class SqliteJobStore:
    def __init__(self, path: str | Path) -> None:
        self._db = SqliteDatabase(path, _SCHEMA)
        self._db.connection()

    def save(self, job: Job, payload: str | None = None) -> None:
        """Insert or update the job; `payload` (its first save) is kept beside it until it finishes."""
        finished = sortable_time(job.finished_at) if job.finished_at else None
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO jobs (tenant, id, status, finished_at, body) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT DO UPDATE SET status = excluded.status, finished_at = excluded.finished_at, "
                "body = excluded.body",
                (job.tenant, job.id, job.status.value, finished, job.model_dump_json()),
            )
            if payload is not None:
                conn.execute(
                    "INSERT OR REPLACE INTO job_payloads (tenant, id, payload) VALUES (?, ?, ?)",
                    (job.tenant, job.id, payload),
                )
            if job.status not in (JobStatus.QUEUED, JobStatus.RUNNING):
                conn.execute("DELETE FROM job_payloads WHERE tenant = ? AND id = ?", (job.tenant, job.id))

    def claim(self, job: Job, *, lease_expired_at: datetime | None = None) -> bool:
        with self._db.transaction() as conn:
            row = conn.execute(
                "SELECT body FROM jobs WHERE tenant = ? AND id = ?", (job.tenant, job.id)
            ).fetchone()
            if row is None or not _claimable(Job.model_validate_json(row[0]), lease_expired_at):
                return False
            conn.execute(
                "UPDATE jobs SET status = ?, body = ? WHERE tenant = ? AND id = ?",
                (job.status.value, job.model_dump_json(), job.tenant, job.id),
            )
            return True

    def get(self, tenant: str, job_id: str) -> Job | None:
        row = (
            self._db.connection()
            .execute("SELECT body FROM jobs WHERE tenant = ? AND id = ?", (tenant, job_id))
            .fetchone()
        )
        return Job.model_validate_json(row[0]) if row else None

    def payload(self, tenant: str, job_id: str) -> str | None:
        row = (
            self._db.connection()
            .execute("SELECT payload FROM job_payloads WHERE tenant = ? AND id = ?", (tenant, job_id))
            .fetchone()
        )
        return str(row[0]) if row else None

    def delete(self, tenant: str, job_id: str) -> None:
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM jobs WHERE tenant = ? AND id = ?", (tenant, job_id))
            conn.execute("DELETE FROM job_payloads WHERE tenant = ? AND id = ?", (tenant, job_id))

    def unfinished(self) -> list[Job]:
        rows = (
            self._db.connection()
            .execute("SELECT body FROM jobs WHERE status IN (?, ?)", _UNFINISHED)
            .fetchall()
        )
        return [Job.model_validate_json(row[0]) for row in rows]

    def queued(self, tenant: str | None = None) -> list[Job]:
        """Jobs waiting to run (of one tenant, or of all), oldest first."""
        sql, args = "SELECT body FROM jobs WHERE status = ?", [JobStatus.QUEUED.value]
        if tenant is not None:
            sql, args = sql + " AND tenant = ?", [*args, tenant]
        rows = self._db.connection().execute(sql, args).fetchall()
        return sorted((Job.model_validate_json(row[0]) for row in rows), key=lambda j: (j.created_at, j.id))

    def prune(self, finished_before: datetime) -> int:
        with self._db.transaction() as conn:
            cursor = conn.execute(
                "DELETE FROM jobs WHERE finished_at IS NOT NULL AND finished_at < ?",
                (sortable_time(finished_before),),
            )
            conn.execute(
                "DELETE FROM job_payloads WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.tenant = "
                "job_payloads.tenant AND jobs.id = job_payloads.id AND jobs.status IN (?, ?))",
                _UNFINISHED,
            )
            return cursor.rowcount

    def close(self) -> None:
        self._db.close()


def _claimable(stored: Job, lease_expired_at: datetime | None) -> bool:
    if stored.status is JobStatus.QUEUED:
        return True
    return (
        lease_expired_at is not None
        and stored.status is JobStatus.RUNNING
        and stored.lease_until is not None
        and stored.lease_until < lease_expired_at
    )
