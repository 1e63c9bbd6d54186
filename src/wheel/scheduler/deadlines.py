"""The deadline and failure-streak sweep of a node's owned partitions.

    sweep = DeadlineSweep(store.deadlines, owned=engine.owned, metrics=metrics)
    task = every("deadlines", config.reap_interval_s, sweep.run)

Each pass marks the runs of owned partitions whose deadline passed without a
success (each run once, whichever node, restart or failover: the mark is a
guarded, epoch-fenced update in the statement that writes its notification),
counts what this node marked in `wheel_deadlines_missed_total`, and announces
the failure streaks and recoveries of those partitions' jobs. The result path
pays nothing for either: a run that succeeds after its deadline stays in the
sweep's index until it is marked.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from wheel.model.ids import PartitionId
from wheel.scheduler.metrics import NodeMetrics
from wheel.store.deadlines import Deadlines

log = logging.getLogger(__name__)


class DeadlineSweep:
    def __init__(
        self,
        deadlines: Deadlines,
        *,
        owned: Mapping[PartitionId, int],
        metrics: NodeMetrics | None,
        node_id: str = "",
    ) -> None:
        self._deadlines = deadlines
        self._owned = owned
        self._metrics = metrics
        self._node_id = node_id
        self.missed = 0
        """Runs this node marked missed since it started."""

    async def run(self) -> None:
        epochs = dict(self._owned)
        if not epochs:
            return
        marked = await self._deadlines.mark_missed(epochs)
        if marked:
            self.missed += marked
            if self._metrics is not None:
                self._metrics.deadlines_missed.inc(marked)
            log.info("deadlines.missed", extra={"node": self._node_id, "runs": marked})
        for announced in await self._deadlines.check_streaks(epochs):
            log.info(
                "deadlines.streak",
                extra={"node": self._node_id, "event": announced.event,
                       "job": str(announced.job_id), "streak": announced.streak},
            )  # fmt: skip
