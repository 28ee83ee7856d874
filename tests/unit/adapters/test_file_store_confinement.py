"""Path confinement of the POSIX file store, property-based (docs/security.md: on the S3 Files mount every
function shares one POSIX identity, so this code, not IAM, keeps tenants' files apart).

For any tenant, namespace and path an attacker can send: the store either refuses (a domain error) or touches
only files inside `<root>/<tenant>/<namespace>/`, and nothing outside that directory is created or changed.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.adapters.posix.file_store import PosixFileStore
from agent_memory.domain.errors import DomainError

SEGMENT = st.sampled_from(
    ["..", ".", "", "MEMORY.md", "skills", "a", "%2e%2e", "..\\..", "~", "x" * 300, "\x00"]
)
PATHS = st.one_of(
    st.lists(SEGMENT, min_size=1, max_size=6).map("/".join),
    st.text(min_size=1, max_size=80),
    st.sampled_from(["/etc/passwd", "../victim/ns/MEMORY.md", "../../victim/ns/USER.md", "memory/../../x"]),
)
TENANTS = st.sampled_from(["acme", "globex", "../victim", "acme/../victim", "", "ACME", "a" * 80])
NAMESPACES = st.sampled_from(["/projects/a", "/projects/../../victim", "/", "projects", "/p/./q", "/p//q"])


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tenant=TENANTS, namespace=NAMESPACES, path=PATHS)
def test_any_path_is_refused_or_stays_in_its_namespace(
    tmp_path_factory, tenant: str, namespace: str, path: str
) -> None:
    base = tmp_path_factory.mktemp("confinement")
    root = base / "root"
    victim = root / "victim" / "ns"
    victim.mkdir(parents=True)
    (victim / "MEMORY.md").write_text("victim's memory")
    outside = base / "outside.txt"
    outside.write_text("outside")
    store = PosixFileStore(root)
    before = _snapshot(root)
    try:
        store.update(tenant, namespace, path, lambda current: "written")
    except DomainError:
        assert _snapshot(root) == before, "a refused write changed nothing"
    else:
        changed = {name for name, body in _snapshot(root).items() if before.get(name) != body}
        expected_dir = os.path.join(tenant, namespace.lstrip("/"))
        assert changed, "an accepted write wrote a file"
        assert all(name.startswith(expected_dir + os.sep) for name in changed), changed
    assert (victim / "MEMORY.md").read_text() == "victim's memory"
    assert outside.read_text() == "outside"
    try:
        read_back = store.read(tenant, namespace, path)
    except DomainError:
        read_back = None
    assert read_back in (None, "written"), "a read returns only what this namespace wrote"
    try:
        listed = store.list(tenant, namespace, path)
    except DomainError:
        listed = []
    assert all("victim" not in name for name in listed)


def test_a_symbolic_link_inside_a_namespace_cannot_lead_to_another_tenant(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "victim" / "projects" / "a").mkdir(parents=True)
    (root / "victim" / "projects" / "a" / "MEMORY.md").write_text("secret")
    own = root / "acme" / "projects" / "a"
    own.mkdir(parents=True)
    (own / "MEMORY.md").symlink_to(root / "victim" / "projects" / "a" / "MEMORY.md")
    store = PosixFileStore(root)
    for action in (
        lambda: store.read("acme", "/projects/a", "MEMORY.md"),
        lambda: store.update("acme", "/projects/a", "MEMORY.md", lambda current: "overwritten"),
    ):
        try:
            result = action()
        except DomainError:
            continue
        assert result != "secret"
    assert (root / "victim" / "projects" / "a" / "MEMORY.md").read_text() == "secret"
