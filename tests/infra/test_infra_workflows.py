"""Every declared workflow (agent_memory.settings.workflows) is deployed from its declaration in
infra/workflows/<name>_asl.py, without a construct or stack line of its own."""

from __future__ import annotations

from typing import Any

import pytest
from infra_support import Synthesized

from agent_memory.settings.workflows import WORKFLOWS, Workflow
from infra.workflows import workflow_specs


def test_each_declared_workflow_has_its_deployment_beside_its_definition() -> None:
    specs = workflow_specs()
    assert [spec.runtime for spec in specs] == list(WORKFLOWS)
    for spec in specs:
        assert spec.construct_id.lower().startswith(spec.runtime.name)
        assert (spec.start_sid is None) == (spec.runtime.arn_setting is None), spec.runtime.name


def test_a_workflow_on_a_host_no_earlier_workflow_builds_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import aws_cdk as cdk

    import infra.constructs.workflow as module
    from infra.config import DeploymentConfig

    orphan = Workflow("purge", host="nowhere", tasks="purge")
    spec = next(s for s in workflow_specs() if s.runtime.name == "purge")
    monkeypatch.setattr(
        module, "workflow_specs", lambda: (type(spec)(**{**spec.__dict__, "runtime": orphan}),)
    )
    stack = cdk.Stack(cdk.App())
    with pytest.raises(ValueError, match="runs on 'nowhere'"):
        module.declared_workflows(
            stack,
            DeploymentConfig.from_context({}),
            own_functions={},
            schedule_group=None,  # type: ignore[arg-type]
        )


def _api_environment(synthesized: Synthesized) -> dict[str, Any]:
    (api,) = [
        r for k, r in synthesized.of_type("AWS::Lambda::Function").items() if k.startswith("ApiFunction")
    ]
    return api["Properties"]["Environment"]["Variables"]


def test_the_template_holds_each_declared_state_machine_and_the_api_its_start_arns(
    synthesized: Synthesized,
) -> None:
    machines = synthesized.of_type("AWS::StepFunctions::StateMachine")
    environment = _api_environment(synthesized)
    for spec in workflow_specs():
        (machine_id,) = [k for k in machines if k.startswith(f"{spec.construct_id}StateMachine")]
        if spec.start_sid is None:
            continue
        # the test deployment turns on-demand dreaming on (infra_support.TEST_DREAMING)
        assert environment[spec.runtime.arn_variable] == {"Ref": machine_id}, spec.runtime.name
