"""Observability: the dashboard, the alarms and the SNS topic they notify."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from ..config import AlarmsConfig, DeploymentConfig
from .dreaming_workflow import DREAMING_METRICS_SERVICE
from .memory_api import MemoryApi
from .service_function import METRICS_NAMESPACE, SERVICE_NAME, ServiceFunction
from .workflow import Workflow

RECALL_LATENCY_METRIC = "RecallLatency"
"""Milliseconds per recall, emitted by the API function with Powertools Metrics (dimension service)."""
FILE_USAGE_METRIC = "MemoryFileUsagePercent"
"""Characters used / cap x 100 of a memory file after each write, dimension `file` (MEMORY.md, USER.md)."""
CAPPED_FILES = ("MEMORY.md", "USER.md")

_PERIOD = Duration.minutes(5)
_DREAMING_PERIOD = Duration.hours(1)
"""The sweep runs once a night per tenant: hourly sums keep each night's run readable on the dashboard."""


def _api_latency(rest_api: apigw.RestApi) -> dict[str, cloudwatch.Metric]:
    return {
        stat: rest_api.metric_latency(period=_PERIOD, statistic=stat, label=f"latency {stat}")
        for stat in ("p50", "p90", "p99")
    }


def _recall_latency() -> dict[str, cloudwatch.Metric]:
    return {
        stat: cloudwatch.Metric(
            namespace=METRICS_NAMESPACE,
            metric_name=RECALL_LATENCY_METRIC,
            dimensions_map={"service": SERVICE_NAME},
            statistic=stat,
            period=_PERIOD,
            label=f"recall {stat}",
        )
        for stat in ("p50", "p99")
    }


def _file_usage() -> list[cloudwatch.IMetric]:
    return [
        cloudwatch.Metric(
            namespace=METRICS_NAMESPACE,
            metric_name=FILE_USAGE_METRIC,
            dimensions_map={"service": SERVICE_NAME, "file": name},
            statistic="Maximum",
            period=_PERIOD,
            label=f"{name} % of cap",
        )
        for name in CAPPED_FILES
    ]


def _dreaming_metric(name: str, period: Duration, label: str | None = None) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": DREAMING_METRICS_SERVICE},
        statistic="Sum",
        period=period,
        label=label,
    )


def _dead_letters(queue: sqs.IQueue) -> cloudwatch.Metric:
    return queue.metric_approximate_number_of_messages_visible(period=_PERIOD, statistic="Maximum")


