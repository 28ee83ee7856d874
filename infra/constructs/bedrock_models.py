"""BedrockModels: the Bedrock calls the functions make with their own roles (never the tenant role: model
calls carry no tenant data access) — the embedding model, and Converse on the configured text models — each
granted in IAM and, for a function in the VPC, in the bedrock-runtime endpoint's policy."""

from __future__ import annotations

from aws_cdk import Acknowledgment, ArnFormat, Stack, Validations

from ..config import INFERENCE_PROFILE_PREFIXES
from .network import Network
from .service_function import ServiceFunction

BEDROCK_RUNTIME = "bedrock-runtime"


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
