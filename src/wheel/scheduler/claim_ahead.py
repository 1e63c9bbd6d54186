"""How long before its instant a run that overlaps nothing is claimed and handed over.

`prefetch_ms` ahead is enough while the node hands runs over faster than they
come due. A crowded instant is not: 100,000 runs due at T, handed over at
8,000 a second, take 12.5 s. So the node counts the runs it has loaded per
second of instant, and plans backwards from the latest second within
`prefetch_max_ms`: each second's runs are claimed early enough for them, and
every crowded second after them, to be with executors by their instant at the
measured hand-over rate. Never later than `prefetch_ms` ahead, never earlier
than `prefetch_max_ms`.

A run's claim time is planned when it is loaded, from what is loaded by
then. Runs of one instant loaded in several batches need no re-planning: each
later batch sees the larger count and is claimed earlier, exactly when the
batches before it (planned from smaller counts) run out, so hand-over never
pauses.

The rate is what this node handed over per second in windows where work
waited to be claimed the whole time (saturated: claims or executors' credit
were the limit), smoothed; until one has been seen, `handover_rate_per_s`.
Guessing low only claims earlier; a held run's lease counts from its instant
(the store's claim), and executors take no more than they can start in time
(their back-pressure), so claiming early is safe however early it is.
"""

from __future__ import annotations

import bisect

BUCKET_MS = 1000
"""Runs are counted per second of instant: a spike spread over a second is one spike."""
RATE_WINDOW_S = 1.0


class ClaimAhead:
    def __init__(self, *, slice_ms: int, floor_ms: int, cap_ms: int, rate_per_s: float) -> None:
        """`slice_ms`: claim times are multiples of it; `floor_ms`/`cap_ms`: the least and
        most a run is claimed ahead; `rate_per_s`: the hand-over rate assumed until one is
        measured."""
        self._slice_ms = slice_ms
        self._floor_ms = floor_ms
        self._cap_ms = cap_ms
        self.rate_per_s = rate_per_s
        self.measured = False
        self._counts: dict[int, int] = {}
        self._buckets: list[int] = []
        """The counted buckets' starts, ascending."""
        self._window_at: float | None = None
        self._window_handed = 0
        self._saturated = False

    @property
    def most_ahead_ms(self) -> int:
        return self._cap_ms

    def plan(self, fire_at_ms: list[int], now_ms: int) -> list[int]:
        """Count these runs (instants in epoch ms, loaded now) and say when each is to be
        claimed, in order."""
        self._forget_before(now_ms)
        counts, buckets = self._counts, self._buckets
        for fire_ms in fire_at_ms:
            if fire_ms > now_ms:
                bucket = fire_ms - fire_ms % BUCKET_MS
                if bucket in counts:
                    counts[bucket] += 1
                else:
                    counts[bucket] = 1
                    bisect.insort(buckets, bucket)
        planned: dict[int, int] = {}
        claims: list[int] = []
        for fire_ms in fire_at_ms:
            bucket = fire_ms - fire_ms % BUCKET_MS
            ahead = planned.get(bucket)
            if ahead is None:
                ahead = planned[bucket] = self.ahead_ms(bucket)
            claims.append(self._at(fire_ms, ahead))
        return claims

    def claim_at(self, fire_at_ms: int) -> int:
        """When a run of this instant is claimed, from what is counted now."""
        return self._at(fire_at_ms, self.ahead_ms(fire_at_ms - fire_at_ms % BUCKET_MS))

    def ahead_ms(self, bucket_ms: int) -> int:
        """How far ahead of `bucket_ms` its runs must be claimed: everything counted from
        that second to `cap_ms` later handed over by its instant, at the rate."""
        counts, buckets = self._counts, self._buckets
        ms_per_run = 1000 / self.rate_per_s
        first = bisect.bisect_left(buckets, bucket_ms)
        last = bisect.bisect_right(buckets, bucket_ms + self._cap_ms)
        begin = float("inf")
        for index in range(last - 1, first - 1, -1):
            start = buckets[index]
            begin = min(begin, start) - counts[start] * ms_per_run
        if begin == float("inf"):
            return self._floor_ms
        return int(min(self._cap_ms, max(self._floor_ms, bucket_ms - begin)))

    def _at(self, fire_at_ms: int, ahead_ms: int) -> int:
        slice_ms = self._slice_ms
        return (fire_at_ms - ahead_ms) // slice_ms * slice_ms

    def _forget_before(self, now_ms: int) -> None:
        buckets = self._buckets
        past = bisect.bisect_left(buckets, now_ms - BUCKET_MS)
        if past:
            for bucket in buckets[:past]:
                del self._counts[bucket]
            del buckets[:past]

    def observe(self, now_s: float, handed: int, waiting: int) -> None:
        """After a claim round: `handed` is how many runs were handed over so far, `waiting`
        how many wait to be claimed now. A window in which something always waited measures
        the rate."""
        if self._window_at is None:
            self._window_at, self._window_handed, self._saturated = now_s, handed, waiting > 0
            return
        if not waiting:
            self._saturated = False
        elapsed = now_s - self._window_at
        if elapsed < RATE_WINDOW_S:
            return
        sample = (handed - self._window_handed) / elapsed
        if self._saturated and sample > 0:
            self.rate_per_s = sample if not self.measured else 0.5 * self.rate_per_s + 0.5 * sample
            self.measured = True
        self._window_at, self._window_handed = now_s, handed
        self._saturated = waiting > 0
