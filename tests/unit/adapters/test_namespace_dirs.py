"""Namespace discovery from the memory-file tree (the dreaming sweep's target list)."""

from __future__ import annotations

import os

import pytest

from agent_memory.adapters.posix.namespace_dirs import list_namespace_dirs


def test_given_a_files_tree_then_namespace_directories_are_found_and_their_file_dirs_are_not(tmp_path):
    tenant = tmp_path / "acme"
    (tenant / "projects" / "billing" / "memory").mkdir(parents=True)  # a daily log directory marks it
    (tenant / "projects" / "billing" / "skills" / "deploy").mkdir(parents=True)
    (tenant / "projects" / "billing" / "sub").mkdir()
    (tenant / "projects" / "billing" / "sub" / "MEMORY.md").write_text("x")  # nested namespace
    (tenant / "users" / "u-42").mkdir(parents=True)
    (tenant / "users" / "u-42" / "USER.md").write_text("x")
    (tenant / "users" / "empty").mkdir()  # no marker: not a namespace
    (tenant / ".hidden" / "x").mkdir(parents=True)
    (tenant / ".hidden" / "x" / "MEMORY.md").write_text("x")
    (tmp_path / "beta" / "secret").mkdir(parents=True)
    (tmp_path / "beta" / "secret" / "MEMORY.md").write_text("x")
    os.symlink(tmp_path / "beta", tenant / "linked")  # links are never followed

    assert list_namespace_dirs(tmp_path, "acme") == [
        "/projects/billing",
        "/projects/billing/sub",
        "/users/u-42",
    ]
    assert list_namespace_dirs(tmp_path, "gamma") == []
    with pytest.raises(ValueError, match="invalid tenant"):
        list_namespace_dirs(tmp_path, "../beta")
