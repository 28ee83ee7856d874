"""`uv pip ARGS` with the package sources pip is configured with here (`make setup` runs it).

uv reads neither pip.conf files nor PIP_* variables, so this reads them as `pip config list` shows them and
hands them on: indexes, find-links, constraints, trusted hosts, no-index, CA bundle, timeout and proxy. Every
index is searched for the best version, as pip does (uv's default stops at the first index that has the
package). Run with the virtual environment's interpreter: uv is the one installed beside it.

    .venv/bin/python tools/uv_pip.py install -r requirements.txt -c constraints.txt
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence

SECTION_RANK = {"global": 0, "install": 1, ":env:": 2}
"""Which section wins when several set a name: `install` over `global`, the PIP_* environment over both."""
FLAGS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
    "trusted-host": "--allow-insecure-host",
}
"""pip config names whose (space-separated) values become repeated uv flags."""
ENVIRONMENT = {
    "cert": ("SSL_CERT_FILE",),
    "timeout": ("UV_HTTP_TIMEOUT",),
    "default-timeout": ("UV_HTTP_TIMEOUT",),
    "proxy": ("HTTPS_PROXY", "HTTP_PROXY"),
}
"""pip config names uv takes from the environment instead (a variable already set is kept)."""
TRUE = ("1", "true", "yes", "on")


def pip_config(listing: str) -> dict[str, str]:
    """The effective value of each name in `pip config list` output (`section.name='value'` lines)."""
    found: dict[str, tuple[int, str]] = {}
    for line in listing.splitlines():
        key, _, value = line.partition("=")
        section, _, name = key.rpartition(".")
        if section in SECTION_RANK and SECTION_RANK[section] >= found.get(name, (-1, ""))[0]:
            found[name] = (SECTION_RANK[section], ast.literal_eval(value))
    return {name: value for name, (_, value) in found.items()}


def uv_arguments(args: Sequence[str], config: Mapping[str, str], python: str) -> list[str]:
    """`uv pip` arguments: `args`, then the interpreter, the index strategy and the flags of `config`."""
    result = [*args, "--python", python, "--index-strategy", "unsafe-best-match"]
    for name, flag in FLAGS.items():
        for value in config.get(name, "").split():
            result += [flag, value]
    if config.get("no-index", "").lower() in TRUE:
        result.append("--no-index")
    return result


def uv_environment(config: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with the variables of `config`'s CA bundle, timeout and proxy added where unset."""
    env = dict(environ)
    for name, variables in ENVIRONMENT.items():
        for variable in variables:
            if name in config:
                env.setdefault(variable, config[name])
    return env


def main(args: Sequence[str]) -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    )
    config = pip_config(listed.stdout)
    uv = os.path.join(os.path.dirname(sys.executable), "uv")
    os.execve(
        uv, [uv, "pip", *uv_arguments(args, config, sys.executable)], uv_environment(config, os.environ)
    )


if __name__ == "__main__":
    main(sys.argv[1:])
