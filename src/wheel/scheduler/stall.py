"""Whether a node's dispatch is stalled, and why: what readiness, metrics and explain say.

Stalled: in some pool, the next run of a tenant with room has waited
`dispatch_stall_s` past its instant, executors that serve it hold credit for
the pool (usable or held back), and nothing of the pool was dispatched for as
long. Runs waiting for credit (too few executors) or for their tenant's cap
are not a stall: the backlog's age shows those. The reason names who holds
the credit and what is in the way: executors held back, claims failing or
not coming back, recording behind.
"""

from __future__ import annotations

from wheel.scheduler.claims import Claims
from wheel.scheduler.links import Links
from wheel.scheduler.ready import ReadyQueues
from wheel.scheduler.recorder import Recorder


def stalled(
    ready: ReadyQueues,
    links: Links,
    claims: Claims,
    recorder: Recorder,
    *,
    stall_s: float,
    now_ms: int,
    now_s: float,
    since_s: float,
) -> str | None:
    """The reason dispatch is stalled in the first pool where it is, or None.

    `now_s` is monotonic seconds, as `claims.dispatched_at_s` keeps them; a pool
    never dispatched counts from `since_s` (when the engine started).
    """
    for pool in ready.pools():
        oldest = ready.oldest(pool, claims.room)
        if oldest is None or now_ms - oldest.fire_at_ms < stall_s * 1000:
            continue
        idle_s = now_s - claims.dispatched_at_s.get(pool, since_s)
        holders = [link for link in links.holding(pool) if link.serves(pool, oldest.task_type)]
        if idle_s < stall_s or not holders:
            continue
        credit = ", ".join(f"{link.executor_id} {link.credits[pool]}" for link in holders)
        causes = []
        held_back = [link for link in holders if link.held_back]
        if held_back:
            names = ", ".join(f"{link.executor_id} ({link.probes} probes)" for link in held_back)
            causes.append(f"held back after a lapsed lease, not answering: {names}")
        if claims.failing:
            causes.append(f"claims fail: {claims.failing}")
        elif claims.running:
            causes.append(f"{claims.running} claims have not come back")
        if recorder.behind():
            causes.append(f"recording is behind ({recorder.waiting()} results wait)")
        because = f"; {'; '.join(causes)}" if causes else ""
        return (
            f"dispatch stalled in pool {pool!r}: {ready.waiting(pool)} runs ready, the oldest"
            f" {(now_ms - oldest.fire_at_ms) / 1000:.0f} s past its instant, none dispatched"
            f" for {idle_s:.0f} s although executors that serve it hold credit ({credit})"
            f"{because}"
        )
    return None
