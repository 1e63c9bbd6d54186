"""One sentence for a run that has settled where a person may look at it.

Explain answers with it, and every notification carries it, so the words
a receiver gets are the words `wheel executions explain` shows.
"""

from __future__ import annotations

from wheel.errors import first_line
from wheel.model.executions import ExecutionStatus, of_try


def settled(
    status: ExecutionStatus,
    *,
    attempt: int,
    error: str | None,
    reason: str | None,
    tries: int = 1,
) -> str | None:
    """Why a dead, needs_review or skipped run is so; None for any other status. `attempt`
    counts the attempts of the run's current try, `tries` which try it is (a person's
    retry starts a new one)."""
    tried = of_try(tries)
    if status is ExecutionStatus.DEAD:
        failed = f"failed all {attempt} attempts" if attempt != 1 else "failed its only attempt"
        return (
            f"{failed}{tried} (last error: {first_line(error) or 'none'}); "
            "retry it with `wheel executions retry`"
        )
    if status is ExecutionStatus.NEEDS_REVIEW:
        return (
            f"attempt {attempt}{tried} failed or was lost and the job is not idempotent: "
            "a person decides (`wheel executions retry` or `cancel`)"
        )
    if status is ExecutionStatus.SKIPPED:
        return f"not run: {reason or 'skipped'}"
    return None
