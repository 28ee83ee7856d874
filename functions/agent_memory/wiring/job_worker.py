"""The local server's job worker process (adapters/local/job_process.py starts it with `spawn`).

It builds its own local runtime over the server's data directory (SQLite and the files directory are shared
between processes; the vector cache of each process catches up from the store), lowers its CPU priority so
that the request process wins the cores when both want them, and runs the queued jobs, tenants in turn, until
the server asks it to stop or the server process is gone."""

from __future__ import annotations

import logging
import multiprocessing
import os
import select
import threading
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

from ..domain import memo
from .config import RuntimeSettings

if TYPE_CHECKING:
    from ..domain.jobs.model import Job
    from ..domain.jobs.service import JobService

logger = logging.getLogger(__name__)

IDLE_POLL_SECONDS = 1.0
"""How often an idle worker looks at the store without being woken (a wake-up may be missed at start)."""


def main(settings: RuntimeSettings, wake: Connection) -> None:
    """The worker's loop: the request process writes a byte to `wake` when it queues a job, and closes it to
    stop the worker (after the job that is running)."""
    logging.basicConfig(level=logging.INFO, format="agent-memory-jobs %(levelname)s %(name)s: %(message)s")
    _lower_priority(settings.service.jobs.worker_niceness)
    _exit_with_parent()
    from .local import build_local

    jobs = build_local(settings).services.jobs
    assert jobs is not None
    worker, fd = os.getpid(), wake.fileno()
    while _drain(fd):
        if run_one(jobs, worker) is None:
            select.select([fd], [], [], IDLE_POLL_SECONDS)


def run_one(jobs: JobService, worker: int) -> Job | None:
    """The next job (None when there was none, or the store failed: wait), then the request-scoped memos
    emptied: nothing the job derived from memory text stays in the worker (domain/memo.py)."""
    try:
        return jobs.run_next(worker)
    except Exception:  # the store itself failed (disk full, locked): wait and try again
        logger.exception("the job worker could not take the next job")
        return None
    finally:
        memo.clear_all()


def _drain(fd: int) -> bool:
    """Read the wake-up bytes waiting; False at end of file (the server closed the pipe or is gone)."""
    while select.select([fd], [], [], 0)[0]:
        if not os.read(fd, 4096):
            return False
    return True


def _lower_priority(niceness: int) -> None:
    try:
        os.nice(niceness)
    except (AttributeError, OSError):  # no nice() on this platform, or not allowed: run at the same priority
        logger.warning("the job worker could not lower its CPU priority")


def _exit_with_parent() -> None:
    """When the server process is gone (killed), stop at once: the next server fails the job as interrupted;
    a worker left running would keep writing for a server that no longer exists."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()
        os._exit(0)

    threading.Thread(target=watch, name="agent-memory-jobs-parent", daemon=True).start()
