"""On-demand dreaming for the local runtime: the sweep runs in a background thread of the server process.

In AWS, `POST /v1/admin/dream/start` starts the Step Functions workflow; locally the same route queues the
same sweep (`DreamingService.run`, namespace by namespace) on one worker thread, so a start answers 202 at
once and sweeps never overlap. Each run writes its `run.json` and `REPORT.md` like the nightly sweep; a
failure is logged and does not stop the other namespaces."""

from __future__ import annotations

import logging
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

logger = logging.getLogger(__name__)

KEPT_EXECUTIONS = 100

Sweep = Callable[[str, str], Any]
"""(tenant, namespace) → runs one namespace's sweep."""
Namespaces = Callable[[str], Sequence[str]]
"""tenant → every namespace of the tenant."""


class LocalDreamLauncher:
    def __init__(self, sweep: Sweep, namespaces: Namespaces) -> None:
        self._sweep = sweep
        self._namespaces = namespaces
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-memory-dream")
        self.started: OrderedDict[str, Future[list[str]]] = OrderedDict()
        """The last KEPT_EXECUTIONS runs: execution id → its future (its result: the namespaces swept)."""

    def start(self, tenant: str, namespaces: Sequence[str]) -> str:
        execution = f"local-dream-{uuid.uuid4().hex}"
        self.started[execution] = self._executor.submit(self._run, execution, tenant, list(namespaces))
        while len(self.started) > KEPT_EXECUTIONS:  # a long-running server does not keep every run
            self.started.popitem(last=False)
        return execution

    def _run(self, execution: str, tenant: str, namespaces: list[str]) -> list[str]:
        swept = []
        for namespace in namespaces or list(self._namespaces(tenant)):
            try:
                self._sweep(tenant, namespace)
                swept.append(namespace)
            except Exception:  # one namespace's failure must not stop the others (as the Map in AWS)
                logger.exception("dreaming %s failed for %s %s", execution, tenant, namespace)
        return swept
