"""One try of a notification whose URL cannot be sent: given up at once, never retried."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from wheel.model.executions import ExecutionStatus
from wheel.model.ids import ExecutionKey, JobId, TenantId
from wheel.notify.sender import Sender, SendSettings
from wheel.store.outbox import Due, Outbox

T0 = datetime(2026, 3, 29, 1, 30, tzinfo=UTC)


def due(url: str) -> Due:
    return Due(
        id=str(uuid.uuid4()),
        tenant_id=TenantId(uuid.uuid4()),
        key=ExecutionKey(JobId(uuid.uuid4()), T0),
        job_name="nightly",
        status=ExecutionStatus.DEAD,
        reason=None,
        attempt=1,
        error="boom",
        url=url,
        created_at=T0,
        tries=1,
        secrets=("whsec_" + "ab" * 32,),
    )


class _NoOutbox:
    """One try reads nothing from the outbox: any use of it would fail the test."""


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        # Stored before the check at create refused them: aiohttp refuses them only when
        # sending, which used to count as a failed try, retried for hours.
        ("http://2852039166/", "read as an IPv4 address"),
        ("http://169.254.169.254./latest", "read as an IPv4 address"),
        ("http://0:8080/", "read as an IPv4 address"),
        ("http://2130706433/", "read as an IPv4 address"),
        ("http://127.1/", "read as an IPv4 address"),
        ("http://[::ffff:169.254.169.254]/", "in the denied network 169.254.0.0/16"),
        ("http://\uff11\uff12\uff17.0.0.1:9/", "in the denied network 127.0.0.0/8"),
    ],
)
async def test_a_url_that_cannot_be_sent_is_given_up_at_once(url: str, reason: str) -> None:
    settings = SendSettings(denied_networks=("169.254.0.0/16", "127.0.0.0/8"))
    outbox: Outbox = _NoOutbox()  # type: ignore[assignment]
    async with Sender(outbox, settings, node_id="node-a") as sender:
        tried = await sender.try_once(due(url))
    assert (tried.delivered, tried.give_up) == (False, True)
    assert tried.error is not None
    assert tried.error.startswith("refused: ")
    assert reason in tried.error
