"""wheel.v1.Notifications: the tenant's webhook, read and replaced with its own token."""

from __future__ import annotations

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel.api import convert
from wheel.api.server.rpc import Rpc, Service
from wheel.errors import InvalidArgument
from wheel.model.ids import TenantId
from wheel.model.notifications import Webhook, notify_statuses
from wheel.notify.egress import DEFAULT_EGRESS, EgressPolicy
from wheel.store import Store
from wheel.timestamps import to_timestamp


def webhook_to(webhook: Webhook) -> api.Webhook:
    message = api.Webhook(
        url=webhook.url,
        on=[convert.EXECUTION_STATUS[s] for s in webhook.on],
        secret=webhook.secret,
    )
    if webhook.secret_rotated_at is not None:
        message.secret_rotated_at.CopyFrom(to_timestamp(webhook.secret_rotated_at))
    return message


class NotificationsApi:
    def __init__(self, store: Store, *, egress: EgressPolicy = DEFAULT_EGRESS) -> None:
        """`egress`: the node's own, so a URL its senders would refuse is refused when set."""
        self._store = store
        self._egress = egress

    def service(self) -> Service:
        return Service(
            "wheel.v1.Notifications",
            [
                Rpc("GetWebhook", api.GetWebhookRequest, self.get),
                Rpc("SetWebhook", api.SetWebhookRequest, self.set),
            ],
        )

    async def get(self, request: api.GetWebhookRequest, tenant: TenantId) -> api.Webhook:
        return webhook_to(await self._store.webhooks.get(tenant))

    async def set(self, request: api.SetWebhookRequest, tenant: TenantId) -> api.Webhook:
        if request.url:
            self._egress.admit("url", request.url)
        statuses = []
        for index, value in enumerate(request.on):
            status = convert.EXECUTION_STATUS_FROM.get(value)
            if status is None:
                raise InvalidArgument(f"on[{index}]", f"{value} is not a known status")
            statuses.append(status)
        webhook = await self._store.webhooks.set(
            tenant,
            url=request.url,
            on=notify_statuses("on", statuses),
            rotate_secret=request.rotate_secret,
        )
        return webhook_to(webhook)
