"""Deadlines missed and failure streaks: the sweeps a partition's owner runs.

Both are single calls of functions in the schema (`wheel_mark_deadlines`,
`wheel_check_streaks`), epoch-fenced like a claim, so a node that lost a
partition changes nothing of it. A run is marked missed once, in the statement
that writes its `deadline_missed` notification; a streak is announced once, by a
guarded update of its job's `failing_since`, with its notification.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wheel.model.ids import JobId, PartitionId
from wheel.store.pool import Pool
from wheel.store.queries import sql
from wheel.store.translate import translated


@dataclass(frozen=True, slots=True)
class Announced:
    """A failure streak told about ('failing') or ended by a success ('recovered')."""

    event: str
    job_id: JobId
    streak: int
    """Runs in the streak that ended dead or needing review."""


class Deadlines:
    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    async def mark_missed(self, epochs: Mapping[PartitionId, int]) -> int:
        """Mark the runs of these partitions whose deadline passed without a success;
        how many this call marked (each run is marked by one call only)."""
        if not epochs:
            return 0
        params = {"partitions": sorted(epochs), "epochs": [epochs[p] for p in sorted(epochs)]}
        async with translated(), self._pool.connection() as conn:
            # Unprepared: planned with its values, one day partition per statement inside.
            cursor = await conn.execute(sql("mark_deadlines"), params, prepare=False)
            row = await cursor.fetchone()
        return int(row[0]) if row is not None else 0

    async def check_streaks(self, epochs: Mapping[PartitionId, int]) -> list[Announced]:
        """Announce the failure streaks and recoveries of these partitions' jobs."""
        if not epochs:
            return []
        params = {"partitions": sorted(epochs), "epochs": [epochs[p] for p in sorted(epochs)]}
        async with translated(), self._pool.connection() as conn:
            cursor = await conn.execute(sql("check_streaks"), params)
            rows = await cursor.fetchall()
        return [Announced(event, JobId(job_id), streak) for event, job_id, streak in rows]
