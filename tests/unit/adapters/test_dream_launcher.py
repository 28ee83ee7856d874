"""The local on-demand dreaming launcher: the same sweep on one background thread, runs never overlapping."""

from __future__ import annotations

import threading

from agent_memory.adapters.local.dream_launcher import KEPT_EXECUTIONS, LocalDreamLauncher


def test_runs_sweep_the_named_or_all_namespaces_in_order_and_a_failure_does_not_stop_the_rest():
    swept: list[tuple[str, str]] = []

    def sweep(tenant: str, namespace: str) -> None:
        if namespace == "/b":
            raise RuntimeError("boom")
        swept.append((tenant, namespace))

    launcher = LocalDreamLauncher(sweep, lambda tenant: ["/a", "/b", "/c"])
    named = launcher.start("acme", ["/c"])
    everything = launcher.start("acme", [])

    assert launcher.started[named].result(timeout=30) == ["/c"]
    assert launcher.started[everything].result(timeout=30) == ["/a", "/c"]
    assert swept == [("acme", "/c"), ("acme", "/a"), ("acme", "/c")]


def test_only_the_latest_executions_are_kept():
    gate = threading.Event()
    launcher = LocalDreamLauncher(lambda tenant, namespace: gate.wait(30), lambda tenant: [])
    ids = [launcher.start("acme", ["/a"]) for _ in range(KEPT_EXECUTIONS + 5)]
    gate.set()

    assert list(launcher.started) == ids[-KEPT_EXECUTIONS:]
    assert launcher.started[ids[-1]].result(timeout=30) == ["/a"]
