"""Docker-free build of the Lambda assets: the dependencies layer and the function code.

CDK asks the local bundler first; the layer's runs the host's pip with `--platform manylinux_2_28_aarch64
--platform manylinux2014_aarch64 --only-binary=:all:` so the wheels match the arm64 Python 3.14 runtime
whatever the build machine is. That runtime is Amazon Linux 2023 (glibc 2.34), so it loads wheels tagged for
glibc 2.28 as well as the older manylinux2014 (glibc 2.17) ones; some projects publish only the newer tag.
There is deliberately no Docker fallback: if pip fails, synth fails with pip's own output. Everything pip
installs stays, the AWS SDK included (layers/requirements.txt pins it: the function runs the SDK the tests
validated, not whatever the runtime bundles).

Bytecode: Lambda's /var/task and /opt are read-only, so modules shipped without `__pycache__/*.cpython-314.pyc`
are compiled again at every cold start; bench/cold_start.py measures that at about twice the import time.
Only a Python 3.14 interpreter can write that bytecode, so when the build machine has one (`python3.14` on
PATH, or the path in AGENT_MEMORY_BYTECODE_PYTHON) both assets are compiled with it; otherwise synth says so
on stderr and the assets ship source only, as before."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import BundlingOptions, ILocalBundling
from aws_cdk import aws_lambda as lambda_

LAMBDA_PYTHON_VERSION = "3.14"
LAMBDA_PLATFORMS = ("manylinux_2_28_aarch64", "manylinux2014_aarch64")
"""Wheel platform tags the arm64 Python 3.14 runtime (Amazon Linux 2023, glibc 2.34) can load, each passed
to pip as its own `--platform` (pip matches a `manylinux_2_28` tag exactly, not the older ones it implies, so
both are listed)."""

BYTECODE_PYTHON_ENV = "AGENT_MEMORY_BYTECODE_PYTHON"

CODE_IGNORED = ("__pycache__", "*.pyc", "*.egg-info", ".pytest_cache", ".mypy_cache", ".ruff_cache", "tests")
"""What the function code asset leaves out of `functions/`: caches and build metadata."""
CODE_EXCLUDES = [f"**/{name}" for name in CODE_IGNORED]


class LayerBuildError(RuntimeError):
    """pip could not build the layer. The message carries the command and pip's output."""


