"""Sending notifications to a real local HTTP receiver: signed, retried, refused where denied."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, timedelta

from tests.integration.notify.receiver import HANG, Receiver
from tests.integration.store import factories as make
from wheel.client import verify_webhook
from wheel.model.ids import ExecutionKey
from wheel.model.notifications import Delivery, DeliveryState
from wheel.model.tenants import Tenant
from wheel.notify.sender import Sender, SendSettings
from wheel.store import Store

FAST = SendSettings(timeout_s=1.0, backoff_base_s=0.05, backoff_cap_s=0.05, max_tries=4)


@asynccontextmanager
async def sending(store: Store, settings: SendSettings = FAST) -> AsyncIterator[Sender]:
    async with Sender(store.outbox, settings, node_id="node-a", rand=lambda: 0.0) as sender:
        yield sender


async def dead_run(store: Store, url: str, **policies: object) -> tuple[Tenant, ExecutionKey]:
    owner = await make.tenant(store)
    await store.webhooks.set(owner.id, url=url, on=(make.S.DEAD,))
    job = await make.job(store, owner, max_attempts=1, **policies)
    return owner, await make.failed_run(store, job, make.soon(), 1)


async def until(
    sender: Sender, store: Store, owner: Tenant, key: ExecutionKey,
    settled: Callable[[Delivery], bool], within: float = 20.0,
) -> Delivery:  # fmt: skip
    """Send passes until the run's notification is as wanted; backoffs are short, not zero."""
    async with asyncio.timeout(within):
        while True:
            await sender.send_due()
            (delivery,) = await store.outbox.of_run(owner.id, key)
            if settled(delivery):
                return delivery
            await asyncio.sleep(0.02)  # the next try waits for its backoff: nothing to await


async def test_a_notification_arrives_signed_with_the_run_and_explains_it(store: Store) -> None:
    async with Receiver.running() as receiver, sending(store) as sender:
        owner, key = await dead_run(store, receiver.url)
        assert await sender.send_due() == 1
        (got,) = await receiver.received(1)
    secret = (await store.webhooks.get(owner.id)).secret
    stamp = verify_webhook(secret, got.headers["Wheel-Signature"], got.body)
    assert abs(stamp - time.time()) < 60
    # Independently of wheel's own check: HMAC-SHA256 of "<t>.<body>" under the secret.
    mac = hmac.new(secret.encode(), f"{stamp}.".encode() + got.body, hashlib.sha256).hexdigest()
    assert got.headers["Wheel-Signature"] == f"t={stamp},v1={mac}"
    assert got.headers["Content-Type"] == "application/json"
    assert got.headers["User-Agent"].startswith("wheel-scheduler/")
    doc = got.json()
    assert got.headers["Wheel-Notification-Id"] == doc["id"]
    assert doc["type"] == "execution.dead"
    run = doc["execution"]
    assert (run["id"], run["job_id"], run["status"], run["attempts"]) == (
        key.id, str(key.job_id), "dead", 1,
    )  # fmt: skip
    assert run["job"].startswith("every minute")
    assert run["error"] == "boom 0"
    assert run["scheduled_for"] == key.scheduled_for.astimezone(UTC).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ"
    )
    assert doc["summary"].startswith("failed its only attempt (last error: boom 0)")
    (delivery,) = await store.outbox.of_run(owner.id, key)
    assert (delivery.state, delivery.tries, delivery.last_status_code) == (
        DeliveryState.DELIVERED, 1, 200,
    )  # fmt: skip


async def test_failures_are_tried_again_until_the_receiver_takes_it(store: Store) -> None:
    async with Receiver.running(answers=[500, 503]) as receiver, sending(store) as sender:
        owner, key = await dead_run(store, receiver.url)
        delivered = await until(
            sender, store, owner, key, lambda d: d.state == DeliveryState.DELIVERED
        )
        sent = await receiver.received(3)
    assert delivered.tries == 3
    assert len({r.headers["Wheel-Notification-Id"] for r in sent}) == 1  # one id to dedupe by
    assert len({r.body for r in sent}) == 1


