"""`wheel dev`'s live view: the dev tenant's executions as they happen, read from Postgres.

On a terminal: a table (rich's Live), the newest executions first, upcoming
ones included once they are due within UPCOMING_S, redrawn every
REFRESH_S. Anywhere else (a pipe, a file, a test): one line per change of
state an execution is seen to make,

    15:20:03.000Z  always-fails         dead         attempt=3/3  executor=dev-executor
        late=+2ms  id=<job id>@20250101T152003.000000Z  error=RuntimeError: ...

(one line, folded here)

Polling is the design, not a shortcut: Postgres is the truth and nothing
else publishes status changes. A change shorter than REFRESH_S (dispatched,
running and succeeded within half a second) shows as one line.
lateness is `wheel.model.executions.lateness_s`, as everywhere: started_at -
fire_at, how long after its own instant (smear and retry backoff included) the
handler started; a backfilled or triggered run says so instead.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from rich import box
from rich.console import Console
from rich.live import Live
from rich.table import Table

from wheel.dev.output import say
from wheel.durations import readable
from wheel.errors import StoreError
from wheel.model.executions import (
    OVERDUE_AFTER_S,
    ExecutionStatus,
    Trigger,
    late_by_s,
    lateness_s,
    not_late_because,
)
from wheel.model.ids import ExecutionKey, JobId, TenantId
from wheel.model.pauses import Pause
from wheel.store import Store

REFRESH_S = 0.5
UPCOMING_S = 15.0
"""Pending executions due within this long are shown (as `pending`)."""
TABLE_ROWS = 30
"""Most rows in the table (fewer when the terminal is short: the title and header need room)."""
LINES_LOOKBACK = timedelta(minutes=1)
"""The line view reports executions scheduled from this long before it started."""
LINES_LIMIT = 500
READ_TIMEOUT_S = 2.0
"""How long one refresh waits for a connection before saying Postgres cannot be read."""

_STYLES = {
    "pending": "dim",
    "dispatched": "cyan",
    "running": "yellow",
    "succeeded": "green",
    "dead": "bold red",
    "skipped": "magenta",
    "needs_review": "bold red",
    "cancelled": "dim",
    "paused": "dim magenta",
    "overdue": "bold red",
}
_STARTED = ("running", "succeeded", "dead", "needs_review")
"""Statuses whose started_at belongs to the attempt at fire_at (a retry's does not)."""


@dataclass(frozen=True, slots=True)
class _Timed:
    """A row as `lateness_s` reads it."""

    status: ExecutionStatus
    trigger: Trigger
    fire_at: datetime
    started_at: datetime | None


@dataclass(frozen=True, slots=True)
class ExecutionRow:
    """One execution as the view shows it."""

    job_name: str
    execution_id: str
    scheduled_for: datetime
    fire_at: datetime
    status: str
    attempt: int
    max_attempts: int
    executor_id: str | None
    started_at: datetime | None
    note: str | None
    """The last error, or why it was skipped or cancelled."""
    finished_at: datetime | None = None
    trigger: Trigger = Trigger.SCHEDULE

    @classmethod
    def from_record(cls, record: Sequence[Any], now: datetime | None = None) -> ExecutionRow:
        """A row from `Executions.recent`; with `now`, a pending run due longer ago than
        OVERDUE_AFTER_S reads "overdue" (the dashboard's and the API's word for it)."""
        name, job_id, scheduled_for, fire_at, status, attempt, max_attempts, *rest = record
        executor_id, started_at, note, *more = rest
        finished_at, job_status, *last = more or (None, "active")
        trigger = Trigger(last[0]) if last else Trigger.SCHEDULE
        if status == "pending" and job_status == "paused":
            status = "paused"  # it waits for its job to be resumed, not for an executor
            # Who paused the job, when and why ("paused by alice 2 h ago: vendor outage").
            pause = Pause(note=last[2], by=last[1], at=last[3]) if len(last) >= 4 else Pause()
            note = note or pause.said(now)
        elif status == "pending" and now is not None and late_by_s(fire_at, now) > OVERDUE_AFTER_S:
            status = "overdue"
        key = ExecutionKey(JobId(uuid.UUID(str(job_id))), scheduled_for)
        return cls(name, key.id, key.scheduled_for, fire_at, status, attempt, max_attempts,
                   executor_id, started_at, note, finished_at, trigger)  # fmt: skip

    @property
    def took(self) -> timedelta | None:
        """finished_at - started_at, once the attempt has finished."""
        if self.started_at is None or self.finished_at is None or self.status not in _STARTED:
            return None
        return self.finished_at - self.started_at

    @property
    def lateness(self) -> timedelta | None:
        """started_at - fire_at, once the attempt at fire_at has started (`lateness_s`)."""
        late_s = lateness_s(self._timed())
        return None if late_s is None else timedelta(seconds=late_s)

    @property
    def late(self) -> str:
        """The late column: the lateness, or what the run is when it has none to speak of."""
        because = not_late_because(self._timed())
        return because if because is not None else format_lateness(self.lateness)

    def _timed(self) -> _Timed:
        paused = self.status in ("paused", "overdue")  # pending runs, as the view says them
        status = ExecutionStatus.PENDING if paused else ExecutionStatus(self.status)
        return _Timed(status, self.trigger, self.fire_at, self.started_at)

    @property
    def state(self) -> tuple[str, int]:
        return self.status, self.attempt


def format_instant(instant: datetime) -> str:
    """HH:MM:SS.mmmZ in UTC."""
    utc = instant.astimezone(UTC)
    return f"{utc:%H:%M:%S}.{utc.microsecond // 1000:03d}Z"


def format_lateness(lateness: timedelta | None) -> str:
    """+2ms, +1.25s, -1ms; '-' when not started."""
    if lateness is None:
        return "-"
    ms = lateness / timedelta(milliseconds=1)
    sign = "-" if ms < 0 else "+"
    if abs(ms) < 1000:
        return f"{sign}{abs(ms):.0f}ms"
    return f"{sign}{abs(ms) / 1000:.2f}s"


def format_line(row: ExecutionRow) -> str:
    """The line view's line for a row."""
    line = (
        f"{format_instant(row.scheduled_for)}  {row.job_name:<20} {row.status:<12} "
        f"attempt={row.attempt}/{row.max_attempts}  executor={row.executor_id or '-'}  "
        f"late={row.late}  id={row.execution_id}"
    )
    if row.note and row.status != "succeeded":
        line += (
            f"  error={_one_line(row.note)}" if row.attempt else f"  reason={_one_line(row.note)}"
        )
    return line


def _one_line(text: str, limit: int = 200) -> str:
    """The first line of an error (its message; a traceback follows), at most `limit` long."""
    first = text.strip().split("\n", 1)[0].strip()
    return first if len(first) <= limit else first[: limit - 1] + "…"


WIDE = 210
"""Console width from which the table shows the whole execution id (else none)."""
MEDIUM = 145
"""Console width from which it shows the executor and the error."""
ROOMY = 100
"""Console width from which it shows the attempt (below: 80 columns fit)."""
RATE_WINDOW = timedelta(seconds=10)
"""The summary's runs/s counts the runs that finished this long before."""


def format_took(took: timedelta | None) -> str:
    return "-" if took is None else readable(took.total_seconds())


def table(rows: Iterable[ExecutionRow], title: str, width: int = WIDE) -> Table:
    """The terminal view's table; narrower consoles get fewer columns, never squeezed ones
    (at 80 columns: when, job, status, late, took)."""
    roomy, medium, wide = width >= ROOMY, width >= MEDIUM, width >= WIDE
    view = Table(title=title, title_justify="left", box=box.SIMPLE if not roomy else box.HEAVY_HEAD)
    view.add_column("scheduled (UTC)" if roomy else "UTC", no_wrap=True, min_width=13)
    view.add_column("job", no_wrap=True, max_width=24 if roomy else 16)
    view.add_column("status", no_wrap=True, min_width=12)
    if roomy:
        view.add_column("attempt", justify="right", no_wrap=True)
    view.add_column("late", justify="right", no_wrap=True, min_width=7)
    view.add_column("took", justify="right", no_wrap=True, min_width=7)
    if medium:
        view.add_column("executor", no_wrap=True, max_width=20)
    if wide:
        view.add_column("execution id", no_wrap=True, min_width=60)
    if medium:
        view.add_column("error / reason", no_wrap=True, overflow="ellipsis", max_width=40)
    for row in rows:
        cells = [
            format_instant(row.scheduled_for),
            row.job_name,
            f"[{_STYLES.get(row.status, '')}]{row.status}[/]",
        ]
        if roomy:
            cells.append(f"{row.attempt}/{row.max_attempts}")
        cells += [row.late, format_took(row.took)]
        if medium:
            cells.append(row.executor_id or "-")
        if wide:
            cells.append(row.execution_id)
        if medium:
            cells.append(_one_line(row.note, 80) if row.note and row.status != "succeeded" else "")
        view.add_row(*cells)
    return view


def summary(rows: Sequence[ExecutionRow], now: datetime, children: str = "") -> str:
    """One line over the table: processes, runs a second lately, failures, what waits.

    Counted over the rows read (the window the view shows): runs/s over the last
    RATE_WINDOW, failures as dead or needs review, waiting as due and not started.
    """
    recent = now - RATE_WINDOW
    done = sum(1 for r in rows if r.finished_at is not None and r.finished_at >= recent)
    failed = sum(1 for r in rows if r.status in ("dead", "needs_review"))
    unstarted = ("pending", "overdue", "dispatched")
    waiting = sum(1 for r in rows if r.status in unstarted and r.fire_at <= now)
    paused = sum(1 for r in rows if r.status == "paused")
    parts = [children] if children else []
    parts += [f"{done / RATE_WINDOW.total_seconds():.1f} runs/s", f"{failed} failed",
              f"{waiting} waiting"]  # fmt: skip
    if paused:
        parts.append(f"{paused} paused")
    return " | ".join(parts)


class Changes:
    """Which rows changed state since the last poll (a row first seen pending and
    untried has not changed: nothing happened to it yet)."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, int]] = {}

    def update(self, rows: Sequence[ExecutionRow]) -> list[ExecutionRow]:
        """Rows (oldest first) whose status or attempt differ from the last poll's."""
        changed = []
        seen: dict[str, tuple[str, int]] = {}
        for row in reversed(rows):
            seen[row.execution_id] = row.state
            before = self._seen.get(row.execution_id)
            if before == row.state or (before is None and row.state == ("pending", 0)):
                continue
            changed.append(row)
        self._seen = seen  # rows leave the window only by age: they do not come back
        return changed


class LiveView:
    """Runs until cancelled; `notices` returns lines to show once (processes that died)."""

    def __init__(
        self,
        dsn: str,
        tenant: TenantId,
        *,
        tty: bool,
        notices: Callable[[], list[str]] = list,
        children: Callable[[], str] = str,
        console: Console | None = None,
    ) -> None:
        self._dsn = dsn
        self._tenant = tenant
        self._tty = tty
        self._notices = notices
        self._children = children
        """What runs: e.g. '3 nodes, 1 executor up'."""
        self._console = console or Console()
        self._store: Store | None = None
        self._failing = False

    async def run(self) -> None:
        try:
            if self._tty:
                await self._run_table()
            else:
                await self._run_lines()
        finally:
            if self._store is not None:
                await self._store.close()

    async def _run_table(self) -> None:
        title = "executions of tenant dev, newest first (Ctrl-C stops everything)"
        since = datetime(1970, 1, 1, tzinfo=UTC)
        console = self._console
        with Live(table([], title, console.width), console=console, auto_refresh=False) as live:
            while True:
                fit = max(3, min(TABLE_ROWS, console.height - 7))
                rows = await self._poll(since, fit, live.console.print)
                if rows is not None:
                    heading = f"{title}\n{summary(rows, datetime.now(UTC), self._children())}"
                    live.update(table(rows, heading, console.width), refresh=True)
                for notice in self._notices():
                    live.console.print(notice)
                await asyncio.sleep(REFRESH_S)  # the refresh period: Postgres publishes nothing

    async def _run_lines(self) -> None:
        since = datetime.now(UTC) - LINES_LOOKBACK
        changes = Changes()
        while True:
            rows = await self._poll(since, LINES_LIMIT, say)
            for row in changes.update(rows or []):
                say(format_line(row))
            for notice in self._notices():
                say(notice)
            await asyncio.sleep(REFRESH_S)  # the refresh period: Postgres publishes nothing

    async def _poll(
        self, since: datetime, limit: int, say: Callable[[str], None]
    ) -> list[ExecutionRow] | None:
        """The newest rows; None (said once) while Postgres cannot be read."""
        try:
            if self._store is None:
                self._store = await Store.open(
                    self._dsn, min_size=1, max_size=1, timeout_s=READ_TIMEOUT_S
                )
            records = await self._store.executions.recent(
                self._tenant, since=since, upcoming_s=UPCOMING_S, limit=limit
            )
        except StoreError as exc:
            if not self._failing:
                say(f"wheel dev: live view cannot read Postgres ({exc}); retrying")
            self._failing = True
            return None
        self._failing = False
        now = datetime.now(UTC)
        return [ExecutionRow.from_record(r, now) for r in records]
