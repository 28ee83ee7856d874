"""pytest hooks of the IAM contract (wired in tests/conftest.py).

Every process records the AWS calls its tests make (tests/iam/recorder.py); xdist workers write theirs to a
directory the controller chose. When the whole run is over, the controller synthesizes the CDK app once
(exactly as the infra suite does), judges every call against the template's policies and fails the run
with one line per denied authorization. A partial run (`pytest tests/unit/...`) is judged the same way on
what it recorded, against the `lean` and the `isolated` templates; set AGENT_MEMORY_SKIP_IAM_CONTRACT=1 to skip
the synth while iterating.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.iam import recorder
from tests.iam.synth import SYNTH_DIR_ENV

_DIR_KEY = "iam_calls_dir"
_SYNTH_KEY = "synth_dir"


def _calls_dir(config: pytest.Config) -> Path:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return Path(workerinput[_DIR_KEY])
    existing = getattr(config, "_iam_calls_dir", None)
    if existing is None:
        existing = Path(tempfile.mkdtemp(prefix="iam-calls-"))
        config._iam_calls_dir = existing  # type: ignore[attr-defined]
    return existing


def configure(config: pytest.Config) -> None:
    recorder.install()
    _calls_dir(config)
    _share_synths(config)


def configure_node(node: Any) -> None:
    node.workerinput[_DIR_KEY] = str(_calls_dir(node.config))
    node.workerinput[_SYNTH_KEY] = os.environ.get(SYNTH_DIR_ENV, "")


def _share_synths(config: pytest.Config) -> None:
    """One directory per run where each CDK synth is written once and read by every process (tests/iam/synth.py):
    the controller makes it (unless the caller chose one), the workers get it through their input."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        if workerinput.get(_SYNTH_KEY):
            os.environ[SYNTH_DIR_ENV] = workerinput[_SYNTH_KEY]
        return
    if not os.environ.get(SYNTH_DIR_ENV):
        os.environ[SYNTH_DIR_ENV] = tempfile.mkdtemp(prefix="agent-memory-synth-")
        config._synth_dir_owned = os.environ[SYNTH_DIR_ENV]  # type: ignore[attr-defined]


def runtest_setup(item: pytest.Item) -> None:
    recorder.current_test = item.nodeid
    marker = item.get_closest_marker("iam_contract_exempt")
    if marker is not None:
        reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
        if not reason:
            raise pytest.UsageError(f"{item.nodeid}: iam_contract_exempt needs a reason")
        recorder.current_exempt = str(reason)
    else:
        recorder.current_exempt = None


def session_finish(session: pytest.Session) -> None:
    config = session.config
    directory = _calls_dir(config)
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        recorder.dump(str(directory / f"{worker['workerid']}.jsonl"))
        return
    recorder.dump(str(directory / "controller.jsonl"))
    try:
        _judge(session, directory)
    finally:
        owned = getattr(config, "_synth_dir_owned", None)
        if owned:
            shutil.rmtree(owned, ignore_errors=True)
            os.environ.pop(SYNTH_DIR_ENV, None)


def _judge(session: pytest.Session, directory: Path) -> None:
    config = session.config
    if os.environ.get("AGENT_MEMORY_SKIP_IAM_CONTRACT") or session.exitstatus not in (0, 1):
        return
    calls = [
        json.loads(line)
        for path in sorted(directory.glob("*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if not calls:
        return
    from tests.iam.contract import check
    from tests.iam.synth import PROFILES, synthesized_template

    lines: list[str] = []
    for profile in PROFILES:  # `isolated` puts every function behind VPC endpoint policies: judged per action
        judged = [call for call in calls if _made_in(call, profile)]
        try:
            lines += [
                f"[{profile}] {line}" for line in check(judged, synthesized_template(profile), "us-east-1")
            ]
        except Exception as error:  # a template that does not synthesize cannot be judged: that fails the run
            lines.append(
                f"[{profile}] the IAM contract could not judge the calls: {type(error).__name__}: {error}"
            )
    if reporter is not None:
        exempt = sum(1 for call in calls if call["principal"]["kind"] == "exempt")
        operator = sum(1 for call in calls if call["principal"]["kind"] == "operator")
        reporter.write_sep(
            "=",
            f"IAM contract: {len(calls) - exempt - operator} AWS calls judged against the synthesized templates "
            f"({', '.join(PROFILES)}) "
            f"({operator} operator calls and {exempt} from exempt tests recorded, not judged)",
        )
        for line in lines:
            reporter.write_line(line)
        if not lines:
            reporter.write_line("every call is allowed by the policy that governs it")
    if lines:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


LEAN_ONLY = ("adapters/aws/remote_file_store.py",)
"""Code that runs only in the `lean` profile: there the API, chat and dreaming functions reach memory files
through the file function (Lambda Invoke); in `isolated` every function mounts S3 Files itself and never
invokes it. The behaviour suite's AWS runtime is wired as `lean`, so these calls are judged against `lean`."""


def _made_in(call: dict[str, Any], profile: str) -> bool:
    where = str(call["principal"].get("where", ""))
    return profile == "lean" or not where.startswith(LEAN_ONLY)