class Observability(Construct):
    """A CloudWatch dashboard (API latency and errors, recall latency, memory-file usage against the cap,
    throttles, dead letters, dreaming sweeps) and alarms that notify an SNS topic encrypted with the service
    key; `notify` sends other constructs' alarms to the same topic."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        key: kms.IKey,
        config: AlarmsConfig,
        api: MemoryApi,
        functions: Mapping[str, ServiceFunction],
        dead_letter_queues: Sequence[sqs.IQueue],
        dreaming_state_machine: sfn.IStateMachine | None = None,
        curator_state_machine: sfn.IStateMachine | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = self._alarm_topic(key)
        if config.email:
            self.topic.add_subscription(subscriptions.EmailSubscription(config.email))
        self.alarms: list[cloudwatch.Alarm] = []
        self._api_alarms(api.rest_api, config)
        self._function_alarms(functions, dead_letter_queues)
        self._workflow_alarms(dreaming_state_machine, curator_state_machine)
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=f"{Stack.of(self).stack_name}-memory",
            default_interval=Duration.hours(24),
        )
        self._api_widgets(api.rest_api, config)
        self._function_widgets(functions, dead_letter_queues)
        if dreaming_state_machine is not None:
            self._dreaming_widgets(dreaming_state_machine)

    @classmethod
    def for_deployment(
        cls,
        scope: Construct,
        construct_id: str,
        config: DeploymentConfig,
        *,
        key: kms.IKey,
        api: MemoryApi,
        functions: Mapping[str, ServiceFunction | None],
        workflows: Mapping[str, Workflow],
    ) -> Observability:
        """Alarms on every function given (None: not deployed), on the dead letters of the asynchronous ones
        and of the workflows' schedules, and on the workflows' failed executions."""
        watched = {name: f for name, f in functions.items() if f is not None}
        queues = [f.dead_letter_queue for f in watched.values() if f.dead_letter_queue is not None]
        dreaming, curator = workflows.get("dreaming"), workflows.get("curator")
        schedules = [w.dead_letter_queue for w in workflows.values() if w.dead_letter_queue is not None]
        observability = cls(
            scope,
            construct_id,
            key=key,
            config=config.alarms,
            api=api,
            functions=watched,
            dead_letter_queues=[*queues, *schedules],
            dreaming_state_machine=dreaming.state_machine if dreaming else None,
            curator_state_machine=curator.state_machine if curator else None,
        )
        observability.notify(*(alarm for w in workflows.values() for alarm in w.alarms))  # failed executions
        return observability

    def notify(self, *alarms: cloudwatch.Alarm) -> None:
        """Send `alarms` (of other constructs: workflows, migration) to the alarm topic."""
        for alarm in alarms:
            alarm.add_alarm_action(cloudwatch_actions.SnsAction(self.topic))

    def _alarm_topic(self, key: kms.IKey) -> sns.Topic:
        stack = Stack.of(self)
        topic = sns.Topic(
            self, "AlarmTopic", display_name="Agent memory service alarms", master_key=key, enforce_ssl=True
        )
        # A topic policy replaces SNS's default one: `enforce_ssl` leaves only its deny of plain HTTP, and
        # then nothing may publish. CloudWatch must be allowed explicitly, for this account's alarms only.
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowCloudWatchAlarmsToPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="cloudwatch",
                            resource="alarm",
                            resource_name="*",
                            arn_format=ArnFormat.COLON_RESOURCE_NAME,
                        )
                    },
                },
            )
        )
        # CloudWatch publishes to the encrypted topic with the key, so the key policy must let it.
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowCloudWatchAlarmsToEncryptedTopic",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": stack.account}},
            )
        )
        return topic

    def _alarm(
        self,
        alarm_id: str,
        metric: cloudwatch.IMetric,
        threshold: float,
        description: str,
        evaluation_periods: int = 1,
    ) -> None:
        created = cloudwatch.Alarm(
            self,
            alarm_id,
            metric=metric,
            threshold=threshold,
            evaluation_periods=evaluation_periods,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        self.notify(created)
        self.alarms.append(created)

    def _api_alarms(self, rest_api: apigw.RestApi, config: AlarmsConfig) -> None:
        self._alarm(
            "ApiServerErrors",
            rest_api.metric_server_error(period=_PERIOD, statistic="Sum"),
            config.api_5xx_per_5_minutes,
            f"The API answered >= {config.api_5xx_per_5_minutes} 5xx responses in 5 minutes.",
        )
        self._alarm(
            "ApiLatencyP99",
            _api_latency(rest_api)["p99"],
            config.api_p99_latency_ms,
            f"API p99 latency >= {config.api_p99_latency_ms} ms for 15 minutes.",
            evaluation_periods=3,
        )
        self._alarm(
            "RecallLatencyP99",
            _recall_latency()["p99"],
            config.recall_p99_latency_ms,
            f"Recall p99 latency >= {config.recall_p99_latency_ms} ms for 15 minutes.",
            evaluation_periods=3,
        )

    def _function_alarms(
        self, functions: Mapping[str, ServiceFunction], dead_letter_queues: Sequence[sqs.IQueue]
    ) -> None:
        for name, service_function in functions.items():
            fn = service_function.function
            self._alarm(
                f"{name}Errors",
                fn.metric_errors(period=_PERIOD, statistic="Sum"),
                1,
                f"The {name} function raised an unhandled error.",
            )
            self._alarm(
                f"{name}Throttles",
                fn.metric_throttles(period=_PERIOD, statistic="Sum"),
                1,
                f"Lambda throttled the {name} function (account or function concurrency exhausted).",
            )
        for index, queue in enumerate(dead_letter_queues):
            self._alarm(
                f"DeadLetters{index}",
                _dead_letters(queue),
                1,
                f"Events failed after all retries and wait in {queue.node.path}; inspect and redrive them.",
            )

    def _workflow_alarms(self, dreaming: sfn.IStateMachine | None, curator: sfn.IStateMachine | None) -> None:
        if dreaming is not None:
            self._alarm(
                "DreamingExecutionsFailed",
                dreaming.metric_failed(period=_PERIOD, statistic="Sum"),
                1,
                "A dreaming sweep execution failed (listing its targets or the state machine itself); "
                "open the execution in the Step Functions console.",
            )
            # A namespace's failure is caught inside the Map, so the execution still succeeds: only the
            # handler's DreamFailures metric shows it.
            self._alarm(
                "DreamingNamespaceFailures",
                _dreaming_metric("DreamFailures", _PERIOD),
                1,
                "The dreaming sweep of a namespace failed; see .dreams/<day>/failure.json in its files.",
            )
        if curator is not None:
            # A namespace's curator failure ends its Map item as `failed`; the execution fails when listing its
            # targets fails, a page's Map exceeds its tolerated failures, or the state machine itself breaks.
            self._alarm(
                "CuratorExecutionsFailed",
                curator.metric_failed(period=_PERIOD, statistic="Sum"),
                1,
                "A skills curator execution failed; open the execution in the Step Functions console.",
            )

    def _api_widgets(self, rest_api: apigw.RestApi, config: AlarmsConfig) -> None:
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="API requests and errors",
                left=[rest_api.metric_count(period=_PERIOD, statistic="Sum")],
                right=[
                    rest_api.metric_client_error(period=_PERIOD, statistic="Sum"),
                    rest_api.metric_server_error(period=_PERIOD, statistic="Sum"),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="API latency (ms)", left=list(_api_latency(rest_api).values()), width=12
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Recall latency (ms)",
                left=list(_recall_latency().values()),
                left_annotations=[
                    cloudwatch.HorizontalAnnotation(value=config.recall_p99_latency_ms, label="alarm (p99)")
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Memory-file usage vs cap (%)",
                left=_file_usage(),
                left_y_axis=cloudwatch.YAxisProps(min=0, max=110),
                left_annotations=[
                    cloudwatch.HorizontalAnnotation(value=100, label="cap", color=cloudwatch.Color.RED),
                    cloudwatch.HorizontalAnnotation(value=90, label="90 %", color=cloudwatch.Color.ORANGE),
                ],
                width=12,
            ),
        )

    def _function_widgets(
        self, functions: Mapping[str, ServiceFunction], dead_letter_queues: Sequence[sqs.IQueue]
    ) -> None:
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Function errors and throttles",
                left=[
                    fs.function.metric_errors(period=_PERIOD, statistic="Sum", label=f"{name} errors")
                    for name, fs in functions.items()
                ],
                right=[
                    fs.function.metric_throttles(period=_PERIOD, statistic="Sum", label=f"{name} throttles")
                    for name, fs in functions.items()
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Function duration p99 (ms)",
                left=[
                    fs.function.metric_duration(period=_PERIOD, statistic="p99", label=name)
                    for name, fs in functions.items()
                ],
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Dead letters (messages waiting)",
                left=[_dead_letters(queue) for queue in dead_letter_queues],
                width=12,
            ),
            cloudwatch.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=12),
        )

    def _dreaming_widgets(self, dreaming: sfn.IStateMachine) -> None:
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Dreaming: promotions, candidates, failed namespaces (per hour)",
                left=[
                    _dreaming_metric(name, _DREAMING_PERIOD, label=name)
                    for name in ("DreamPromotions", "DreamCandidates")
                ],
                right=[_dreaming_metric("DreamFailures", _DREAMING_PERIOD, label="DreamFailures")],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Dreaming executions",
                left=[
                    dreaming.metric_started(period=_DREAMING_PERIOD, statistic="Sum", label="started"),
                    dreaming.metric_succeeded(period=_DREAMING_PERIOD, statistic="Sum", label="succeeded"),
                    dreaming.metric_failed(period=_DREAMING_PERIOD, statistic="Sum", label="failed"),
                ],
                width=12,
            ),
        )
