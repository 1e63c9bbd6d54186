"""A run's verdict and attempts as the run page says them: words, counted per try."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from wheel.client.types import Execution, Explanation, Retry, Verdict
from wheel.dashboard.pages import verdict_words
from wheel.model.executions import ExecutionStatus, Trigger, ordinal
from wheel.model.ids import ExecutionId, JobId

NOW = datetime.now(UTC)


def _run(attempt: int, retried_after: tuple[int, ...] = ()) -> Execution:
    return Execution(
        id=ExecutionId("run"), job_id=JobId(uuid.uuid4()), job_version=1,
        scheduled_for=NOW, fire_at=NOW, status=ExecutionStatus.DEAD, reason=None,
        attempt=attempt, fence=attempt, trigger=Trigger.SCHEDULE, error="boom",
        created_at=NOW, started_at=None, finished_at=None, executor_id=None, priority=0,
        retries=tuple(Retry(NOW + timedelta(minutes=n), "ops", after)
                      for n, after in enumerate(retried_after)),
    )  # fmt: skip


def _explained(verdict: Verdict, execution: Execution | None = None) -> Explanation:
    return Explanation(
        execution_id=None, job_id=JobId(uuid.uuid4()), scheduled_for=NOW, verdict=verdict,
        summary="", steps=(), execution=execution,
    )  # fmt: skip


@pytest.mark.parametrize("verdict", list(Verdict))
def test_every_verdict_reads_as_words_never_its_enum_name(verdict: Verdict) -> None:
    said = verdict_words(_explained(verdict, _run(3)))
    assert said[0].isupper()
    assert said[1:] == said[1:].lower()
    assert "_" not in said
    assert said != verdict.name


def test_a_dead_run_counts_the_attempts_of_its_current_try() -> None:
    assert verdict_words(_explained(Verdict.DEAD, _run(3))) == "Failed after 3 attempts"
    assert verdict_words(_explained(Verdict.DEAD, _run(1))) == "Failed after 1 attempt"
    # A job allowing 3, retried once: 6 attempts in all, 3 of them this try's.
    retried = _run(6, retried_after=(3,))
    assert (retried.tries, retried.try_attempt) == (2, 3)
    said = verdict_words(_explained(Verdict.DEAD, retried))
    assert said == "Failed after 3 attempts (second try)"
    assert verdict_words(_explained(Verdict.IN_FLIGHT, _run(4, (3,)))) == "In flight"


def test_tries_are_ordinals() -> None:
    assert [ordinal(n) for n in (1, 2, 3, 8, 9, 11, 12, 13, 21, 22, 23, 101)] == [
        "first", "second", "third", "eighth", "9th", "11th", "12th", "13th", "21st", "22nd",
        "23rd", "101st",
    ]  # fmt: skip
