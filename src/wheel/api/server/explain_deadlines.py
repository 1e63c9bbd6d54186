"""What explain says of a run's deadline: a step when it was missed, and a clause for the summary.

deadline missed   at 2026-12-03T09:30:00.000Z (30 min after 09:00:00.000Z, its instant)
summary: "...; it missed its deadline (30 min after its instant)"
"""

from __future__ import annotations

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel.api.server.waiting import when
from wheel.durations import readable
from wheel.model.executions import Execution, ExecutionStatus
from wheel.timestamps import to_timestamp


def _after(execution: Execution) -> str:
    assert execution.deadline_at is not None
    seconds = (execution.deadline_at - execution.key.scheduled_for).total_seconds()
    return readable(seconds)


def deadline_step(result: api.Explanation, execution: Execution) -> None:
    """A 'deadline missed' step for a run marked past its deadline (none otherwise)."""
    if execution.deadline_at is None or execution.deadline_missed_at is None:
        return
    step = result.steps.add(
        what="deadline missed",
        detail=(
            f"deadline missed at {when(execution.deadline_at)} (deadline {_after(execution)} "
            f"after {when(execution.key.scheduled_for)}); marked at "
            f"{when(execution.deadline_missed_at)}"
        ),
    )
    step.at.CopyFrom(to_timestamp(execution.deadline_missed_at))


def deadline_clause(execution: Execution) -> str:
    """'; it missed its deadline (...)', '; it must succeed by ...' or ''."""
    if execution.deadline_at is None:
        return ""
    if execution.deadline_missed_at is not None:
        return (
            f"; it missed its deadline, {when(execution.deadline_at)} "
            f"({_after(execution)} after its instant)"
        )
    if execution.status in (ExecutionStatus.SUCCEEDED, ExecutionStatus.SKIPPED,
                            ExecutionStatus.CANCELLED):  # fmt: skip
        return ""
    return f"; it must succeed by {when(execution.deadline_at)} (its deadline)"
