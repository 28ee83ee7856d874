"""infra/bundling.py: the Docker-free dependencies layer build."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from infra_support import ROOT, Deferred, Synthesized

cdk = Deferred("aws_cdk")
lambda_ = Deferred("aws_cdk.aws_lambda")
bundling = Deferred("infra.bundling")

HOST_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
HOST_TAG = sys.implementation.cache_tag  # e.g. cpython-311; the runtime's would be cpython-314

LAYER_LIMIT_BYTES = 50 * 1024 * 1024


def _fake_python(tmp_path: Path, body: str) -> str:
    """An executable standing in for `python -m pip install ...`; it sees the exact argv the bundler built."""
    script = tmp_path / "fake-python"
    script.write_text(
        f"#!{sys.executable}\nimport sys, pathlib\nargs = sys.argv[1:]\n" + textwrap.dedent(body)
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


# Installs three distributions the way pip does: package files plus a dist-info with METADATA and RECORD.
_INSTALLING_PIP = """
target = pathlib.Path(args[args.index("--target") + 1])
def dist(name, package, files):
    info = target / f"{package}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\\nName: {name}\\nVersion: 1.0\\n")
    record = []
    for rel in files:
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\\n")
        record.append(f"{rel},,")
    (info / "RECORD").write_text("\\n".join(record + [f"{info.name}/METADATA,,", f"../bin/{package},,"]))
