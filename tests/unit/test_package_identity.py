"""`import wheel` is this project, and the `wheel` command says so when it is not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import _wheel_scheduler_entry
import wheel

ROOT = Path(__file__).resolve().parents[2]
CONSOLE_SCRIPT = Path(sys.executable).parent / "wheel"


def test_import_wheel_resolves_to_this_project() -> None:
    assert wheel.__distribution__ == "wheel-scheduler"
    assert Path(wheel.__file__).resolve() == ROOT / "src" / "wheel" / "__init__.py"
    assert _wheel_scheduler_entry.conflict() is None


def _impostor(tmp_path: Path) -> dict[str, str]:
    """An environment in which `wheel` is a PyPA-like package found first on the path."""
    package = tmp_path / "wheel"
    package.mkdir()
    (package / "__init__.py").write_text('__version__ = "0.45.1"\n')
    (package / "cli.py").write_text("def main():\n    raise SystemExit('ran the impostor')\n")
    return {**os.environ, "PYTHONPATH": str(tmp_path)}


def test_console_script_names_the_conflict(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(CONSOLE_SCRIPT), "--help"],
        env=_impostor(tmp_path),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == _wheel_scheduler_entry.EXIT_CONFLICT
    assert "ran the impostor" not in result.stderr
    assert "resolves to another package (version 0.45.1" in result.stderr
    assert "PyPA's 'wheel'" in result.stderr
    assert "own virtual environment" in result.stderr


def test_console_script_runs_when_there_is_no_conflict() -> None:
    result = subprocess.run(
        [str(CONSOLE_SCRIPT), "--version"], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == f"wheel, version {wheel.__version__}"
