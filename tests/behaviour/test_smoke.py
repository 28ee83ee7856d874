"""The after-deploy smoke test (`python -m infra.smoke`), run offline against both runtimes: the local server
and the Lambda handler on moto. tests/e2e runs it against a deployed stack."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from infra.smoke import SmokeRun, Target, main

from .conftest import Api

STEPS = ["remember", "recall", "correct", "history", "files add", "session start", "dream dry run", "cleanup"]


def _namespace() -> str:
    return f"/smoke/{uuid.uuid4().hex[:12]}"


def test_every_step_passes_and_cleanup_leaves_nothing_active(api: Api) -> None:
    client = api.client("alpha")
    namespace = _namespace()
    results = SmokeRun(client, namespace).run()
    assert [r.name for r in results] == STEPS
    assert all(r.ok for r in results), [r.line() for r in results if not r.ok]
    assert all(r.millis >= 0 for r in results)
    active = client.get("/v1/memories", params={"namespace": namespace, "status": "active"}).json()
    assert active["items"] == []
    entries = client.get("/v1/files/memory", params={"namespace": namespace}).json()["entries"]
    assert not any(namespace in entry for entry in entries)


class _FailingRecall:
    """A client whose recall answers 503, as an overloaded deployment would."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.paths: list[str] = []

    def request(self, method: str, path: str, *, json: Any = None) -> Any:
        self.paths.append(path)
        if path == "/v1/recall":

            class Failed:
                status_code = 503

                def json(self) -> dict[str, str]:
                    return {"message": "upstream unavailable"}

            return Failed()
        return self.inner.request(method, path, json=json)


def test_a_failing_step_stops_the_run_but_cleanup_still_runs(api: Api) -> None:
    client = _FailingRecall(api.client("alpha"))
    results = SmokeRun(client, _namespace()).run()
    assert [(r.name, r.ok) for r in results] == [("remember", True), ("recall", False), ("cleanup", True)]
    assert "503" in results[1].detail and "upstream unavailable" in results[1].detail
    assert any(path.endswith("/archive") for path in client.paths), "what was written is archived"


def test_the_command_prints_one_line_per_step_and_always_disables_its_key(
    api: Api, capsys: pytest.CaptureFixture[str]
) -> None:
    issued: list[tuple[str, str]] = []
    disabled: list[str] = []

    def target(stack: str, region: str | None, profile: str | None) -> Target:
        def issue(tenant: str, namespace: str) -> tuple[str, str]:
            issued.append((tenant, namespace))
            return "secret", "key_smoke"

        return Target("https://example.invalid/prod/", issue, disabled.append)

    code = main(
        ["--tenant", "alpha"], target_factory=target, client_factory=lambda url, key: api.client("alpha")
    )
    # the in-process Lambda handler prints its CloudWatch EMF metrics (JSON lines) to the same stdout
    out = [line for line in capsys.readouterr().out.splitlines() if not line.startswith("{")]
    assert code == 0, out
    assert [line.split()[0] for line in out[:-1]] == ["PASS"] * len(STEPS)
    assert out[-1].startswith(f"{len(STEPS)} of {len(STEPS)} steps passed")
    assert issued and issued[0][0] == "alpha" and issued[0][1].startswith("/smoke/")
    assert disabled == ["key_smoke"]


def test_the_command_exits_non_zero_when_a_step_fails(api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    disabled: list[str] = []

    def target(stack: str, region: str | None, profile: str | None) -> Target:
        return Target("https://example.invalid/prod/", lambda t, n: ("s", "key_x"), disabled.append)

    code = main(
        ["--tenant", "alpha"],
        target_factory=target,
        client_factory=lambda url, key: _FailingRecall(api.client("alpha")),
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL  recall" in out
    assert disabled == ["key_x"]
