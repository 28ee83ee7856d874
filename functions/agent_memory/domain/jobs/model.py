"""A job's record: what was asked, where it is, and what came of it."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from ..model import Model

JobKind = Literal["import", "memory_batch", "dream", "purge"]


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


FINISHED = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED})


class JobProgress(Model):
    done: int = 0
    """Items processed so far (memories of a batch, source items of an import)."""
    total: int | None = None
    """Items in all, when known (an import knows it once the archive is read)."""


class JobError(Model):
    """Why a job failed: the same `{error, message, details}` a synchronous request would have answered."""

    error: str
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


class Job(Model):
    id: str
    tenant: str
    key_id: str
    """The API key that submitted it: only that key (of that tenant) can read it."""
    kind: JobKind
    namespaces: list[str] = Field(default_factory=list)
    status: JobStatus = JobStatus.QUEUED
    progress: JobProgress = Field(default_factory=JobProgress)
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    result: dict[str, Any] | None = None
    """When `succeeded`: the body the synchronous route answers (a batch's results, an import's report)."""
    error: JobError | None = None
    """When `failed`: what went wrong. Items a batch or an import wrote before the failure stay written."""
    worker: int | None = None
    """The worker (process id) that claimed it: when that worker dies, its running jobs are failed. Internal,
    never part of an API answer."""
    lease_until: datetime | None = None
    """A runtime that runs each job in its own invocation (AWS: the job function): until when the invocation
    that claimed it may still be running it. A retried invocation may claim it again only after that (the
    first one timed out or crashed), so a duplicate event never runs a job twice at once. Internal."""
