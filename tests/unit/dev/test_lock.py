"""One `wheel dev` per data directory: the second says so at once, naming the first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wheel.dev.lock import DataDirLock
from wheel.errors import ConfigError


def test_a_second_lock_on_a_data_dir_names_the_holder_until_it_is_released(
    tmp_path: Path,
) -> None:
    first, second = DataDirLock(tmp_path / "data"), DataDirLock(tmp_path / "data")
    first.acquire()
    with pytest.raises(ConfigError, match=rf"already running \(pid {os.getpid()}\)") as caught:
        second.acquire()
    assert caught.value.field == "data_dir"
    first.release()
    second.acquire()
    second.release()


def test_wheel_dev_on_a_data_dir_in_use_answers_at_once(tmp_path: Path) -> None:
    held = DataDirLock(tmp_path)
    held.acquire()
    try:
        wheel = Path(sys.executable).parent / "wheel"
        done = subprocess.run(
            [str(wheel), "dev", "--data-dir", str(tmp_path)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        held.release()
    assert done.returncode == 1
    assert f"wheel dev is already running (pid {os.getpid()})" in done.stderr