async def test_a_receiver_that_never_takes_it_is_given_up_after_the_last_try(
    store: Store,
) -> None:
    async with Receiver.running(answers=[500] * 10) as receiver, sending(store) as sender:
        owner, key = await dead_run(store, receiver.url)
        gave_up = await until(sender, store, owner, key, lambda d: d.state == DeliveryState.GAVE_UP)
    assert (gave_up.tries, gave_up.last_error, gave_up.last_status_code) == (4, "HTTP 500", 500)
    assert len(receiver.requests) == 4


async def test_a_hanging_receiver_times_out_and_is_tried_again(store: Store) -> None:
    async with Receiver.running(answers=[HANG]) as receiver, sending(store) as sender:
        owner, key = await dead_run(store, receiver.url)
        started = time.monotonic()
        await sender.send_due()
        assert time.monotonic() - started < 5  # the 1 s timeout, not the receiver, ended it
        (pending,) = await store.outbox.of_run(owner.id, key)
        assert (pending.state, pending.last_error) == (
            DeliveryState.PENDING, "no answer within 1 s",
        )  # fmt: skip
        delivered = await until(
            sender, store, owner, key, lambda d: d.state == DeliveryState.DELIVERED
        )
    assert delivered.tries == 2


async def test_a_redirect_is_not_followed(store: Store) -> None:
    async with Receiver.running(answers=[302]) as receiver, sending(store) as sender:
        owner, key = await dead_run(store, receiver.url)
        await sender.send_due()
        (pending,) = await store.outbox.of_run(owner.id, key)
        assert (pending.state, pending.last_error) == (DeliveryState.PENDING, "HTTP 302")
        assert len(receiver.requests) == 1


async def test_a_receiver_that_is_down_is_tried_again(store: Store) -> None:
    async with Receiver.running() as gone:
        url = gone.url
    async with sending(store) as sender:
        owner, key = await dead_run(store, url)
        await sender.send_due()
        (pending,) = await store.outbox.of_run(owner.id, key)
    assert pending.state == DeliveryState.PENDING
    assert pending.last_error is not None
    assert pending.last_error.startswith("cannot connect")


async def test_metadata_and_link_local_targets_are_given_up_without_a_request(
    store: Store,
) -> None:
    async with sending(store) as sender:
        for url in ("http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/hook"):
            owner, key = await dead_run(store, url)
            await sender.send_due()
            (refused,) = await store.outbox.of_run(owner.id, key)
            assert refused.state == DeliveryState.GAVE_UP
            assert refused.tries == 1
            assert refused.last_error is not None
            assert "in the denied network" in refused.last_error


async def test_a_name_that_resolves_to_a_denied_network_is_refused(store: Store) -> None:
    denied = SendSettings(timeout_s=1.0, denied_networks=("127.0.0.0/8", "::1/128"))
    async with Receiver.running() as receiver, sending(store, denied) as sender:
        owner, key = await dead_run(store, receiver.url.replace("127.0.0.1", "localhost"))
        await sender.send_due()
        (refused,) = await store.outbox.of_run(owner.id, key)
    assert refused.state == DeliveryState.GAVE_UP
    assert refused.last_error is not None
    assert refused.last_error.startswith("refused: localhost leads to")
    assert receiver.requests == []


async def test_a_url_stored_before_the_check_at_create_is_given_up_at_once(
    store: Store,
) -> None:
    """The store takes what it is given (the API checks); a URL the sender cannot read as
    one it sends to was tried and failed for hours (aiohttp refused it when sending)."""
    async with sending(store) as sender:
        for url in ("http://2852039166/", "http://169.254.169.254./", "http://0:8080/"):
            owner, key = await dead_run(store, url)
            await sender.send_due()
            (refused,) = await store.outbox.of_run(owner.id, key)
            assert (refused.state, refused.tries) == (DeliveryState.GAVE_UP, 1)
            assert refused.last_error is not None
            assert "is read as an IPv4 address" in refused.last_error


async def test_a_backlog_is_sent_in_batches_in_one_call(store: Store) -> None:
    small = SendSettings(timeout_s=2.0, batch=4, concurrency=4)
    async with Receiver.running() as receiver, sending(store, small) as sender:
        owner = await make.tenant(store)
        await store.webhooks.set(owner.id, url=receiver.url, on=(make.S.DEAD,))
        job = await make.job(store, owner, max_attempts=1)
        start = make.soon()
        for n in range(10):
            await make.failed_run(store, job, start + timedelta(minutes=n), 1)
        assert await sender.send_due() == 10
        assert len(await receiver.received(10)) == 10
