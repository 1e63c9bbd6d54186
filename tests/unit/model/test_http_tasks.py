"""HTTP task targets: checked where they enter, and the task type each one makes."""

from __future__ import annotations

import pytest

from wheel.errors import InvalidArgument
from wheel.model.http_tasks import HttpTask, host_allowed, host_patterns, is_http_task_type
from wheel.model.jobs import JobSpec, Schedule, ScheduleKind

NOW = Schedule(kind=ScheduleKind.NOW)


@pytest.mark.parametrize(
    ("url", "task_type"),
    [
        ("https://hooks.example.com/run", "wheel.http:hooks.example.com"),
        ("https://Hooks.Example.com:8443/run?x=1", "wheel.http:hooks.example.com:8443"),
        ("http://127.0.0.1:9000/", "wheel.http:127.0.0.1:9000"),
        ("http://[::1]:8080/hook", "wheel.http:[::1]:8080"),
    ],
)
def test_the_task_type_names_the_endpoint(url: str, task_type: str) -> None:
    assert HttpTask(url).task_type == task_type
    assert is_http_task_type(task_type)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.com/", "must start with http:// or https://"),
        ("https://user:secret@example.com/", "must not carry credentials"),
        ("https:///nohost", "names no host"),
        ("https://example.com/a b", "must not contain spaces"),
        ("https://example.com/#frag", "must not have a #fragment"),
        ("https://example.com/" + "x" * 2100, "longer than 2048"),
    ],
)
def test_a_bad_target_names_the_field(url: str, reason: str) -> None:
    with pytest.raises(InvalidArgument, match=f"^http.url: {reason}"):
        HttpTask(url)


def test_a_job_and_its_target_agree_on_the_task_type() -> None:
    target = HttpTask("https://hooks.example.com/run")
    spec = JobSpec("ping", target.task_type, NOW, http=target)
    assert spec.http == target
    with pytest.raises(InvalidArgument, match=r"^task_type: an HTTP task's type is"):
        JobSpec("ping", "report", NOW, http=target)
    with pytest.raises(InvalidArgument, match=r"^task_type: task types starting 'wheel\.'"):
        JobSpec("ping", "wheel.http:hooks.example.com", NOW)


def test_a_tenants_hosts_are_names_or_patterns() -> None:
    assert host_patterns("h", ["Hooks.Example.com ", "*.internal.example.com", "10.0.0.7",
                               "hooks.example.com"]) == (
        "hooks.example.com", "*.internal.example.com", "10.0.0.7",
    )  # fmt: skip
    for bad in ["", "a b", "*", "*.", "http://x.com", "x.com/path", "-x.com", "a*.b.com"]:
        with pytest.raises(InvalidArgument, match=r"^h\[0\]: .* is not a host name or pattern"):
            host_patterns("h", [bad])


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://hooks.example.com/run", True),
        ("https://HOOKS.example.com:8443/run", True),
        ("https://a.internal.example.com/", True),
        ("https://a.b.internal.example.com/", True),
        ("https://internal.example.com/", False),
        ("https://evil-internal.example.com/", False),
        ("https://hooks.example.com.evil.com/", False),
        ("http://127.0.0.1:9000/", False),
    ],
)
def test_a_url_is_allowed_by_its_host(url: str, allowed: bool) -> None:
    patterns = ("hooks.example.com", "*.internal.example.com")
    assert host_allowed(patterns, url) is allowed
    assert host_allowed((), url), "no hosts chosen: any host"


@pytest.mark.parametrize(
    ("patterns", "url", "allowed"),
    [
        (("hooks.example.com",), "https://hooks.example.com./run", True),
        (("hooks.example.com",), "https://\uff48\uff4f\uff4f\uff4b\uff53.example.com/run", True),
        (("*.example.com",), "https://a.example.com./", True),
        (("[2001:db8::1]",), "https://[2001:DB8:0::1]/", True),
        (("2001:db8:0::1",), "https://[2001:db8::1]/", True),
        (("10.0.0.7",), "http://10.0.0.7:8080/", True),
        # Read as the sender reads them: an address is not a name, an unreadable URL no host.
        (("10.0.0.7",), "http://167772167/", False),
        (("*.example.com",), "http://a.example.com\\@169.254.169.254/", False),
        (("*.internal",), "http://x.internal%2f/", False),
    ],
)
def test_the_host_is_the_one_the_sender_connects_to(
    patterns: tuple[str, ...], url: str, allowed: bool
) -> None:
    assert host_allowed(patterns, url) is allowed
