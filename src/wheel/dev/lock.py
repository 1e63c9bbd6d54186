"""One `wheel dev` per data directory: a second one says so at once and names the first.

The lock is an `flock` on `<data dir>/dev.lock`, holding the owner's pid. The
kernel drops it when the process ends, however it ends, so a crashed run never
leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import IO

from wheel.errors import ConfigError


class DataDirLock:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "dev.lock"
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock, or raise ConfigError naming the pid that holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        file = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            holder = file.read().strip() or "unknown"
            file.close()
            raise ConfigError(
                "data_dir",
                f"{self.path.parent} is in use: wheel dev is already running (pid {holder}); "
                "stop it, or give another --data-dir",
            ) from None
        file.seek(0)
        file.truncate()
        file.write(f"{os.getpid()}\n")
        file.flush()
        self._file = file

    def release(self) -> None:
        if self._file is not None:
            self._file.close()  # closing drops the flock
            self._file = None
