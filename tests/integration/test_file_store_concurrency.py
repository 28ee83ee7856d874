"""Concurrent writers of one memory file: separate OS processes (spawn) and threads share MEMORY.md through
`PosixFileStore`'s lock. Without the lock, read-modify-write loses entries and cap checks race."""

from __future__ import annotations

import multiprocessing
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent_memory.adapters.posix.file_store import PosixFileStore
from agent_memory.domain.errors import CapExceeded
from agent_memory.domain.files.memory_files import MemoryFilesService, parse_entries, render_entries
from agent_memory.domain.memory.policy import FileCaps

TENANT = "acme"
NS = "/projects/billing"
WORKERS = 4
ENTRIES_PER_WORKER = 10
ENTRY_CHARS = 20
NEAR_CAP = 300
JOIN_TIMEOUT_S = 120


class FixedClock:
    def now(self) -> datetime:
        return datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def no_findings(text: str) -> str | None:
    return None


def service(root: str, memory_cap: int) -> MemoryFilesService:
    return MemoryFilesService(
        PosixFileStore(Path(root)), FileCaps(memory_md=memory_cap), no_findings, FixedClock()
    )


def entry_text(worker: int, n: int) -> str:
    return f"worker {worker} entry {n:02d}".ljust(ENTRY_CHARS, ".")


def add_entries(root: str, memory_cap: int, worker: int, barrier: Any, results: Any) -> None:
    """Child process: wait for all siblings, then add this worker's entries; report (added, refused)."""
    svc = service(root, memory_cap)
    barrier.wait(timeout=60)
    added = refused = 0
    for n in range(ENTRIES_PER_WORKER):
        try:
            svc.add(TENANT, NS, "memory", entry_text(worker, n))
            added += 1
        except CapExceeded:
            refused += 1
    results.put((worker, added, refused))


def run_workers(root: Path, memory_cap: int) -> list[tuple[int, int, int]]:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    processes = [
        ctx.Process(target=add_entries, args=(str(root), memory_cap, worker, barrier, results))
        for worker in range(WORKERS)
    ]
    for process in processes:
        process.start()
    reports = [results.get(timeout=JOIN_TIMEOUT_S) for _ in processes]
    for process in processes:
        process.join(timeout=JOIN_TIMEOUT_S)
        assert process.exitcode == 0
    return sorted(reports)


def read_memory(root: Path) -> str:
    return (root / TENANT / "projects" / "billing" / "MEMORY.md").read_text(encoding="utf-8")


def test_given_four_processes_when_each_adds_ten_entries_then_all_forty_are_in_a_well_formed_file(
    tmp_path: Path,
) -> None:
    reports = run_workers(tmp_path, memory_cap=100_000)

    text = read_memory(tmp_path)
    entries = parse_entries(text)
    expected = {entry_text(w, n) for w in range(WORKERS) for n in range(ENTRIES_PER_WORKER)}
    assert reports == [(w, ENTRIES_PER_WORKER, 0) for w in range(WORKERS)]
    assert len(entries) == WORKERS * ENTRIES_PER_WORKER
    assert set(entries) == expected
    assert text == render_entries(entries)  # canonical: no torn writes, no doubled delimiters
    # Each worker's own entries keep their order: every add saw the previous one.
    for w in range(WORKERS):
        mine = [e for e in entries if e.startswith(f"worker {w} ")]
        assert mine == sorted(mine)


def test_given_processes_racing_near_the_cap_then_the_file_never_exceeds_it_and_no_add_is_lost(
    tmp_path: Path,
) -> None:
    # Equal-size entries: the first costs ENTRY_CHARS + 1 (newline), each further ENTRY_CHARS + 3 ("\n§\n").
    fits = 1 + (NEAR_CAP - (ENTRY_CHARS + 1)) // (ENTRY_CHARS + 3)
    assert fits < WORKERS * ENTRIES_PER_WORKER  # the race is real: more adds are attempted than fit

    reports = run_workers(tmp_path, memory_cap=NEAR_CAP)

    text = read_memory(tmp_path)
    entries = parse_entries(text)
    assert len(text) <= NEAR_CAP
    assert sum(added for _, added, _ in reports) == len(entries) == fits
    assert sum(refused for _, _, refused in reports) == WORKERS * ENTRIES_PER_WORKER - fits
    assert text == render_entries(entries)


def test_given_threads_of_one_process_when_adding_concurrently_then_no_entry_is_lost(tmp_path: Path) -> None:
    svc = service(str(tmp_path), 100_000)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for n in range(ENTRIES_PER_WORKER):
                svc.add(TENANT, NS, "memory", entry_text(worker, n))
        except BaseException as exc:  # surfaced in the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=JOIN_TIMEOUT_S)

    assert errors == []
    assert len(parse_entries(read_memory(tmp_path))) == 8 * ENTRIES_PER_WORKER


@pytest.fixture(autouse=True)
def _no_leftover_temp_files(tmp_path: Path) -> Any:
    yield
    assert not list(tmp_path.rglob("*.tmp"))
