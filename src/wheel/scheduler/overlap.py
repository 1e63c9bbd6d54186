"""Runs that wait for their job's running one: the node's side of the overlap policies.

The claim statement is the judge: it refuses to claim a run of an
overlap-limited job while another of its runs is in flight (BLOCKED) and
applies the job's policy. Here the node keeps what it was told, so a
blocked run is not claimed again and again:

- 'queue' keeps the earliest waiting run and skips the rest (a queued run the
  catch-up released to try again may come back blocked after a later one took
  its place: it takes the place back);
- 'wait' (manual and backfilled runs) keeps every run, in order: one goes to
  the wheel, the others straight behind it, so the ready queues never hold
  thousands of one job's runs that only one can take;
- 'skip' is blocked only behind a run handed over after its own instant (both
  waited, for an executor say: neither overlapped the other's instant), so
  every such run waits, in instant order, and the claim decides again when
  the one ahead has finished (the misfire policy, for one past its grace).

Only one run of such a job is in a claim at a time (`claiming`), and a run
of a 'queue' or 'skip' job is not sent to a claim while an earlier run of it
waits here (`waits_behind`): it joins the queue at once. Otherwise the claim
of a later run could land just after the running one's result and take the
place of the one queued. When the
running one finishes, the first waiting one is released; the catch-up
releases them all from time to time, since the predecessor may have finished
on another node. Everything here is also pending in Postgres: dropping it
loses nothing.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable

from wheel.model.ids import ExecutionKey, JobId, PartitionId
from wheel.scheduler.ready import Ready


class OverlapQueues:
    def __init__(
        self, *, forget: Callable[[ExecutionKey], object], release: Callable[[Ready], None]
    ) -> None:
        """`forget` drops a skipped run from what the engine knows; `release` hands a run
        back to be claimed."""
        self._forget = forget
        self._release = release
        self.blocked: dict[JobId, list[Ready]] = {}
        """By job: the runs waiting for its running one, in the order they were blocked."""
        self.claiming: set[JobId] = set()
        """Jobs (overlap not 'allow') with a run in a claim now: one at a time."""

    def behind_head(self, item: Ready, heads: set[JobId]) -> bool:
        """File a loaded 'wait' run behind its job's first one; False if it is the first
        (in `heads`, the jobs already given a first run in this load), to go to the wheel."""
        job_id = item.key.job_id
        if job_id in self.blocked or job_id in heads:
            self.blocked.setdefault(job_id, []).append(item)
            return True
        heads.add(job_id)
        return False

    def waits_behind(self, item: Ready) -> bool:
        """Whether a 'queue' or 'skip' run must wait behind an earlier run of its job that
        waits here, rather than go to a claim ('wait' runs are ordered by `behind_head`)."""
        if item.overlap not in ("queue", "skip"):
            return False
        waiting = self.blocked.get(item.key.job_id)
        if not waiting:
            return False
        return waiting[0].key.scheduled_for < item.key.scheduled_for

    def queue_behind(self, item: Ready) -> tuple[Ready, Ready] | None:
        """Wait behind the job's running run; returns the one the policy skips, with the one
        that stays queued."""
        waiting = self.blocked.setdefault(item.key.job_id, [])
        if any(w.key == item.key for w in waiting):
            return None
        if item.overlap == "wait":
            # It was first in line (released, or the one put in the wheel): it stays
            # first, so runs that wait keep their order however often they are retried.
            waiting.insert(0, item)
            return None
        if item.overlap == "skip":
            bisect.insort(waiting, item, key=lambda w: w.key.scheduled_for)
            return None
        if not waiting:
            waiting.append(item)
            return None
        queued = waiting[0]
        if queued.overlap != "wait" and item.key.scheduled_for < queued.key.scheduled_for:
            waiting[0] = item
            self._forget(queued.key)
            return queued, item
        self._forget(item.key)
        return item, queued

    def release(self, job_id: JobId) -> None:
        """The job's running run finished: the first waiting one may go."""
        waiting = self.blocked.get(job_id)
        if not waiting:
            self.blocked.pop(job_id, None)
            return
        item = waiting.pop(0)
        if not waiting:
            del self.blocked[job_id]
        self._release(item)

    def release_all(self) -> None:
        """Try every job's first waiting run again."""
        for job_id in list(self.blocked):
            self.release(job_id)

    def drop_partition(self, partition: PartitionId) -> None:
        for job_id, items in list(self.blocked.items()):
            if items[0].partition == partition:  # a job's runs share its partition
                del self.blocked[job_id]

    def waiting(self) -> int:
        return sum(len(items) for items in self.blocked.values())
