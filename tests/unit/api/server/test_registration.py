"""The URLs a job sends to are read as its senders will read them, before anything is written."""

from __future__ import annotations

import pytest

from wheel.api.server.registration import check_targets
from wheel.errors import InvalidArgument
from wheel.model.http_tasks import HttpTask
from wheel.model.jobs import JobSpec, Policies, Schedule, ScheduleKind
from wheel.model.notifications import DEFAULT_DENIED
from wheel.notify.egress import DEFAULT_EGRESS, EgressPolicy

NOW = Schedule(kind=ScheduleKind.NOW)


def http_job(url: str, notify_url: str = "") -> JobSpec:
    target = HttpTask(url)
    return JobSpec("ping", target.task_type, NOW, policies=Policies(notify_url=notify_url),
                   http=target)  # fmt: skip


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://2852039166/", "read as an IPv4 address"),
        ("http://169.254.169.254./", "read as an IPv4 address"),
        ("http://0:8080/", "read as an IPv4 address"),
        ("http://[::ffff:169.254.169.254]/", "wheel sends nothing there"),
        ("http://169.254.169.254/latest", "wheel sends nothing there"),
    ],
)
def test_an_http_task_the_runner_would_refuse_is_refused_naming_its_field(
    url: str, reason: str
) -> None:
    fine = http_job("https://hooks.example.com/run")
    with pytest.raises(InvalidArgument, match=reason) as caught:
        check_targets(DEFAULT_EGRESS, [("jobs[0].", fine), ("jobs[1].", http_job(url))])
    assert caught.value.field == "jobs[1].http.url"


def test_a_jobs_own_webhook_is_checked_too() -> None:
    spec = JobSpec("report", "report", NOW, policies=Policies(notify_url="http://127.1:8080/"))
    with pytest.raises(InvalidArgument, match="read as an IPv4 address") as caught:
        check_targets(DEFAULT_EGRESS, [("", spec)])
    assert caught.value.field == "policies.notify_url"


def test_the_nodes_own_denied_networks_decide() -> None:
    spec = http_job("http://10.1.2.3:8080/run", notify_url="http://10.9.9.9/hook")
    check_targets(DEFAULT_EGRESS, [("", spec)])
    cluster = EgressPolicy.of([*DEFAULT_DENIED, "10.0.0.0/8"])
    with pytest.raises(InvalidArgument, match=r"in the denied network 10\.0\.0\.0/8") as caught:
        check_targets(cluster, [("job.", spec)])
    assert caught.value.field == "job.http.url"
