"""`JobRunner` of the local server: the jobs run in a separate worker process, never in the request process.

The worker (`agent_memory.job_worker.main`, started with multiprocessing's `spawn`) builds its own local
runtime over the same data directory, lowers its CPU priority (`os.nice`), and takes the queued jobs from the
SQLite job store, tenants in turn (`JobService.run_next`); it writes their progress and outcome back there,
where GET /v1/jobs/{id} reads them. The request process only saves a job and wakes the worker (a byte down a
pipe), so an import's parsing and a batch's embedding never compete with the request loop for its interpreter
lock.

The pipe, not a multiprocessing Event: an Event's condition counts its sleepers in shared semaphores, and a
worker killed while it waits leaves a sleeper that never wakes, so the next `set()` would block the server for
ever. A pipe cannot be left in such a state; its write end is non-blocking (a full pipe already means "wake
up"), and when the server closes it (or dies) the worker reads end-of-file and stops.

A supervisor thread watches the worker: when it dies while the server runs (a crash, the OOM killer, a
`kill -9`), the jobs it was running are failed (`worker_lost`, with its exit code) and a new worker is
started, after a pause that grows when it keeps dying at once. The worker starts with the first job (a CLI
command never starts one) and stops with the server; it also stops by itself when the server process is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import multiprocessing
import os
import threading
import time
import weakref
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from ...domain.jobs.model import Job

logger = logging.getLogger(__name__)

RESTART_PAUSE_SECONDS = (0.5, 2.0, 10.0, 30.0)
"""Pauses before restarting a worker that died, by how many times in a row it died within STABLE_SECONDS."""
STABLE_SECONDS = 60.0


class ProcessJobRunner:
    def __init__(
        self,
        target: Callable[..., None],
        args: tuple[Any, ...],
        unfinished: Callable[[], list[Job]],
        on_worker_lost: Callable[[int, int | None], int],
        workers: int = 1,
    ) -> None:
        """`target(*args, wake)` is the worker's main (a module-level function: spawn pickles it by
        name); `unfinished` lists the store's queued and running jobs; `on_worker_lost(pid, exit_code)` fails
        a dead worker's running jobs; `workers` processes run jobs side by side."""
        if workers < 1:
            raise ValueError("a job runner needs at least one worker")
        self._context = multiprocessing.get_context("spawn")
        self._target, self._args = target, args
        self._unfinished = unfinished
        self._on_worker_lost = on_worker_lost
        self._workers = workers
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._processes: list[BaseProcess] = []
        self._wakers: list[Connection] = []
        self._started = False
        self.restarts = 0
        """Workers started again after one died (for tests and logs)."""

    @property
    def worker_pids(self) -> list[int]:
        with self._lock:
            return [p.pid for p in self._processes if p.pid is not None and p.is_alive()]

    def submit(self, job: Job) -> None:
        self.start()
        with self._lock:
            wakers = list(self._wakers)
        for waker in wakers:
            _wake(waker)

    def idle(self) -> bool:
        return not self._unfinished()

    def start(self) -> None:
        """Start the workers, each with its supervisor thread, if not yet running."""
        with self._lock:
            if self._started or self._stop.is_set():
                return
            self._started = True
            atexit.register(_close_at_exit, weakref.ref(self))
            for slot in range(self._workers):
                process, waker = self._spawn()
                self._processes.append(process)
                self._wakers.append(waker)
                threading.Thread(
                    target=self._supervise, args=(slot,), name=f"agent-memory-jobs-{slot}", daemon=True
                ).start()

    def _spawn(self) -> tuple[BaseProcess, Connection]:
        reader, writer = self._context.Pipe(duplex=False)
        process = self._context.Process(
            target=self._target, args=(*self._args, reader), name="agent-memory-jobs", daemon=True
        )
        process.start()
        reader.close()  # the worker has its own copy
        os.set_blocking(writer.fileno(), False)
        _wake(writer)  # jobs may be waiting already
        return process, writer

    def _supervise(self, slot: int) -> None:
        deaths = 0
        while True:
            with self._lock:
                process = self._processes[slot]
            started = time.monotonic()
            process.join()
            if self._stop.is_set():
                return
            code, pid = process.exitcode, process.pid or 0
            try:
                lost = self._on_worker_lost(pid, code)
            except (
                Exception
            ):  # the store failed: the jobs stay `running` until the next restart of the server
                logger.exception("could not fail the jobs of the lost job worker %s", pid)
                lost = -1
            deaths = deaths + 1 if time.monotonic() - started < STABLE_SECONDS else 1
            pause = RESTART_PAUSE_SECONDS[min(deaths, len(RESTART_PAUSE_SECONDS)) - 1]
            logger.error(
                "the job worker (pid %s) stopped with exit code %s; %d running job(s) failed; restarting it "
                "in %.1f s",
                pid,
                code,
                lost,
                pause,
            )
            if self._stop.wait(pause):
                return
            with self._lock:
                if self._stop.is_set():
                    return
                self._wakers[slot].close()
                self._processes[slot], self._wakers[slot] = self._spawn()
                self.restarts += 1

    def close(self, timeout: float = 10.0) -> None:
        """Stop the workers (each finishes the job it is running first, up to `timeout`, then is terminated;
        a job cut short is failed as interrupted when the server starts again)."""
        with self._lock:
            self._stop.set()
            for waker in self._wakers:
                waker.close()  # end of file: the worker stops once its job is done
            processes = list(self._processes)
        for process in processes:
            process.join(timeout)
            if process.is_alive():
                process.terminate()
                process.join(5)


def _wake(waker: Connection) -> None:
    """One byte down the worker's pipe; a full pipe (the worker is busy) or a dead worker: nothing to do."""
    with contextlib.suppress(OSError):  # BlockingIOError (full), BrokenPipeError (gone), or closed
        os.write(waker.fileno(), b"w")


def _close_at_exit(runner: weakref.ref[ProcessJobRunner]) -> None:
    """At interpreter exit (before multiprocessing terminates its daemon children): stop the workers, so the
    supervisors do not take their exit for a crash."""
    alive = runner()
    if alive is not None:
        alive.close(timeout=2.0)


class ThreadJobRunner:
    """Runs the jobs on one background thread of this process, tenants in turn like the worker process.

    Only for a runtime built around objects a worker process could not rebuild from the settings (an injected
    clock, write judge or AWS clients: tests and programs embedding the service); `agent-memory serve` always
    runs its jobs in a worker process (`ProcessJobRunner`)."""

    def __init__(self, unfinished: Callable[[], list[Job]], run_next: Callable[[int], Job | None]) -> None:
        self._unfinished = unfinished
        self._run_next = run_next
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, job: Job) -> None:
        self.start()
        self._wake.set()

    def idle(self) -> bool:
        return not self._unfinished()

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="agent-memory-jobs", daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        worker = threading.get_native_id()
        while True:
            self._wake.clear()
            try:
                while self._run_next(worker) is not None:
                    pass
            except Exception:  # the store failed: try again at the next wake-up
                logger.exception("the job thread could not take the next job")
            self._wake.wait(1.0)
