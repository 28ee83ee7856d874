"""tools/uv_pip.py (make setup): pip's configured package sources become uv flags and variables."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("uv_pip", ROOT / "tools" / "uv_pip.py")
assert _spec is not None and _spec.loader is not None
uv_pip = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(uv_pip)

LISTING = """global.index-url='https://global.example/simple'
install.index-url='https://install.example/simple'
global.extra-index-url='https://a.example/simple https://b.example/simple'
:env:.find-links='file:///wheels'
global.no-index='yes'
global.trusted-host='a.example'
global.cert='/etc/ca.pem'
:env:.timeout='60'
global.proxy='http://proxy:3128'
site.index-url='https://ignored.example/simple'
"""


def test_the_higher_section_wins_and_unknown_sections_are_ignored() -> None:
    config = uv_pip.pip_config(LISTING)
    assert config["index-url"] == "https://install.example/simple"  # install over global; site ignored
    assert config["find-links"] == "file:///wheels"
    assert uv_pip.pip_config(
        ":env:.index-url='https://env.example'\nglobal.index-url='https://g.example'"
    ) == {"index-url": "https://env.example"}


def test_every_source_becomes_a_uv_flag_after_the_callers_arguments() -> None:
    args = uv_pip.uv_arguments(
        ["install", "-r", "requirements.txt"], uv_pip.pip_config(LISTING), "/venv/python"
    )
    assert args == [
        "install",
        "-r",
        "requirements.txt",
        "--python",
        "/venv/python",
        "--index-strategy",
        "unsafe-best-match",
        "--index-url",
        "https://install.example/simple",
        "--extra-index-url",
        "https://a.example/simple",
        "--extra-index-url",
        "https://b.example/simple",
        "--find-links",
        "file:///wheels",
        "--allow-insecure-host",
        "a.example",
        "--no-index",
    ]
    assert "--no-index" not in uv_pip.uv_arguments([], {"no-index": "false"}, "python")


def test_ca_bundle_timeout_and_proxy_go_to_the_environment_without_overriding_it() -> None:
    env = uv_pip.uv_environment(uv_pip.pip_config(LISTING), {"HTTP_PROXY": "http://mine:1"})
    assert env["SSL_CERT_FILE"] == "/etc/ca.pem"
    assert env["UV_HTTP_TIMEOUT"] == "60"
    assert env["HTTPS_PROXY"] == "http://proxy:3128"
    assert env["HTTP_PROXY"] == "http://mine:1"  # set by the caller: kept
    assert "SSL_CERT_FILE" not in uv_pip.uv_environment({}, {})


def test_it_runs_uv_pip_with_this_environments_configuration() -> None:
    """End to end through the virtual environment's uv, with the pip configuration of this machine: an
    installed pin is found satisfied (uv accepts every flag it was handed, and changes nothing)."""
    import pydantic

    pin = f"pydantic=={pydantic.VERSION}"
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "uv_pip.py"), "install", "--dry-run", "--no-deps", pin],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Would make no changes" in done.stderr
