"""`JobRunner` of the local server: a bounded pool of background threads that takes the tenants' queued
jobs in turn (round robin), so one tenant's sixteen batches do not make another tenant's one import wait
behind all of them. A tenant may have `max_queued_per_tenant` jobs waiting; beyond that `submit` refuses
(`JobsBusy`, 429 with Retry-After) instead of piling up work the server cannot get to.

Threads start on the first job, not when the runtime is built (a CLI command never starts one)."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict, deque
from collections.abc import Callable

from ...domain.jobs.service import JobsBusy

logger = logging.getLogger(__name__)

Task = Callable[[], None]


class FairJobPool:
    def __init__(
        self, workers: int = 1, max_queued_per_tenant: int = 32, retry_after_seconds: int = 5
    ) -> None:
        if workers < 1:
            raise ValueError("a job pool needs at least one worker")
        self._workers = workers
        self._max_queued = max_queued_per_tenant
        self._retry_after = retry_after_seconds
        self._queues: OrderedDict[str, deque[Task]] = OrderedDict()
        self._ready = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._busy = 0

    def submit(self, tenant: str, task: Task) -> None:
        with self._ready:
            queue = self._queues.setdefault(tenant, deque())
            if len(queue) >= self._max_queued:
                raise JobsBusy(
                    f"this tenant already has {self._max_queued} jobs waiting; retry after "
                    f"{self._retry_after} s, once some have finished (GET /v1/jobs/{{id}})",
                    limit=self._max_queued,
                    retry_after_seconds=self._retry_after,
                )
            queue.append(task)
            self._start_workers()
            self._ready.notify()

    def queued(self) -> int:
        with self._ready:
            return sum(len(queue) for queue in self._queues.values())

    def idle(self) -> bool:
        """Nothing queued and nothing running (for tests and a clean shutdown)."""
        with self._ready:
            return self._busy == 0 and not any(self._queues.values())

    def _start_workers(self) -> None:
        while len(self._threads) < self._workers:
            thread = threading.Thread(
                target=self._work, name=f"agent-memory-job-{len(self._threads)}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _next(self) -> Task:
        """The oldest job of the tenant whose turn it is; that tenant then goes to the back of the line."""
        with self._ready:
            while True:
                for tenant, queue in self._queues.items():
                    if queue:
                        task = queue.popleft()
                        self._queues.move_to_end(tenant)
                        if not queue:
                            del self._queues[tenant]
                        self._busy += 1
                        return task
                self._ready.wait()

    def _work(self) -> None:
        while True:
            task = self._next()
            try:
                task()
            except Exception:  # the job service records failures itself; this only keeps the worker alive
                logger.exception("a background job raised")
            finally:
                with self._ready:
                    self._busy -= 1
                    self._ready.notify_all()