@jsii.implements(ILocalBundling)
class PipLayerBundler:
    """Installs `requirements` into `<output>/python` for the Lambda runtime's platform with host pip."""

    def __init__(
        self,
        requirements: Path,
        *,
        python: str = sys.executable,
        python_version: str = LAMBDA_PYTHON_VERSION,
        platforms: Sequence[str] = LAMBDA_PLATFORMS,
        extra_pip_args: Sequence[str] = (),
        timeout_seconds: int = 900,
        bytecode_python: str | None = None,
    ) -> None:
        self.requirements = Path(requirements).resolve()
        self.python = python
        self.python_version = python_version
        if not platforms:
            raise ValueError("the layer build needs at least one wheel platform tag")
        self.platforms = tuple(platforms)
        self.extra_pip_args = tuple(extra_pip_args)
        self.timeout_seconds = timeout_seconds
        self.bytecode_python = bytecode_python

    def pip_command(self, target: Path) -> list[str]:
        return [
            self.python,
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--no-compile",  # host-version .pyc files would be useless on the 3.14 runtime
            "--progress-bar",
            "off",
            *(arg for platform in self.platforms for arg in ("--platform", platform)),
            "--only-binary=:all:",
            "--implementation",
            "cp",
            "--python-version",
            self.python_version,
            "--target",
            str(target),
            "-r",
            str(self.requirements),
            *self.extra_pip_args,
        ]

    # jsii calls back with (output_dir, BundlingOptions) positionally; only the output dir matters here.
    def try_bundle(self, output_dir: str, _options: Any = None, **_kwargs: Any) -> bool:
        self.build(Path(output_dir))
        return True

    def build(self, output_dir: Path) -> Path:
        """Build the layer content into `output_dir/python` and return that directory."""
        if not self.requirements.is_file():
            raise LayerBuildError(f"layer requirements file not found: {self.requirements}")
        target = Path(output_dir) / "python"
        target.mkdir(parents=True, exist_ok=True)
        command = self.pip_command(target)
        try:
            result = subprocess.run(
                command, capture_output=True, text=True, timeout=self.timeout_seconds, check=False
            )
        except FileNotFoundError as exc:
            raise LayerBuildError(
                f"cannot run {self.python!r} to build the Lambda layer: {exc}. "
                "Run synth from the project virtualenv (cdk.json uses .venv/bin/python)."
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise LayerBuildError(
                f"pip did not finish within {self.timeout_seconds}s while building the Lambda layer"
            ) from exc
        if result.returncode != 0:
            raise LayerBuildError(
                "building the Lambda dependencies layer failed (no Docker fallback by design).\n"
                f"command: {' '.join(command)}\n"
                f"exit code: {result.returncode}\n"
                f"pip output:\n{result.stdout}{result.stderr}\n"
                "Hints: every package in the requirements file needs a wheel for "
                f"{' or '.join(self.platforms)} / CPython {self.python_version} on PyPI (no source builds); "
                "offline builds can point pip at a wheelhouse with PIP_FIND_LINKS and PIP_NO_INDEX=1."
            )
        # Console scripts cannot run from a layer; only importable code is useful there.
        shutil.rmtree(target / "bin", ignore_errors=True)
        for cache in list(target.rglob("__pycache__")):
            shutil.rmtree(cache, ignore_errors=True)
        if self.bytecode_python:
            compile_bytecode(self.bytecode_python, target)
        return target


def _python_version(python: str) -> str | None:
    try:
        result = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def runtime_python(
    version: str = LAMBDA_PYTHON_VERSION, *, environ: Any = os.environ, which: Any = shutil.which
) -> str | None:
    """An interpreter of the Lambda runtime's Python version on this machine, or None.

    AGENT_MEMORY_BYTECODE_PYTHON names one explicitly (a wrong version is then an error); otherwise
    `python<version>` on PATH is used when present."""
    explicit = environ.get(BYTECODE_PYTHON_ENV)
    candidate = explicit or which(f"python{version}")
    if not candidate:
        return None
    found = _python_version(candidate)
    if found == version:
        return candidate
    if explicit:
        raise LayerBuildError(
            f"{BYTECODE_PYTHON_ENV}={explicit} is Python {found or '(not runnable)'}, but the functions run on "
            f"Python {version}: bytecode is specific to one Python version. Point it at a {version} interpreter "
            "or unset it."
        )
    return None


def compile_bytecode(python: str, root: Path) -> None:
    """Write `__pycache__/<module>.cpython-XY.pyc` for every module under `root` with `python`.

    Unchecked-hash pycs are used without comparing the source's timestamp, which asset staging and zipping do
    not preserve; they are rebuilt on every synth, so they cannot go stale."""
    command = [
        python,
        "-m",
        "compileall",
        "-q",
        "-j",
        "0",
        "--invalidation-mode",
        "unchecked-hash",
        str(root),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    if result.returncode != 0:
        raise LayerBuildError(
            f"compiling the Lambda bytecode failed.\ncommand: {' '.join(command)}\n"
            f"output:\n{result.stdout}{result.stderr}"
        )


@functools.cache
def detected_bytecode_python() -> str | None:
    """`runtime_python()` once per synth (both assets use it); says on stderr when there is none."""
    python = runtime_python()
    if python is None:
        print(
            f"note: no Python {LAMBDA_PYTHON_VERSION} on this machine (python{LAMBDA_PYTHON_VERSION} on PATH or "
            f"{BYTECODE_PYTHON_ENV}): the Lambda code and layer ship without bytecode, so each cold start "
            "compiles them (about twice the import time, bench/cold_start.py).",
            file=sys.stderr,
        )
    return python


@jsii.implements(ILocalBundling)
class CodeBundler:
    """The function code asset: `functions/` without caches and tests, compiled with `bytecode_python`."""

    def __init__(self, source: Path, bytecode_python: str) -> None:
        self.source = Path(source).resolve()
        self.bytecode_python = bytecode_python

    # jsii calls back with (output_dir, BundlingOptions) positionally; only the output dir matters here.
    def try_bundle(self, output_dir: str, _options: Any = None, **_kwargs: Any) -> bool:
        self.build(Path(output_dir))
        return True

    def build(self, output_dir: Path) -> Path:
        shutil.copytree(
            self.source, output_dir, ignore=shutil.ignore_patterns(*CODE_IGNORED), dirs_exist_ok=True
        )
        compile_bytecode(self.bytecode_python, output_dir)
        return output_dir


def function_code(functions_dir: Path, *, bytecode_python: str | None = None) -> lambda_.Code:
    """The function code asset, with bytecode when a runtime-version interpreter is available."""
    functions_dir = Path(functions_dir).resolve()
    python = bytecode_python or detected_bytecode_python()
    if python is None:
        return lambda_.Code.from_asset(str(functions_dir), exclude=CODE_EXCLUDES)
    return lambda_.Code.from_asset(
        str(functions_dir),
        exclude=CODE_EXCLUDES,
        bundling=BundlingOptions(
            image=lambda_.Runtime.PYTHON_3_14.bundling_image,  # required by the API, never run
            local=CodeBundler(functions_dir, python),
        ),
    )


def directory_size_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in Path(root).rglob("*") if p.is_file())


def dependencies_layer_code(layer_dir: Path, **bundler_options: Any) -> lambda_.Code:
    """The asset for the dependencies layer: `layer_dir/requirements.txt` built by `PipLayerBundler`."""
    layer_dir = Path(layer_dir).resolve()
    if "bytecode_python" not in bundler_options:
        bundler_options["bytecode_python"] = detected_bytecode_python()
    return lambda_.Code.from_asset(
        str(layer_dir),
        bundling=BundlingOptions(
            # Required by the API but never run: the local bundler either succeeds or raises.
            image=lambda_.Runtime.PYTHON_3_14.bundling_image,
            local=PipLayerBundler(layer_dir / "requirements.txt", **bundler_options),
        ),
    )