dist("botocore", "botocore", ["botocore/__init__.py", "botocore/data/s3.json"])
dist("python_dateutil", "python_dateutil", ["dateutil/__init__.py"])
dist("pydantic", "pydantic", ["pydantic/__init__.py", "pydantic/__pycache__/x.cpython-311.pyc"])
(target / "bin").mkdir(exist_ok=True)
(target / "bin" / "tool").write_text("#!/bin/sh\\n")
"""


def test_pip_command_installs_binary_wheels_for_the_lambda_runtime(tmp_path: Path) -> None:
    bundler = bundling.PipLayerBundler(tmp_path / "requirements.txt", python="/opt/py")
    command = bundler.pip_command(tmp_path / "out" / "python")
    assert command[:4] == ["/opt/py", "-m", "pip", "install"]
    joined = " ".join(command)
    # Both wheel generations the arm64 runtime (Amazon Linux 2023, glibc 2.34) loads, each its own flag
    assert bundling.LAMBDA_PLATFORMS == ("manylinux_2_28_aarch64", "manylinux2014_aarch64")
    assert "--platform manylinux_2_28_aarch64 --platform manylinux2014_aarch64" in joined
    assert "--only-binary=:all:" in command
    assert "--implementation cp" in joined
    assert "--python-version 3.14" in joined
    assert f"--target {tmp_path / 'out' / 'python'}" in joined
    assert f"-r {(tmp_path / 'requirements.txt').resolve()}" in joined


def test_pip_accepts_the_commands_targets_as_both_manylinux_generations(tmp_path: Path) -> None:
    # Given the command the bundler builds, run with this machine's pip (offline: `pip debug` only parses)
    command = bundling.PipLayerBundler(tmp_path / "requirements.txt").pip_command(tmp_path / "python")
    targets = []
    for flag in ("--platform", "--python-version", "--implementation"):
        for index, arg in enumerate(command):
            if arg == flag:
                targets += [flag, command[index + 1]]
    result = subprocess.run(
        [sys.executable, "-m", "pip", "debug", "--verbose", *targets],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    # Then pip installs wheels tagged for glibc 2.28 as well as manylinux2014 ones for CPython 3.14
    tags = {line.strip() for line in result.stdout.splitlines()}
    assert {"cp314-cp314-manylinux_2_28_aarch64", "cp314-cp314-manylinux2014_aarch64"} <= tags


def test_the_uv_beside_the_interpreter_installs_the_same_targets_through_pips_sources(tmp_path: Path) -> None:
    # Given the project interpreter, with the pinned uv beside it
    bundler = bundling.PipLayerBundler(tmp_path / "requirements.txt")
    command = bundler.install_command(tmp_path / "python")
    # Then the binary install is uv's, through tools/uv_pip.py (pip's indexes, find-links and constraints),
    # for the runtime: the newest manylinux tag (uv takes the older manylinux2014 wheels with it), CPython 3.14
    assert command[:3] == [sys.executable, str(ROOT / "tools" / "uv_pip.py"), "install"]
    joined = " ".join(command)
    assert "--python-platform aarch64-manylinux_2_28 " in joined and "--python-version 3.14 " in joined
    assert "--only-binary :all:" in joined and f"--target {tmp_path / 'python'}" in joined
    assert f"-r {(tmp_path / 'requirements.txt').resolve()}" in joined
    # And pip builds it when there is no uv beside the interpreter, when pip arguments are given, or for a
    # platform uv has no name for
    for other in (
        bundling.PipLayerBundler(tmp_path / "requirements.txt", python=str(tmp_path / "python3")),
        bundling.PipLayerBundler(tmp_path / "requirements.txt", extra_pip_args=["--no-index"]),
        bundling.PipLayerBundler(tmp_path / "requirements.txt", platforms=["manylinux_2_24_aarch64"]),
    ):
        assert other.install_command(tmp_path / "python")[1:4] == ["-m", "pip", "install"]
    only_2014 = bundling.PipLayerBundler(tmp_path / "requirements.txt", platforms=["manylinux2014_aarch64"])
    assert "aarch64-manylinux_2_17" in only_2014.install_command(tmp_path / "python")


def test_a_requirement_without_a_wheel_fails_the_uv_build_with_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a requirement no source can satisfy (uv, offline: pip configured with an empty wheelhouse, no index)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("agent-memory-no-such-distribution==0.0.1\n")
    wheelhouse = tmp_path / "wheels"
    wheelhouse.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheelhouse))
    bundler = bundling.PipLayerBundler(requirements)
    assert "tools/uv_pip.py" in " ".join(bundler.install_command(tmp_path / "layer" / "python"))
    # When / Then the build fails, says which requirement could not be met and shows the command
    with pytest.raises(bundling.LayerBuildError) as caught:
        bundler.build(tmp_path / "layer")
    message = str(caught.value)
    assert "agent-memory-no-such-distribution" in message.split("installer output:", 1)[1]
    assert "no Docker fallback" in message and "uv_pip.py install" in message


def test_a_layer_build_needs_a_platform(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one wheel platform"):
        bundling.PipLayerBundler(tmp_path / "requirements.txt", platforms=())


def test_build_keeps_every_distribution_and_drops_only_caches_and_scripts(tmp_path: Path) -> None:
    # Given a requirements file and a pip that installs botocore, dateutil and pydantic
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("pydantic\n")
    bundler = bundling.PipLayerBundler(requirements, python=_fake_python(tmp_path, _INSTALLING_PIP))

    # When the layer is built
    target = bundler.build(tmp_path / "layer")

    # Then the content is under python/, every distribution is kept (the SDK too: the layer pins it), and
    # bytecode caches and console scripts, useless in a layer, are gone
    assert target == tmp_path / "layer" / "python"
    remaining = sorted(str(p.relative_to(target)) for p in target.rglob("*"))
    assert remaining == [
        "botocore",
        "botocore-1.0.dist-info",
        "botocore-1.0.dist-info/METADATA",
        "botocore-1.0.dist-info/RECORD",
        "botocore/__init__.py",
        "botocore/data",
        "botocore/data/s3.json",
        "dateutil",
        "dateutil/__init__.py",
        "pydantic",
        "pydantic-1.0.dist-info",
        "pydantic-1.0.dist-info/METADATA",
        "pydantic-1.0.dist-info/RECORD",
        "pydantic/__init__.py",
        "python_dateutil-1.0.dist-info",
        "python_dateutil-1.0.dist-info/METADATA",
        "python_dateutil-1.0.dist-info/RECORD",
    ]


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[name.split("[", 1)[0].strip().lower()] = version.strip()
    return pins


def test_the_layer_ships_the_sdk_the_tests_validate_against() -> None:
    """The request-shape tests validate every S3 Vectors call against the botocore of constraints.txt; the
    layer must ship exactly that SDK, not rely on whatever boto3 the Lambda runtime bundles."""
    layer = _pins(ROOT / "layers" / "requirements.txt")
    constraints = _pins(ROOT / "constraints.txt")
    for name in ("boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "six", "urllib3"):
        assert name in layer, f"{name} is not pinned in layers/requirements.txt"
        assert layer[name] == constraints[name], (
            f"{name}: layer {layer[name]} != constraints {constraints[name]}"
        )
    import botocore

    assert botocore.__version__ == layer["botocore"], "the test environment runs another botocore"


def test_pip_failure_raises_with_pips_output_and_no_docker_fallback(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("pydantic\n")
    failing = _fake_python(tmp_path, 'print("ERROR: resolver exploded", file=sys.stderr)\nsys.exit(3)\n')
    with pytest.raises(bundling.LayerBuildError) as caught:
        bundling.PipLayerBundler(requirements, python=failing).build(tmp_path / "layer")
    message = str(caught.value)
    assert "exit code: 3" in message
    assert "ERROR: resolver exploded" in message
    assert "no Docker fallback" in message
    assert "--only-binary=:all:" in message  # the command is shown so it can be rerun by hand


def test_a_requirement_without_a_wheel_fails_the_build(tmp_path: Path) -> None:
    # Given a requirement that no index can satisfy (real pip, offline: an empty wheelhouse, no index)
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("agent-memory-no-such-distribution==0.0.1\n")
    wheelhouse = tmp_path / "wheels"
    wheelhouse.mkdir()
    bundler = bundling.PipLayerBundler(
        requirements, extra_pip_args=["--no-index", "--find-links", str(wheelhouse)]
    )
    # When / Then the build fails and says which requirement could not be met
    with pytest.raises(bundling.LayerBuildError, match="agent-memory-no-such-distribution"):
        bundler.build(tmp_path / "layer")


def test_missing_inputs_are_explained(tmp_path: Path) -> None:
    with pytest.raises(bundling.LayerBuildError, match="requirements file not found"):
        bundling.PipLayerBundler(tmp_path / "absent.txt").build(tmp_path / "layer")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("pydantic\n")
    with pytest.raises(bundling.LayerBuildError, match="Run synth from the project virtualenv"):
        bundling.PipLayerBundler(requirements, python=str(tmp_path / "no-python")).build(tmp_path / "layer")


def _layer_app(tmp_path: Path, python: str) -> tuple[cdk.App, Path]:
    layer_dir = tmp_path / "layer-src"
    layer_dir.mkdir()
    (layer_dir / "requirements.txt").write_text("pydantic\n")
    outdir = tmp_path / "cdk.out"
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "LayerOnly")
    lambda_.LayerVersion(stack, "Layer", code=bundling.dependencies_layer_code(layer_dir, python=python))
    return app, outdir


def test_cdk_bundles_the_layer_locally_through_the_bundler(tmp_path: Path) -> None:
    # Given a stack whose layer is built by the bundler (with a pip that installs pydantic)
    app, outdir = _layer_app(tmp_path, _fake_python(tmp_path, _INSTALLING_PIP))
    # When the app is synthesized
    app.synth()
    # Then the staged asset holds what pip installed, the SDK included
    manifest = json.loads((outdir / "LayerOnly.assets.json").read_text())
    (asset,) = [a for a in manifest["files"].values() if a["source"]["packaging"] == "zip"]
    staged = outdir / asset["source"]["path"]
    assert (staged / "python" / "pydantic" / "__init__.py").is_file()
    assert (staged / "python" / "botocore" / "__init__.py").is_file()


def test_cdk_synth_fails_loudly_when_the_layer_cannot_be_built(tmp_path: Path) -> None:
    failing = _fake_python(
        tmp_path, 'print("ERROR: No matching distribution", file=sys.stderr)\nsys.exit(1)\n'
    )
    with pytest.raises(Exception, match="building the Lambda dependencies layer failed"):
        _layer_app(tmp_path, failing)


@pytest.mark.slow
def test_real_layer_fits_lambda_and_ships_no_model_or_runtime_duplicates(tmp_path: Path) -> None:
    # Given the project's layer requirements, built for real from PyPI
    target = bundling.PipLayerBundler(ROOT / "layers" / "requirements.txt").build(tmp_path / "layer")

    # Then the unzipped size is within 50 MB (Lambda allows 250 MB for all layers + code together)
    size = bundling.directory_size_bytes(target)
    assert size <= LAYER_LIMIT_BYTES, f"layer is {size / 1e6:.1f} MB"
    top_level = {p.name.split("-")[0].lower() for p in target.iterdir()}
    # And there is no ML runtime or model inside, and the pinned AWS SDK is
    assert not top_level & {"torch", "numpy", "onnxruntime", "transformers", "sentence_transformers"}
    pins = _pins(ROOT / "layers" / "requirements.txt")
    assert (target / f"botocore-{pins['botocore']}.dist-info").is_dir()
    assert (target / f"boto3-{pins['boto3']}.dist-info").is_dir()
    assert not list(target.rglob("*.safetensors")) and not list(target.rglob("*.onnx"))
    # And the compiled wheels are the arm64 Linux ones for CPython 3.14
    (core,) = list(target.glob("pydantic_core/_pydantic_core*.so"))
    assert "cpython-314" in core.name and "aarch64" in core.name
    assert (target / "aws_lambda_powertools").is_dir()
    # And it zips to a deployable archive
    archive = tmp_path / "layer.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in target.rglob("*"):
            zipped.write(path, Path("python") / path.relative_to(target))
    assert archive.stat().st_size < 50 * 1024 * 1024


# ------------------------------------------------------------------------------------------- bytecode
# The tests stand the host interpreter in for the runtime's (only a 3.14 interpreter can write 3.14 bytecode).


def test_runtime_python_is_found_on_path_or_named_and_a_wrong_version_is_refused(tmp_path: Path) -> None:
    on_path = {f"python{HOST_VERSION}": sys.executable}
    assert bundling.runtime_python(HOST_VERSION, environ={}, which=on_path.get) == sys.executable
    assert (
        bundling.runtime_python(
            "3.14" if HOST_VERSION != "3.14" else "3.13", environ={}, which=lambda _: None
        )
        is None
    )
    # An interpreter found on PATH but of another version is ignored; a named one is an error.
    assert bundling.runtime_python("3.99", environ={}, which=lambda _: sys.executable) is None
    with pytest.raises(
        bundling.LayerBuildError, match=f"{bundling.BYTECODE_PYTHON_ENV}=.* is Python {HOST_VERSION}.*3.99"
    ):
        bundling.runtime_python(
            "3.99", environ={bundling.BYTECODE_PYTHON_ENV: sys.executable}, which=lambda _: None
        )


def _pyc_flags(pyc: Path) -> int:
    return int.from_bytes(pyc.read_bytes()[4:8], "little")


def test_code_bundle_leaves_out_tests_and_caches_and_ships_bytecode_that_is_used(tmp_path: Path) -> None:
    # Given a source tree with a package, its tests and a stale cache
    source = tmp_path / "functions"
    (source / "pkg" / "tests").mkdir(parents=True)
    (source / "pkg" / "__pycache__").mkdir()
    (source / "pkg" / "__init__.py").write_text("")
    (source / "pkg" / "mod.py").write_text("VALUE = 'compiled'\n")
    (source / "pkg" / "tests" / "test_mod.py").write_text("")
    (source / "pkg" / "__pycache__" / "stale.cpython-39.pyc").write_bytes(b"old")

    # When it is bundled with an interpreter of the (stand-in) runtime version
    out = bundling.CodeBundler(source, sys.executable).build(tmp_path / "asset")

    # Then tests and old caches are gone and every module has unchecked-hash bytecode (flags 0b01)
    assert (
        not (out / "pkg" / "tests").exists()
        and not (out / "pkg" / "__pycache__" / "stale.cpython-39.pyc").exists()
    )
    pyc = out / "pkg" / "__pycache__" / f"mod.{HOST_TAG}.pyc"
    assert pyc.is_file() and _pyc_flags(pyc) == 0b01
    # And a read-only runtime (-B) uses that bytecode without looking at the source: edit the source, and the
    # import still returns what was compiled.
    (out / "pkg" / "mod.py").write_text("VALUE = 'edited after the build'\n")
    result = subprocess.run(
        [sys.executable, "-B", "-c", "import pkg.mod; print(pkg.mod.VALUE)"],
        cwd=out,
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "compiled"


def test_layer_build_compiles_bytecode_when_given_a_runtime_interpreter(tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("pydantic\n")
    bundler = bundling.PipLayerBundler(
        requirements, python=_fake_python(tmp_path, _INSTALLING_PIP), bytecode_python=sys.executable
    )
    target = bundler.build(tmp_path / "layer")
    pyc = target / "pydantic" / "__pycache__" / f"__init__.{HOST_TAG}.pyc"
    assert pyc.is_file() and _pyc_flags(pyc) == 0b01
    # Only bytecode for the runtime's interpreter, one per module: the host caches pip left behind are removed.
    compiled = sorted(str(p.relative_to(target)) for p in target.rglob("*.pyc"))
    assert compiled == [
        f"{package}/__pycache__/__init__.{HOST_TAG}.pyc" for package in ("botocore", "dateutil", "pydantic")
    ]


def test_bytecode_compile_failure_fails_the_build_with_the_compiler_output(tmp_path: Path) -> None:
    source = tmp_path / "functions"
    source.mkdir()
    (source / "broken.py").write_text("def nope(:\n")
    with pytest.raises(bundling.LayerBuildError, match="compiling the Lambda bytecode failed"):
        bundling.CodeBundler(source, sys.executable).build(tmp_path / "asset")


def test_cdk_stages_the_function_code_through_the_code_bundler(tmp_path: Path) -> None:
    source = tmp_path / "functions"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "__init__.py").write_text("")
    (source / "pkg" / "handler.py").write_text("def handler(event, context):\n    return event\n")
    outdir = tmp_path / "cdk.out"
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "CodeOnly")
    lambda_.Function(
        stack,
        "Fn",
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="pkg.handler.handler",
        code=bundling.function_code(source, bytecode_python=sys.executable),
    )
    app.synth()
    manifest = json.loads((outdir / "CodeOnly.assets.json").read_text())
    (asset,) = [a for a in manifest["files"].values() if a["source"]["packaging"] == "zip"]
    staged = outdir / asset["source"]["path"]
    assert (staged / "pkg" / "handler.py").is_file()
    assert (staged / "pkg" / "__pycache__" / f"handler.{HOST_TAG}.pyc").is_file()


def test_the_function_bundle_ships_no_infrastructure_code(synthesized: Synthesized) -> None:
    """The code asset every function deploys is `functions/` only: the handlers are in it, the state-machine
    definitions (infra/workflows) and the rest of the CDK app are not (issue 31)."""
    keys = {
        resource["Properties"]["Code"]["S3Key"]
        for resource in synthesized.of_type("AWS::Lambda::Function").values()
        if str(resource["Properties"].get("Handler", "")).startswith("agent_memory.")
    }
    assert len(keys) == 1, f"every service function ships the one code asset, got {keys}"
    bundle = synthesized.assembly_dir / f"asset.{keys.pop().removesuffix('.zip')}"
    shipped = {path.relative_to(bundle).as_posix() for path in bundle.rglob("*.py")}
    assert "agent_memory/handlers/dreaming.py" in shipped
    assert "agent_memory/handlers/paging.py" in shipped
    infrastructure = sorted(p for p in shipped if p.endswith("_asl.py") or "workflows/" in p or "infra/" in p)
    assert infrastructure == []
