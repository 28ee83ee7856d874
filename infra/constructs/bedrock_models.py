"""BedrockModels: the Bedrock calls the functions make with their own roles (never the tenant role: model
calls carry no tenant data access) — the embedding model, Converse on the configured text models, and recall's
optional reranker — each granted in IAM and, for a function in the VPC, in the policy of the endpoint it goes
through (bedrock-runtime; bedrock-agent-runtime for Rerank)."""

from __future__ import annotations

from aws_cdk import Acknowledgment, ArnFormat, Stack, Validations

from ..config import INFERENCE_PROFILE_PREFIXES
from .network import Network
from .service_function import ServiceFunction

BEDROCK_RUNTIME = "bedrock-runtime"
BEDROCK_AGENT_RUNTIME = "bedrock-agent-runtime"


class BedrockModels:
    """Grants on Bedrock models for one stack; `network` carries the endpoint side of every grant."""

    def __init__(self, stack: Stack, network: Network, *, embedding_model_id: str) -> None:
        self._stack, self._network = stack, network
        self._embedding_model = self.foundation_model_arn(embedding_model_id, stack.region)

    def foundation_model_arn(self, model_id: str, region: str) -> str:
        return self._stack.format_arn(
            service="bedrock",
            region=region,
            account="",
            resource="foundation-model",
            resource_name=model_id,
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )

    def grant_embedding(self, *functions: ServiceFunction) -> None:
        """InvokeModel on the embedding model (embeddings are not tenant data: each function's own role)."""
        for function in functions:
            self._network.grant(
                BEDROCK_RUNTIME,
                function,
                sid="EmbeddingModel",
                actions=["bedrock:InvokeModel"],
                resources=[self._embedding_model],
            )

    def grant_rerank(self, function: ServiceFunction, model_id: str | None) -> None:
        """Recall's optional reranker (bedrock-agent-runtime Rerank) on one model: bedrock:Rerank, which the
        Service Authorization Reference gives no resource type (so `*`, acknowledged below), and
        bedrock:InvokeModel on that model's ARN only: Rerank invokes it, so the model ARN is what bounds the
        grant. Nothing when reranking is off. Only for functions that serve recall."""
        if not model_id:
            return
        self._network.grant(
            BEDROCK_AGENT_RUNTIME,
            function,
            sid="RerankApi",
            actions=["bedrock:Rerank"],
            resources=["*"],
        )
        self._network.grant(
            BEDROCK_AGENT_RUNTIME,
            function,
            sid="RerankModel",
            actions=["bedrock:InvokeModel"],
            resources=[self.foundation_model_arn(model_id, self._stack.region)],
        )
        Validations.of(function.role).acknowledge(
            Acknowledgment(
                id="AwsSolutions-IAM5[Resource::*]",
                reason="bedrock:Rerank has no resource type in the Service Authorization Reference, so it can "
                "only be granted on `*`; the reranker model it may call is bounded by bedrock:InvokeModel on "
                "that one foundation-model ARN.",
            )
        )

    def grant_optional(self, function: ServiceFunction, model_id: str | None, *, sid: str) -> None:
        """Converse on one optional model (no token counting); nothing when the model is not configured."""
        if model_id:
            self.grant_converse(function, (model_id,), sid=sid, count_tokens=False)

    def grant_converse(
        self,
        function: ServiceFunction,
        model_ids: tuple[str, ...],
        *,
        sid: str = "Chat",
        count_tokens: bool = True,
    ) -> None:
        """Converse (bedrock:InvokeModel) on the configured models only. A cross-region inference profile
        (`us.`, `eu.`, `apac.`, `global.` prefix) is granted with the foundation model it routes to in every
        region the profile may pick; CountTokens (the token monitor) takes the foundation model."""
        profiles, foundation = [], []
        for model_id in model_ids:
            prefix, _, rest = model_id.partition(".")
            if prefix in INFERENCE_PROFILE_PREFIXES:
                profiles.append(
                    self._stack.format_arn(
                        service="bedrock",
                        resource="inference-profile",
                        resource_name=model_id,
                        arn_format=ArnFormat.SLASH_RESOURCE_NAME,
                    )
                )
                foundation.append(self.foundation_model_arn(rest, "*"))
            else:
                foundation.append(self.foundation_model_arn(model_id, self._stack.region))
        self._network.grant(
            BEDROCK_RUNTIME,
            function,
            sid=f"{sid}Models",
            actions=["bedrock:InvokeModel"],
            resources=[*profiles, *foundation],
        )
        if count_tokens:
            self._network.grant(
                BEDROCK_RUNTIME,
                function,
                sid=f"{sid}TokenCounting",
                actions=["bedrock:CountTokens"],
                resources=foundation,
            )
        self._acknowledge_profiles(function, model_ids)

    @staticmethod
    def _acknowledge_profiles(function: ServiceFunction, model_ids: tuple[str, ...]) -> None:
        for model_id in model_ids:
            prefix, _, foundation_id = model_id.partition(".")
            if prefix in INFERENCE_PROFILE_PREFIXES:
                resource = f"arn:<AWS::Partition>:bedrock:*::foundation-model/{foundation_id}"
                Validations.of(function.role).acknowledge(
                    Acknowledgment(
                        id=f"AwsSolutions-IAM5[Resource::{resource}]",
                        reason="A cross-region inference profile routes to this one foundation model in any "
                        "region of its geography; only the region is a wildcard, never the model.",
                    )
                )
