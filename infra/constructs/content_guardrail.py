"""ContentGuardrail: the opt-in Amazon Bedrock guardrail that screens memory-file writes (`guardrail.enabled`
in the deployment config; `adapters/aws/guardrails.py` calls ApplyGuardrail with it).

Filters: the prompt-attack content filter on input (output strength NONE, as the service requires for that
filter), and the sensitive-information filter blocking the configured PII types: by default credentials and
payment, bank and social-security numbers, not names, e-mail addresses or phone numbers, which a user profile
(USER.md) legitimately holds. A numbered version is published so the functions call a fixed configuration;
its description carries a digest of the configuration, so a change publishes a new version.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_bedrock as bedrock
from constructs import Construct

from ..config import DeploymentConfig, GuardrailConfig
from .network import Network
from .service_function import ServiceFunction

BLOCKED_MESSAGE = "Refused by the memory service's content guardrail."


class ContentGuardrail(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, name: str, config: GuardrailConfig) -> None:
        super().__init__(scope, construct_id)
        self.guardrail = bedrock.CfnGuardrail(
            self,
            "Guardrail",
            name=name[:50],
            description="Screens memory-file writes of the agent memory service (prompt attacks, credentials)",
            blocked_input_messaging=BLOCKED_MESSAGE,
            blocked_outputs_messaging=BLOCKED_MESSAGE,
            content_policy_config=bedrock.CfnGuardrail.ContentPolicyConfigProperty(
                filters_config=[
                    bedrock.CfnGuardrail.ContentFilterConfigProperty(
                        type="PROMPT_ATTACK",
                        input_strength=config.prompt_attack_strength,
                        output_strength="NONE",
                    )
                ]
            ),
            sensitive_information_policy_config=bedrock.CfnGuardrail.SensitiveInformationPolicyConfigProperty(
                pii_entities_config=[
                    bedrock.CfnGuardrail.PiiEntityConfigProperty(type=kind, action="BLOCK")
                    for kind in config.blocked_pii
                ]
            ),
        )
        digest = hashlib.sha256(
            json.dumps(config.model_dump(mode="json"), sort_keys=True).encode()
        ).hexdigest()
        self.version = bedrock.CfnGuardrailVersion(
            self,
            "Version",
            guardrail_identifier=self.guardrail.attr_guardrail_id,
            description=f"configuration {digest[:16]}",
        )

    @classmethod
    def for_deployment(
        cls,
        scope: Stack,
        construct_id: str,
        config: DeploymentConfig,
        *,
        writers: Sequence[ServiceFunction | None],
        network: Network,
    ) -> ContentGuardrail | None:
        """When `guardrail.enabled`, the guardrail screening the memory-file `writers` (None: not deployed);
        else None (each screened write is a billed Bedrock call)."""
        if not config.guardrail.enabled:
            return None
        guardrail = cls(
            scope, construct_id, name=f"{scope.stack_name}-memory-writes", config=config.guardrail
        )
        for writer in writers:
            if writer is not None:
                guardrail.grant_apply(writer, network)
        return guardrail

    def grant_apply(self, writer: ServiceFunction, network: Network) -> None:
        """A function that writes memory files screens them: bedrock:ApplyGuardrail on this guardrail only (in
        IAM and in the bedrock-runtime endpoint policy), and the guardrail's id and version to call."""
        writer.add_environment("AGENT_MEMORY_GUARDRAIL_ID", self.guardrail_id)
        writer.add_environment("AGENT_MEMORY_GUARDRAIL_VERSION", self.version_number)
        network.grant(
            "bedrock-runtime",
            writer,
            sid="ContentGuardrail",
            actions=["bedrock:ApplyGuardrail"],
            resources=[self.guardrail_arn],
        )

    @property
    def guardrail_arn(self) -> str:
        return self.guardrail.attr_guardrail_arn

    @property
    def guardrail_id(self) -> str:
        return self.guardrail.attr_guardrail_id

    @property
    def version_number(self) -> str:
        return self.version.attr_version
