"""The SDK's calls about the tenant's settings and the cluster, apart from jobs and runs.

`AsyncClient` inherits these; they share its transport. Every one of them is a
read, or a write that is safe to repeat, and so retried, except a secret's
rotation (see `set_webhook`).
"""

from __future__ import annotations

from collections.abc import Iterable

from wheel._proto.wheel.v1 import api_pb2 as api
from wheel.api.convert import EXECUTION_STATUS
from wheel.client import messages
from wheel.client import types as t
from wheel.client.transport import Transport
from wheel.model.executions import ExecutionStatus


class TenantAndClusterCalls:
    _transport: Transport

    # -- notifications ----------------------------------------------------------------------

    async def webhook(self) -> t.Webhook:
        """The tenant's webhook: its URL, the statuses it announces and its signing secret."""
        response = await self._transport.call(
            lambda s: s.notifications.GetWebhook, api.GetWebhookRequest(), retry=True
        )
        return messages.webhook(response)

    async def set_webhook(
        self,
        url: str,
        *,
        on: Iterable[ExecutionStatus] = (),
        rotate_secret: bool = False,
    ) -> t.Webhook:
        """Send the tenant's dead, needs_review (and, if in `on`, skipped) runs to `url`.

        An empty `url` turns the tenant's webhook off. Retried, except with
        `rotate_secret`: a repeat of an applied rotation would make a second
        secret and retire the one receivers still hold, so that raises
        `Unavailable` at once instead (read `webhook()` to see whether it happened).
        """
        request = api.SetWebhookRequest(
            url=url, on=[EXECUTION_STATUS[s] for s in on], rotate_secret=rotate_secret
        )
        return messages.webhook(
            await self._transport.call(
                lambda s: s.notifications.SetWebhook, request, retry=not rotate_secret
            )
        )

    # -- cluster ----------------------------------------------------------------------------

    async def nodes(self) -> list[t.Node]:
        """The scheduler nodes etcd lists, with the partitions each holds."""
        response = await self._transport.call(
            lambda s: s.cluster.ListNodes, api.ListNodesRequest(), retry=True
        )
        return [messages.node(item) for item in response.nodes]

    async def roster(self) -> t.Roster:
        """The live nodes, the nodes that went in the last hour (lost or left, and who took
        their partitions) and how many nodes the cluster should have."""
        response = await self._transport.call(
            lambda s: s.cluster.ListNodes, api.ListNodesRequest(), retry=True
        )
        return messages.roster(response)

    async def partitions(self) -> list[t.Partition]:
        """Every partition, its owner (None between owners) and its epoch."""
        response = await self._transport.call(
            lambda s: s.cluster.ListPartitions, api.ListPartitionsRequest(), retry=True
        )
        return [messages.partition(item) for item in response.partitions]

    async def executors(self) -> list[t.ExecutorInfo]:
        """The executors connected to the cluster: pools, task types, capacity."""
        response = await self._transport.call(
            lambda s: s.cluster.ListExecutors, api.ListExecutorsRequest(), retry=True
        )
        return [messages.executor(item) for item in response.executors]
