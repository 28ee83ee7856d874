"""`agent-memory purge plan|execute|status|list` on a real data directory; a tenant purge disables the
tenant's local keys (offboarding)."""

from __future__ import annotations

import json

import pytest

from agent_memory.cli.main import main


@pytest.fixture
def run(tmp_path, capsys):
    def invoke(*args: str) -> tuple[int, str, str]:
        code = main(["--data-dir", str(tmp_path), "--embedder", "hashing", *args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return invoke


def test_purge_a_subject_then_offboard_the_tenant(run):
    assert run("--tenant", "acme", "remember", "Oskar Lind approves the budget", "-n", "/people")[0] == 0
    assert run("--tenant", "acme", "remember", "Budgets close in March", "-n", "/finance")[0] == 0
    assert (
        run("--tenant", "other", "remember", "Oskar Lind is a different person here", "-n", "/people")[0] == 0
    )
    code, out, _ = run("--tenant", "acme", "purge", "plan", "--subject", "Oskar Lind")
    assert code == 0
    plan = json.loads(out)
    assert len(plan["record_ids"]) == 1 and "Oskar" not in json.dumps(plan["plan"])
    with pytest.raises(SystemExit) as refused:  # argparse: the reason is required
        run("--tenant", "acme", "purge", "execute", plan["id"])
    assert refused.value.code == 2
    code, out, _ = run("--tenant", "acme", "purge", "execute", plan["id"], "--reason", "erasure request")
    done = json.loads(out)
    assert code == 0 and done["state"] == "completed" and done["verification"]["remaining"] == 0
    code, out, _ = run("--tenant", "acme", "purge", "status", plan["id"])
    assert json.loads(out)["state"] == "completed"
    assert "Budgets close" in run("--tenant", "acme", "recall", "budget", "-n", "/finance")[1]
    assert "different person" in run("--tenant", "other", "recall", "Oskar Lind", "-n", "/people")[1]

    key = json.loads(run("--tenant", "acme", "keys", "create", "--namespace", "*", "--scope", "read")[1])
    code, out, _ = run("--tenant", "acme", "purge", "plan", "--whole-tenant")
    tenant_plan = json.loads(out)
    code, out, _ = run("--tenant", "acme", "purge", "execute", tenant_plan["id"], "--reason", "offboarding")
    done = json.loads(out)
    assert code == 0 and done["state"] == "completed" and done["disabled_keys"] == [key["key_id"]]
    assert run("--tenant", "acme", "list", "-n", "/finance") == (0, "", "")
    listed = json.loads(run("--tenant", "acme", "purge", "list")[1])["purges"]
    assert [p["id"] for p in listed] == [tenant_plan["id"], plan["id"]]
    assert "different person" in run("--tenant", "other", "recall", "Oskar Lind", "-n", "/people")[1]
