"""Notifications: the webhook a tenant (or one of its jobs) names for runs that need a person.

A run that ends dead, waits for review or is skipped can be announced with an
HTTP POST to a URL the tenant chose, signed with the tenant's secret
(`wheel.api.signature`). Which of those statuses are announced is the
tenant's choice; skipped is opt-in, because a frequent job whose overlap
policy skips is routine, not news.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit

from wheel.errors import InvalidArgument
from wheel.model.executions import ExecutionStatus

NOTIFIABLE = (ExecutionStatus.DEAD, ExecutionStatus.NEEDS_REVIEW, ExecutionStatus.SKIPPED)
"""The statuses a notification can be sent for."""

DEFAULT_NOTIFY_ON = (ExecutionStatus.DEAD, ExecutionStatus.NEEDS_REVIEW)
"""What a webhook announces unless the tenant says otherwise."""

DEFAULT_DENIED = (
    "0.0.0.0/8",  # "this network"; 0.0.0.0 reaches the node itself
    "169.254.0.0/16",  # link-local: AWS, GCP and Azure metadata, ECS task credentials
    "100.100.100.200/32",  # Alibaba Cloud metadata
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",  # reserved, and broadcast
    "::/128",
    "fe80::/10",  # link-local
    "fd00:ec2::254/128",  # AWS metadata over IPv6
    "ff00::/8",  # multicast
)
"""Denied unless an operator says otherwise (`notify_deny_networks`)."""


def notify_statuses(field: str, statuses: Iterable[ExecutionStatus]) -> tuple[ExecutionStatus, ...]:
    """The statuses to announce, deduplicated in a fixed order; the default when none."""
    chosen = set(statuses)
    for status in chosen:
        if status not in NOTIFIABLE:
            allowed = ", ".join(s.value for s in NOTIFIABLE)
            raise InvalidArgument(field, f"{status.value} is not one of {allowed}")
    return tuple(s for s in NOTIFIABLE if s in chosen) or DEFAULT_NOTIFY_ON


def redacted(url: str) -> str:
    """The URL without its query: what explain and logs show (a query may hold a secret)."""
    parts = urlsplit(url)
    return parts._replace(query="", fragment="").geturl() + ("?…" if parts.query else "")


@dataclass(frozen=True, slots=True)
class Webhook:
    """A tenant's notification settings."""

    url: str
    """Empty: no tenant-wide webhook (a job may still name its own)."""
    on: tuple[ExecutionStatus, ...]
    secret: str
    """Signs every notification (HMAC-SHA256); made by wheel, rotated on request."""
    secret_rotated_at: datetime | None


class NotificationEvent:
    """What a notification announces besides a run's status: plain strings, as stored."""

    DEADLINE_MISSED = "deadline_missed"
    """A run had not succeeded by its job's deadline (sent once per run)."""
    FAILING = "failing"
    """A job's runs ended dead or needing review `notify_after_failures` times in a row."""
    RECOVERED = "recovered"
    """A job that was announced failing succeeded again."""


class DeliveryState:
    """Where one notification is: a plain string so the store and explain agree on the words."""

    PENDING = "pending"
    DELIVERED = "delivered"
    GAVE_UP = "gave_up"


@dataclass(frozen=True, slots=True)
class Delivery:
    """One notification of a run and how its delivery went so far."""

    id: str
    status: ExecutionStatus
    """The run's status it announces."""
    url: str
    state: str
    """A `DeliveryState` value."""
    tries: int
    created_at: datetime
    next_at: datetime | None
    """When the next try is due; None once delivered or given up."""
    delivered_at: datetime | None
    last_error: str | None
    last_status_code: int | None
    event: str | None = None
    """None: it announces `status`; else the event (`NotificationEvent`)."""
