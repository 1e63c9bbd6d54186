"""The robustness model catches each broken promise: small hand-made histories, one a
rule, each checked against a history that keeps every promise."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

import pytest

from tests.robustness import model
from tests.robustness.history import Event, execution_id, iso

T0 = datetime.now(UTC).replace(microsecond=0)
JOB, CRON = "11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"


def at(seconds: float) -> str:
    return iso(T0 + timedelta(seconds=seconds))


def create(job_id: str, instants: list[float], **policies: object) -> Event:
    return {"kind": "create", "job_id": job_id, "acked": True,
            "instants": [at(s) for s in instants], "idempotent": True, "overlap": "skip",
            "misfire": "fire_once", "misfire_grace_s": 1.0, **policies}  # fmt: skip


def start(job_id: str, due: float, fence: int, when: float, executor: str = "executor-0") -> Event:
    return {"kind": "start", "job_id": job_id, "scheduled_for": at(due), "fence": fence,
            "attempt": fence, "executor": executor, "at": at(when)}  # fmt: skip


def attempt(job_id: str, due: float, fence: int, outcome: str, started: float | None,
            finished: float, executor: str = "executor-0") -> Event:  # fmt: skip
    return {"kind": "attempt", "job_id": job_id, "scheduled_for": at(due), "fence": fence,
            "number": fence, "outcome": outcome, "executor": executor,
            "started_at": at(started) if started is not None else None,
            "finished_at": at(finished)}  # fmt: skip


def execution(job_id: str, due: float, status: str, fence: int, finished: float,
              reason: str | None = None, retries: int = 0,
              executor: str = "executor-0") -> Event:  # fmt: skip
    return {"kind": "execution", "job_id": job_id, "scheduled_for": at(due), "status": status,
            "fence": fence, "attempt": fence, "fire_at": at(due), "finished_at": at(finished),
            "reason": reason, "retries": retries, "executor": executor}  # fmt: skip


def change(job_id: str, due: float, status: str, fence: int, committed: float) -> Event:
    return {"kind": "transition", "job_id": job_id, "scheduled_for": at(due), "status": status,
            "fence": fence, "executor": "executor-1", "committed": at(committed)}  # fmt: skip


def kept() -> list[Event]:
    """A history that keeps every promise: a one-off run retried once after its executor
    died (its first fence's lease ended), and a cron job (every 2 s) whose run at 2 s was
    skipped while the one at 0 s ran, and whose run at 4 s misfired."""
    running = (f"overlap: run {execution_id(CRON, T0)} was still running (started 2.0 s"
               " before, on executor-1) (policy skip)")  # fmt: skip
    misfired = ("misfire: waited 3.0 s for an executor, past its 1.0 s grace; a later run"
                " fires instead (policy fire_once)")  # fmt: skip
    return [
        create(JOB, [0], idempotent=True),
        create(CRON, [0, 2, 4, 6]),
        start(JOB, 0, 1, 0.1),
        attempt(JOB, 0, 1, "lease_expired", 0.1, 3.0),
        start(JOB, 0, 2, 3.2, "executor-1"),
        attempt(JOB, 0, 2, "succeeded", 3.2, 3.3, "executor-1"),
        execution(JOB, 0, "succeeded", 2, 3.3, executor="executor-1"),
        start(CRON, 0, 1, 0.0, "executor-1"),
        attempt(CRON, 0, 1, "succeeded", 0.0, 2.5, "executor-1"),
        execution(CRON, 0, "succeeded", 1, 2.5, executor="executor-1"),
        execution(CRON, 2, "skipped", 0, 2.0, running),
        execution(CRON, 4, "skipped", 0, 7.0, misfired),
        start(CRON, 6, 1, 7.0),
        attempt(CRON, 6, 1, "succeeded", 7.0, 7.1),
        execution(CRON, 6, "succeeded", 1, 7.1),
        change(CRON, 0, "pending", 0, -5.0),
        change(CRON, 0, "dispatched", 1, -0.2),
        change(CRON, 0, "running", 1, 1.0),
        change(CRON, 0, "succeeded", 1, 2.6),
        {"kind": "end", "due_until": at(10)},
    ]


def replaced(history: list[Event], index: int, **fields: object) -> list[Event]:
    changed = copy.deepcopy(history)
    changed[index] = {**changed[index], **fields}
    return changed


def test_a_history_that_keeps_every_promise_passes() -> None:
    assert model.check(kept()) == []


def test_a_due_run_still_in_flight_or_never_made_is_caught() -> None:
    history = kept()
    still = replaced(history, 6, status="running")
    assert model.due_runs_terminal(still) == [f"run {execution_id(JOB, T0)} was due and is"
                                              " still running"]  # fmt: skip
    lost = [e for e in history if not (e["kind"] == "execution" and e["job_id"] == JOB)]
    assert "never made (lost)" in " ".join(model.due_runs_terminal(lost))
    # Not acknowledged, or not due yet: not promised.
    assert model.due_runs_terminal(replaced(lost, 0, acked=False)) == []
    assert model.due_runs_terminal(replaced(lost, -1, due_until=at(-1))) == []


def test_a_fence_started_twice_is_caught() -> None:
    twice = [*kept(), start(JOB, 0, 2, 3.25, "executor-0")]
    [finding] = model.no_fence_started_twice(twice)
    assert "fence 2 started 2 times (on executor-1, executor-0)" in finding


def test_a_start_of_no_claim_or_of_another_executors_claim_is_caught() -> None:
    history = kept()
    unclaimed = [*history, start(JOB, 0, 3, 3.4)]
    [finding] = model.starts_are_claimed(unclaimed)
    assert "fence 3 started on executor-0, and the store has no claim of that fence" in finding
    elsewhere = replaced(history, 2, executor="executor-1")
    [finding] = model.starts_are_claimed(elsewhere)
    assert "started on executor-1; the store dispatched it to executor-0" in finding


def test_a_result_under_a_superseded_fence_is_caught() -> None:
    history = kept()
    # The first fence's result accepted as a success after the second started.
    stale = replaced(history, 3, outcome="succeeded", finished_at=at(3.5))
    found = " ".join(model.no_superseded_result_accepted(stale))
    assert "succeeded 2 times" in found
    assert "superseded by fence 2" in found
    assert "after fence 2 started" in found
    # A success no executor started (a forged or misrouted report).
    unstarted = [e for e in history if not (e["kind"] == "start" and e["job_id"] == JOB
                                            and e["fence"] == 2)]  # fmt: skip
    assert "no executor started that fence" in " ".join(
        model.no_superseded_result_accepted(unstarted)
    )
    # The run's fence of record is not its success's.
    assert "fence of record is 1" in " ".join(
        model.no_superseded_result_accepted(replaced(history, 6, fence=1))
    )


def test_a_non_idempotent_run_that_ran_again_by_itself_is_caught() -> None:
    history = replaced(kept(), 0, idempotent=False)
    [finding] = model.non_idempotent_never_rerun(history)
    assert "started under fences [1, 2] with 0 retries asked for" in finding
    # A person's retry allows the second start.
    assert model.non_idempotent_never_rerun(replaced(history, 6, retries=1)) == []


OTHER = execution_id(CRON, T0)


@pytest.mark.parametrize(
    ("reason", "due", "decided", "finding"),
    [
        # The run it names ended at 2.5 s (its result committed at 2.6 s): not in flight at 4 s.
        (
            f"overlap: run {OTHER} was still running (started 4.0 s before, on executor-1)"
            " (policy skip)",
            4,
            4.0,
            "which was not in flight then",
        ),
        (
            f"overlap: run {OTHER} was in flight (handed to executor-1 4.0 s before, due 4.0 s"
            " before, no result yet) (policy skip)",
            4,
            4.0,
            "which was not in flight then",
        ),
        (
            f"overlap: run {execution_id(JOB, T0)} was still running (started 0.5 s before, on"
            " executor-1) (policy skip)",
            2,
            2.0,
            "names a run of another job",
        ),
        (
            "misfire: waited 0.6 s, past its 1.0 s grace (policy fire_once)",
            3.4,
            4.0,
            "after only 0.600 s",
        ),
        (
            "misfire: came due 9.0 s before a scheduler loaded it, past its 1.0 s grace"
            " (policy fire_once)",
            4,
            7.0,
            "its misfire skip says 9.0 s",
        ),
        (
            "misfire: waited 3.0 s, past its 5.0 s grace (policy fire_once)",
            4,
            7.0,
            "names a 5.0 s grace",
        ),
        (
            "misfire: waited 3.0 s, past its 1.0 s grace (policy skip)",
            4,
            7.0,
            "names a policy its job (fire_once)",
        ),
        ("paused by a person", 4, 7.0, "a reason the model does not know"),
        # Before its claim committed (at -0.2 s), the run was not in flight yet.
        (
            f"overlap: run {OTHER} was in flight (handed to executor-1 1.0 s before, due 0.5 s"
            " before, no result yet) (policy skip)",
            2,
            -0.5,
            "not in flight then (pending)",
        ),
        # Decided at 5.5 s, when no later run of its job (the next: 6 s) had come due.
        (
            "misfire: waited 1.5 s, past its 1.0 s grace; a later run fires instead"
            " (policy fire_once)",
            4,
            5.5,
            "none of its job's later runs had come due",
        ),
        (
            f"overlap: run {OTHER} was still running (started 2.0 s before, on executor-7)"
            " (policy skip)",
            2,
            2.0,
            "it was dispatched to ['executor-1'] only",
        ),
    ],
)
def test_a_skip_whose_reason_did_not_hold_is_caught(
    reason: str, due: float, decided: float, finding: str
) -> None:
    changed = replaced(kept(), 11, reason=reason, fire_at=at(due), finished_at=at(decided))
    found = " ".join(model.skip_reasons_held(changed))
    assert finding in found, found


def test_an_overlap_skip_holds_until_the_result_is_committed() -> None:
    """The handler returned at 2.5 s; its result committed at 2.6 s: a skip decided in
    between saw the run in flight, and one decided after it did not."""
    history = kept()
    handed = (f"overlap: run {OTHER} was in flight (handed to executor-1 2.0 s before, due"
              " 2.0 s before, no result yet) (policy skip)")  # fmt: skip
    assert model.skip_reasons_held(replaced(history, 10, reason=handed, finished_at=at(2.55))) == []
    [finding] = model.skip_reasons_held(replaced(history, 10, reason=handed, finished_at=at(3.0)))
    assert "which was not in flight then (succeeded)" in finding


def test_an_overlap_skip_whose_stated_start_is_wrong_is_caught() -> None:
    history = kept()
    # Said to have started 2.6 s before the skip at 2 s: before its handler did (at 0 s).
    wrong = (f"overlap: run {execution_id(CRON, T0)} was still running (started 2.6 s"
             " before, on executor-1) (policy skip)")  # fmt: skip
    [finding] = model.skip_reasons_held(replaced(history, 10, reason=wrong))
    assert "started 2.6 s before" in finding
    assert "the executors started it at" in finding
    # Said to be running at 2 s, when its only start came at 2.5 s.
    late = replaced(replaced(history, 10, reason=wrong.replace("2.6 s", "0.5 s")), 7,
                    at=at(2.5))  # fmt: skip
    assert "the executors started it at" in " ".join(model.skip_reasons_held(late))
    # The store marks the start at the first heartbeat: a later stated start holds.
    lagging = wrong.replace("2.6 s", "1.2 s")
    assert model.skip_reasons_held(replaced(history, 10, reason=lagging)) == []


def test_durations_read_as_wheel_writes_them() -> None:
    assert model.seconds("840 ms") == 0.84
    assert model.seconds("25.7 s") == 25.7
    assert model.seconds("1 min 17 s") == 77
    assert model.seconds("2 h 5 min") == 7500
