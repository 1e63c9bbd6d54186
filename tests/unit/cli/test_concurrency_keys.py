"""`wheel jobs create/update --concurrency-key ...` against a fake API: what they send and
print, and the refusals naming the option."""

from __future__ import annotations

import io
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console

from tests.unit.cli.invoking import ok, run
from tests.unit.client.fake_api import FakeApi
from tests.unit.client.helpers import seed_job
from wheel.api.convert import policies_from, policies_to
from wheel.cli import show
from wheel.cli.jobs import jobs
from wheel.client import types
from wheel.model.executions import ExecutionStatus, Trigger
from wheel.model.ids import ExecutionId, JobId
from wheel.model.jobs import Policies


def test_create_sends_the_key_and_its_limit(address: str, api: FakeApi) -> None:
    output = ok(run(jobs, address, "create", "charge", "--task", "billing.charge", "--now",
                    "--concurrency-key", "billing", "--concurrency-limit", "1"))  # fmt: skip
    sent = api.called("CreateJob")[0].request.policies
    assert (sent.concurrency_key, sent.concurrency_key_field, sent.concurrency_limit) == (
        "billing", "", 1
    )  # fmt: skip
    assert "concurrency key 'billing' (limit 1)" in output


def test_create_reads_the_key_from_a_payload_field(address: str, api: FakeApi) -> None:
    output = ok(run(jobs, address, "create", "charge", "--task", "billing.charge", "--now",
                    "--payload", '{"customer": "acme"}', "--concurrency-key-field", "customer",
                    "--concurrency-limit", "2"))  # fmt: skip
    sent = api.called("CreateJob")[0].request.policies
    assert (sent.concurrency_key_field, sent.concurrency_limit) == ("customer", 2)
    assert "concurrency key payload field 'customer' (limit 2)" in output


@pytest.mark.parametrize(
    ("args", "option", "reason"),
    [
        (["--concurrency-key", "billing"], "--concurrency-limit", "required"),
        (["--concurrency-limit", "2"], "--concurrency-key", "needs a key"),
        (["--concurrency-key", "b", "--concurrency-limit", "0"], "--concurrency-limit",
         "required"),
        (["--concurrency-key", "b", "--concurrency-key-field", "c", "--concurrency-limit", "1"],
         "--concurrency-key-field", "not both"),
        (["--concurrency-key-field", "customer", "--concurrency-limit", "1", "--payload", "[]"],
         "--payload", "must be a JSON object"),
    ],
)  # fmt: skip
def test_a_bad_key_is_refused_naming_its_option(
    address: str, api: FakeApi, args: list[str], option: str, reason: str
) -> None:
    result = run(jobs, address, "create", "n", "--task", "t", "--now", *args)
    assert result.exit_code == 2, result.output
    assert f"'{option}'" in result.stderr
    assert reason in result.stderr
    assert api.calls == []


def test_update_swaps_a_key_for_a_field_and_removes_it(address: str, api: FakeApi) -> None:
    seeded = seed_job(api)
    seeded.payload = b'{"customer": 42}'
    seeded.policies.CopyFrom(policies_to(Policies(concurrency_key="billing",
                                                  concurrency_limit=1)))  # fmt: skip
    ok(run(jobs, address, "update", seeded.id, "--version", "3",
           "--concurrency-key-field", "customer"))  # fmt: skip
    sent = policies_from(api.called("UpdateJob")[0].request.job.policies)
    assert (sent.concurrency_key, sent.concurrency_key_field, sent.concurrency_limit) == (
        "", "customer", 1
    )  # fmt: skip
    ok(run(jobs, address, "update", seeded.id, "--version", "4", "--no-concurrency-key"))
    sent = policies_from(api.called("UpdateJob")[1].request.job.policies)
    assert (sent.concurrency_key, sent.concurrency_key_field, sent.concurrency_limit) == (
        "", "", 0
    )  # fmt: skip
    assert api.jobs[seeded.id].policies.concurrency_limit == 0


def test_a_held_run_shows_its_word_sentence_and_key() -> None:
    job_id = JobId(uuid.uuid4())
    now = datetime.now(UTC).replace(microsecond=0)
    said = f"AT_KEY_LIMIT: key 'billing' has 1 of 1 running (run {job_id}@x)"
    held = types.Execution(
        id=ExecutionId(f"{job_id}@y"), job_id=job_id, job_version=1, scheduled_for=now,
        fire_at=now, status=ExecutionStatus.PENDING, reason=None, attempt=0, fence=0,
        trigger=Trigger.SCHEDULE, error=None, created_at=now - timedelta(hours=1),
        started_at=None, finished_at=None, executor_id=None, priority=0,
        waiting="at key limit", waiting_detail=said, concurrency_key="billing",
    )  # fmt: skip
    console = Console(file=io.StringIO(), width=250, color_system=None)
    show.executions(console, types.Page(items=(held,), next_page_token=""))
    show.execution(console, "execution", held)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert f"at key limit: {said}" in text
    assert "concurrency key │ billing" in text
