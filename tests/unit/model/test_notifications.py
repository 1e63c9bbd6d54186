"""Webhook URLs and the statuses a webhook announces: refused with the field and the reason."""

from __future__ import annotations

import pytest

from wheel.errors import InvalidArgument
from wheel.model.executions import ExecutionStatus as S
from wheel.model.jobs import Policies
from wheel.model.notifications import notify_statuses, redacted
from wheel.model.urls import check_webhook_url


@pytest.mark.parametrize(
    "url",
    ["https://hooks.example.com/wheel", "http://127.0.0.1:8080/hook?team=ops",
     "https://[2001:db8::1]:8443/x"],
)  # fmt: skip
def test_http_and_https_urls_are_accepted(url: str) -> None:
    assert check_webhook_url("url", url) == url


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://hooks.example.com/", "must start with http:// or https://"),
        ("hooks.example.com/wheel", "must start with http:// or https://"),
        ("https:///path", "names no host"),
        ("https://user:pw@hooks.example.com/", "must not carry credentials"),
        ("https://hooks.example.com/#frag", "must not have a #fragment"),
        ("https://hooks.example.com:99999/", "not a URL"),
        ("https://hooks.example.com:0/", "port 0"),
        ("https://hooks.example.com/a b", "must not contain spaces"),
        ("https://hooks.example.com/\x00", "control characters"),
        ("https://hooks.example.com/" + "a" * 2048, "longer than 2048"),
    ],
)
def test_a_bad_url_is_refused_naming_the_field(url: str, reason: str) -> None:
    with pytest.raises(InvalidArgument, match=reason) as caught:
        check_webhook_url("url", url)
    assert caught.value.field == "url"


def test_a_jobs_notify_url_is_checked_as_a_policy() -> None:
    assert Policies(notify_url="https://hooks.example.com/x").notify_url
    assert Policies().notify_url == ""
    with pytest.raises(InvalidArgument) as caught:
        Policies(notify_url="file:///etc/passwd")
    assert caught.value.field == "policies.notify_url"


def test_statuses_default_to_dead_and_needs_review_and_come_in_one_order() -> None:
    assert notify_statuses("on", []) == (S.DEAD, S.NEEDS_REVIEW)
    assert notify_statuses("on", [S.SKIPPED, S.DEAD, S.SKIPPED]) == (S.DEAD, S.SKIPPED)


def test_a_status_that_needs_no_person_is_refused() -> None:
    with pytest.raises(
        InvalidArgument, match="succeeded is not one of dead, needs_review, skipped"
    ):
        notify_statuses("on", [S.SUCCEEDED])


def test_what_is_shown_drops_the_query() -> None:
    assert redacted("https://h.example/x?token=secret") == "https://h.example/x?…"
    assert redacted("https://h.example/x") == "https://h.example/x"
