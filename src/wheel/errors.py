"""wheel's exception tree.

    WheelError
    ├── ConfigError            a configuration value is invalid (names the field)
    ├── PackageConflictError   `import wheel` is not this project
    └── LocalServiceError      an embedded etcd or Postgres failed to start or stop

Later layers add their branches here (store, coordinator, API). Errors carry
the context needed to act on them; expected outcomes are return values.
"""

from __future__ import annotations

from pathlib import Path


class WheelError(Exception):
    """Base of every error wheel raises on purpose."""


class ConfigError(WheelError):
    """A configuration value is invalid."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class PackageConflictError(WheelError):
    """The import name `wheel` resolves to another distribution."""


class LocalServiceError(WheelError):
    """An embedded service (etcd, Postgres) could not be started or stopped."""

    def __init__(self, service: str, reason: str, log_path: Path | None = None) -> None:
        detail = f"{service}: {reason}"
        if log_path is not None:
            detail += f" (log: {log_path})"
            tail = _tail(log_path)
            if tail:
                detail += "\n" + tail
        super().__init__(detail)
        self.service = service
        self.reason = reason
        self.log_path = log_path


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
