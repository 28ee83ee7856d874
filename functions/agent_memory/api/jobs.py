"""The work of the routes that answer 202 (routes/jobs.py): a large memory batch and an archive import, run on
the job runner outside the request, with the purge fence (api/purge_fence.py) checked again when the job
starts and, for an import, between its batches. The request's fence only covered the moment the job was accepted; here:

- a purge that is `executing` over the job's namespaces (or the tenant) stops the job: it fails with
  `purge_in_progress` and writes nothing more;
- a tenant or namespace purge over the job's namespaces that was executed after the job was accepted stops it
  too (`purged_since_accepted`): the job must not bring back what an administrator erased after the request.
  Submit the job again if its data should be stored after all.

What the job wrote before it stopped stays written (a batch's items are independent; an import's report names
them and can be rolled back)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..domain.erasure.model import PurgeKind
from ..domain.erasure.service import PurgeInProgress
from ..domain.errors import TooLarge

if TYPE_CHECKING:
    from ..domain.erasure.service import ErasureService
    from ..domain.jobs.service import Progress, Work
    from ..domain.memory.service import MemoryService, RememberInput, RememberResult
    from .models import RememberBatchResponse


class PurgedSinceAccepted(PurgeInProgress):
    code = "purged_since_accepted"


class JobFence:
    """The purge fence of one job's namespaces, from the moment it was accepted."""

    def __init__(self, erasure: ErasureService | None, tenant: str, namespaces: Sequence[str]) -> None:
        self._erasure = erasure
        self._tenant = tenant
        self._namespaces = sorted(set(namespaces))
        self._known = self._executed() if erasure is not None else set()

    def _executed(self) -> set[str]:
        assert self._erasure is not None
        return {plan.id for plan in self._erasure.list(self._tenant) if plan.executed_at is not None}

    def check(self) -> None:
        if self._erasure is None:
            return
        self._erasure.fence(self._tenant, namespaces=self._namespaces)
        for plan in self._erasure.list(self._tenant):
            if plan.executed_at is None or plan.id in self._known:
                continue
            kind = plan.target.kind
            if kind is PurgeKind.TENANT or (
                kind is PurgeKind.NAMESPACE and plan.target.namespace in self._namespaces
            ):
                raise PurgedSinceAccepted(
                    f"purge {plan.id} erased this job's namespace after the job was accepted; the job stopped "
                    "so as not to write back into it. Submit it again if the data should be stored",
                    plan_id=plan.id,
                )


def batch_work(
    memory: MemoryService,
    tenant: str,
    inputs: Sequence[RememberInput],
    actor: str,
    fence: JobFence,
    respond: Callable[[list[RememberResult]], RememberBatchResponse],
) -> Work:
    """The batch in one `remember_batch` call, as the synchronous route makes it: items without a `context`
    take their accepted neighbours' contents, so the batch is not cut in chunks (a batch is at most
    `max_batch` items; an import's progress is finer). Over `max_batch`: 413 within the request, no job."""
    limit = memory.policy.max_batch
    if len(inputs) > limit:
        raise TooLarge(
            f"a batch holds at most {limit} memories; got {len(inputs)}. Split it.",
            limit=limit,
            got=len(inputs),
        )

    def work(progress: Progress) -> dict[str, Any]:
        fence.check()
        results = memory.remember_batch(tenant, inputs, actor=actor)
        progress(len(results), len(inputs))
        return respond(results).model_dump(mode="json")

    return work
