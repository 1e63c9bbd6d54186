"""wheel's exception tree.

    WheelError
    ├── FieldError             a value is invalid (names the field and the reason)
    │   ├── ConfigError        ... in configuration
    │   └── InvalidArgument    ... in a request
    ├── PackageConflictError   `import wheel` is not this project
    ├── LocalServiceError      an embedded etcd or Postgres failed to start or stop
    ├── BadSignature           a notification's signature does not hold (receivers' check)
    ├── NotFound               no such job / execution / tenant (for this tenant)
    ├── Unauthenticated        no token, or one that is unknown or revoked
    ├── PermissionDenied       the token is valid but may not do this
    ├── Unavailable            a server could not be reached or answer now: retry
    │   └── DeadlineExceeded   ... before the call's deadline (`timeout_s`, `deadline_s`)
    ├── Conflict               the write lost a race or breaks a rule of state
    │   ├── VersionConflict    an update named a version that is no longer current
    │   ├── NameTaken          another of the tenant's jobs has that name
    │   └── InvalidTransition  the object is not in a state that allows this
    ├── StoreError             Postgres failed (translated once, in wheel.store)
    │   ├── StoreUnavailable   cannot reach Postgres now: retry later, nothing lost
    │   └── MigrationError     the schema cannot be brought up to date
    └── CoordinatorError       etcd failed (translated once, in wheel.coordinator)
        ├── CoordinatorUnavailable  cannot reach etcd now: retry later
        └── HistoryCompacted   a watch asked for revisions etcd no longer keeps

Errors carry the context needed to act on them; expected outcomes are return
values.
"""

from __future__ import annotations

import re
from pathlib import Path


def excerpt(value: str, limit: int = 60) -> str:
    """`value` quoted for an error message, cut to `limit` characters: errors echo input,
    and a caller's megabyte must not come back as a megabyte (or overflow a gRPC trailer)."""
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}... ({len(value)} characters)"


def first_line(error: str | None) -> str:
    """A recorded error's first line, for people; the whole text (a traceback) stays stored."""
    return (error or "").strip().split("\n", 1)[0]


def type_name(exc: BaseException) -> str:
    """The exception's class as errors name it: `ValueError`, `aiohttp.client_exceptions.
    ClientOSError` (a builtin bare, any other qualified by its module)."""
    kind = type(exc)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


class WheelError(Exception):
    """Base of every error wheel raises on purpose."""


class FieldError(WheelError):
    """A value is invalid: names the field and the reason."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class ConfigError(FieldError):
    """A configuration value is invalid."""


class InvalidArgument(FieldError):
    """A request value is invalid; nothing was written."""

    def in_batch(self) -> tuple[int, str] | None:
        """For a field of a batch's item, `jobs[3].schedule.cron`: (3, "schedule.cron")."""
        named = _BATCH_ITEM.fullmatch(self.field)
        return None if named is None else (int(named[1]), named[2])


_BATCH_ITEM = re.compile(r"jobs\[(\d+)\]\.(.+)")


class NotFound(WheelError):
    """The object does not exist, or is not the caller's to see."""

    def __init__(self, kind: str, ident: object) -> None:
        super().__init__(f"{kind} {ident} not found")
        self.kind = kind
        self.ident = ident


class Unauthenticated(WheelError):
    """The call carried no token, or one that is unknown or revoked."""


class PermissionDenied(WheelError):
    """The caller is known but may not do this."""


class Unavailable(WheelError):
    """No server could answer now; the call may be retried (it may or may not have happened)."""


class DeadlineExceeded(Unavailable):
    """No answer came before the call's deadline: a try's `timeout_s`, or the `deadline_s`
    of the whole call, its retries and their backoff included. The call may or may not
    have happened, as with any `Unavailable`."""


class Conflict(WheelError):
    """The write conflicts with the object's current state."""


class NameTaken(Conflict):
    """Another of the tenant's jobs (not deleted) has this name: names are unique."""

    def __init__(self, name: str, field: str = "name") -> None:
        super().__init__(f"{field}: a job named {name!r} exists (names are unique per tenant)")
        self.name = name
        self.field = field


class VersionConflict(Conflict):
    """An update was based on a version that is no longer current."""

    def __init__(self, kind: str, ident: object, expected: int, current: int) -> None:
        super().__init__(
            f"{kind} {ident} is at version {current}, not {expected}: "
            "re-read it and apply the change again"
        )
        self.kind = kind
        self.ident = ident
        self.expected = expected
        self.current = current


class InvalidTransition(Conflict):
    """The object is not in a state that allows the operation."""

    def __init__(self, kind: str, ident: object, state: str, operation: str) -> None:
        super().__init__(f"cannot {operation} {kind} {ident}: it is {state}")
        self.kind = kind
        self.ident = ident
        self.state = state
        self.operation = operation


class StoreError(WheelError):
    """Postgres failed in a way the caller did not expect."""


class StoreUnavailable(StoreError):
    """Postgres cannot be reached now; the operation did not happen and may be retried."""


class MigrationError(StoreError):
    """The schema cannot be brought up to date."""


class CoordinatorError(WheelError):
    """etcd failed in a way the caller did not expect."""


class CoordinatorUnavailable(CoordinatorError):
    """etcd cannot be reached now; the operation did not happen and may be retried."""


class HistoryCompacted(CoordinatorError):
    """A watch started below etcd's compaction point: re-list, then watch again."""

    def __init__(self, compacted_revision: int) -> None:
        super().__init__(f"etcd history is compacted below revision {compacted_revision}")
        self.compacted_revision = compacted_revision


class BadSignature(WheelError):
    """A notification's Wheel-Signature does not prove it came from wheel, now."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"Wheel-Signature: {reason}")
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
