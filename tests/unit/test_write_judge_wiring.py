"""Wiring of the optional LLM write judge: the local runtime has no offline text model, so judged tenants need
an explicit model port or AGENT_MEMORY_WRITE_JUDGE_MODEL_ID (Bedrock), else the runtime refuses to start."""

from __future__ import annotations

import boto3
import pytest

from agent_memory.adapters.aws.bedrock_text import BedrockTextModel
from agent_memory.domain.errors import Misconfigured
from agent_memory.domain.memory.policy import MemoryPolicy
from agent_memory.settings.service import Settings
from agent_memory.wiring.local import build_local
from agent_memory.wiring.parts import AwsClients
from tests.contract.judge_fakes import ScriptedJudge, verdict

JUDGED = MemoryPolicy(write_judge_tenants=("acme",))


def test_judged_tenants_without_a_model_refuse_to_start_with_a_clear_error(tmp_path):
    settings = Settings(data_dir=tmp_path, embedder="hashing", policy=JUDGED)
    with pytest.raises(Misconfigured, match="AGENT_MEMORY_WRITE_JUDGE_MODEL_ID"):
        build_local(settings)


def test_an_explicit_model_port_enables_the_judge_locally(tmp_path):
    judge = ScriptedJudge(lambda prompt: verdict("ADD", None))
    runtime = build_local(Settings(data_dir=tmp_path, embedder="hashing", policy=JUDGED), judge=judge)
    assert runtime.services.memory._judge is judge


def test_a_configured_model_id_builds_the_bedrock_judge(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    client = boto3.client("bedrock-runtime", region_name="eu-west-1")
    settings = Settings(
        data_dir=tmp_path, embedder="hashing", policy=JUDGED, write_judge_model_id="eu.amazon.nova-micro-v1:0"
    )
    judge = build_local(settings, clients=AwsClients(bedrock_runtime=client)).services.memory._judge
    assert isinstance(judge, BedrockTextModel) and judge._model_id == "eu.amazon.nova-micro-v1:0"


def test_no_judged_tenants_no_judge_even_with_a_model_id(tmp_path):
    settings = Settings(
        data_dir=tmp_path, embedder="hashing", write_judge_model_id="eu.amazon.nova-micro-v1:0"
    )
    assert build_local(settings).services.memory._judge is None


def test_the_model_id_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("AGENT_MEMORY_WRITE_JUDGE_MODEL_ID", "eu.amazon.nova-micro-v1:0")
    monkeypatch.setenv("AGENT_MEMORY_POLICY", '{"write_judge_tenants": ["acme"]}')
    settings = Settings()
    assert settings.write_judge_model_id == "eu.amazon.nova-micro-v1:0"
    assert settings.policy.write_judge_tenants == ("acme",)
