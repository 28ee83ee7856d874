"""DeclaredQueues: every SQS queue `agent_memory.settings.resources` declares (`QUEUES`), built and granted from
its declaration, without a construct or stack line of its own.

Each queue is encrypted with the stack's key, refuses calls without TLS and has its own dead-letter queue (same
encryption, 14 days). `grant_declared` gives each access to exactly the functions it names: the queue's URL
(`AGENT_MEMORY_<SETTING>`), the calls on the queue with the function's own role, the key use they need, and,
for a function in the VPC, the same call in the SQS interface endpoint's policy (`Network.for_deployment`
adds that endpoint to the `isolated` profile when a queue is declared)."""

from __future__ import annotations

from collections.abc import Iterable

from aws_cdk import Acknowledgment, Duration, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from agent_memory.settings import resources
from agent_memory.settings.resources import Access, Queue

from .network import Network
from .service_function import ServiceFunction

SQS = "sqs"
"""The SQS interface endpoint's name in `Network.allow`."""
DEAD_LETTER_DAYS = 14


class DeclaredQueues(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, key: kms.IKey, network: Network) -> None:
        super().__init__(scope, construct_id)
        self._key, self._network = key, network
        self._key_users: list[tuple[iam.IRole, tuple[str, ...]]] = []
        self.queues: dict[str, sqs.Queue] = {q.construct_id: self._queue(q, key) for q in resources.QUEUES}
        """Every declared queue, by its construct id."""

    def _queue(self, queue: Queue, key: kms.IKey) -> sqs.Queue:
        dead_letters = sqs.Queue(
            self,
            f"{queue.construct_id}DeadLetters",
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=key,
            enforce_ssl=True,
            retention_period=Duration.days(DEAD_LETTER_DAYS),
        )
        Validations.of(dead_letters).acknowledge(
            Acknowledgment(
                id="AwsSolutions-SQS3",
                reason=f"This queue is itself the dead-letter queue of the declared queue {queue.construct_id}.",
            )
        )
        return sqs.Queue(
            self,
            queue.construct_id,
            encryption=sqs.QueueEncryption.KMS,
            encryption_master_key=key,
            enforce_ssl=True,
            retention_period=Duration.days(queue.retention_days),
            visibility_timeout=Duration.seconds(queue.visibility_timeout_seconds),
            dead_letter_queue=sqs.DeadLetterQueue(
                max_receive_count=queue.max_receive_count, queue=dead_letters
            ),
        )

    def grant_declared(self, functions: Iterable[ServiceFunction | None]) -> None:
        """Every access the declarations name, to those of the stack's `functions` they name by handler module
        (a function the deployment lacks is skipped): the only grants on these queues."""
        by_module = {f.handler_module: f for f in functions if f is not None}
        for queue in resources.QUEUES:
            for access in queue.access:
                _check(queue, access)
                for function in [by_module[n] for n in access.functions if n in by_module]:
                    self.grant(queue, access, function)

    def grant(self, queue: Queue, access: Access, function: ServiceFunction) -> None:
        resource = self.queues[queue.construct_id]
        function.add_environment(queue.variable, resource.queue_url)
        self._network.grant(
            SQS, function, sid=access.sid, actions=access.actions, resources=[resource.queue_arn]
        )
        if (function.role, access.key_actions) not in self._key_users:
            self._key_users.append((function.role, access.key_actions))
            self._key.grant(function.role, *access.key_actions)


def _check(queue: Queue, access: Access) -> None:
    unknown = [name for name in access.functions if name not in resources.FUNCTIONS]
    if unknown:
        raise ValueError(f"queue {queue.construct_id}: {access.sid} names no function {unknown}")
    if not access.actions or not all(a.startswith("sqs:") and "*" not in a for a in access.actions):
        raise ValueError(f"queue {queue.construct_id}: {access.sid} must name sqs: actions, no wildcard")
