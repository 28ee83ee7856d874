"""The SDK examples of the READMEs, as a reader copies them: each runs against the running local server, and
runs a second time on the same data (a reader runs an example again; the first run's memories and entries are
then already there)."""

from __future__ import annotations

import re
from pathlib import Path

from agent_memory_client import Client

from .conftest import Server

ROOT = Path(__file__).resolve().parents[2]
CLIENT_README = ROOT / "clients" / "python" / "README.md"


def _block_after(readme: Path, heading: str) -> str:
    """The first ```python block after `heading`."""
    text = readme.read_text(encoding="utf-8")
    start = text.index(heading)
    found = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert found, f"no python block after {heading!r} in {readme}"
    return found.group(1)


def _as_reader(code: str, server: Server) -> str:
    """The example pointed at the test server (the README shows a placeholder key and the default URL)."""
    assert '"http://127.0.0.1:8765", api_key="amk_..."' in code
    return code.replace(
        '"http://127.0.0.1:8765", api_key="amk_..."', f'"{server.url}", api_key="{server.keys["admin"]}"'
    )


def test_the_client_readme_use_example_runs_twice_in_a_row(server: Server, capsys) -> None:
    code = _as_reader(_block_after(CLIENT_README, "## Use"), server)
    exec(compile(code, str(CLIENT_README), "exec"), {"__name__": "readme"})
    first = capsys.readouterr().out
    exec(compile(code, str(CLIENT_README), "exec"), {"__name__": "readme"})  # raised DuplicateEntry before
    second = capsys.readouterr().out
    assert "The user prefers light mode" in first and "The user prefers light mode" in second
    with Client(server.url, server.keys["admin"]) as memory:
        user_md = memory.read_file("user", "/users/u-42")
        assert user_md["entries"].count("Prefers short answers") == 1
        active = [m["content"] for m in memory.iter_memories("/users/u-42", status="active")]
        assert [c for c in active if "mode" in c] == ["The user prefers light mode"]


def test_the_readme_agent_loop_example_runs_twice_in_a_row(server: Server, monkeypatch) -> None:
    monkeypatch.setenv("AGENT_MEMORY_URL", server.url)
    monkeypatch.setenv("AGENT_MEMORY_API_KEY", server.keys["admin"])
    code = _block_after(ROOT / "README.md", "## From an agent: the Python SDK")
    nodes: dict = {"__name__": "readme"}
    exec(compile(code, "README.md", "exec"), nodes)
    question = {"role": "user", "content": "I am vegetarian; what should I cook tonight?"}
    for _ in range(2):
        state = nodes["recall_node"]({"messages": [question]})
        nodes["remember_node"](state)
    recalled = nodes["recall_node"]({"messages": [question]})["messages"][0]["content"]
    assert recalled.count("I am vegetarian; what should I cook tonight?") == 1  # merged, not duplicated
