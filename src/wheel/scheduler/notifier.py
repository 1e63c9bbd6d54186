"""The node's notification sender, set up from its configuration and counted in its metrics."""

from __future__ import annotations

from wheel.notify.sender import Sender, SendSettings
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.metrics import NodeMetrics
from wheel.store import Store


def notification_sender(
    config: SchedulerConfig, store: Store, metrics: NodeMetrics | None
) -> Sender:
    settings = SendSettings(
        timeout_s=config.notify_timeout_s,
        max_tries=config.notify_max_tries,
        denied_networks=config.denied_networks,
    )
    return Sender(
        store.outbox,
        settings,
        node_id=config.node_id,
        on_tried=metrics.notification_tried if metrics is not None else lambda result: None,
    )
