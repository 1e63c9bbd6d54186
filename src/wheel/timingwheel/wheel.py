"""The hierarchical timing wheel: pure data structure, integer milliseconds, no clock."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Hashable
from heapq import heappop, heappush
from typing import Generic, TypeVar

from wheel.timingwheel.config import WheelConfig
from wheel.timingwheel.levels import FAR_MS, Level, align_up

K = TypeVar("K", bound=Hashable)

_NOW_MS = -FAR_MS
"""`_next_work_ms` while a bucket is in flight: work at any now."""
_WHERE_SHARDS = 256
"""A dict that keeps a million entries while keys come and go compacts itself now
and then, copying every entry in one call: measured 86 ms at 1M. Split 256 ways,
each copy is about 4k entries (well under a millisecond)."""
_SHARD_MASK = _WHERE_SHARDS - 1


class TimingWheel(Generic[K]):
    """Timers keyed by hashable ids, each due at an integer millisecond; released in batches.

    Cost. A binary heap pays O(log n) per insert and per pop, with a cache miss
    per level of a million-entry heap, and cancels only lazily (the tombstone
    is popped later anyway). A timing wheel files a timer in a bucket by
    arithmetic on its deadline: insert and cancel are O(1) dict operations and
    expiry takes a whole bucket at a time. Each level here is a dict from
    absolute bucket number (deadline_ms // width) to a bucket, a dict key ->
    deadline_ms, plus a min-heap of the bucket numbers. In CPython a dict
    lookup costs about what a list index does, and keying by absolute number
    instead of `number % slots` means no level overflows, the top level has no
    horizon, and a stretch of empty buckets costs nothing to cross (the heap
    names the next non-empty one). The heaps hold bucket numbers, one push per
    bucket created, so they stay small. A key map (key -> deadline_ms) makes
    cancel O(1): the deadline and the level bounds say which bucket to look in.
    It is split 256 ways by hash: a dict holding a million keys while keys
    come and go compacts itself now and then in one call (86 ms measured).

    Memory. Per pending timer: one key-map entry, one bucket entry, and the
    caller's deadline int (shared by both). No object is allocated per timer
    and none of this is tracked by the cyclic GC. Measured with 1M str keys:
    about 60 bytes of dicts per timer, plus 32 for the int.

    Levels. `WheelConfig(tick_ms=1, slots_per_level=(1024, 64))` has three:

        level 0  1 ms buckets       deadlines before B0 (about now + 1-2 s)
        level 1  1,024 ms buckets   deadlines in [B0, B1) (up to about 2 min)
        level 2  65,536 ms buckets  deadlines from B1 on, without limit

    A timer due in ten minutes is filed in level 2; about 65 s before its
    bucket starts, the bucket moves down to level 1, split into 1,024 ms
    buckets; about a second before, its 1,024 ms bucket moves to level 0,
    split into 1 ms buckets, which `advance` releases when their time comes.
    A timer moves once per level below the one it was filed in.

    The default is two levels, `(256,)`: 1 ms ticks under hashed 256 ms
    buckets, chosen by measurement (docs/benchmarks.md). Every promotion then
    lands in 1 ms buckets, so `advance` never grows a big dict; with a third
    level, a burst fills one level-1 bucket with the timers of a whole second
    by promotion, and that dict resizes inside `advance` (31-58 ms measured
    for 1M timers due in one second). 256 ms rather than 1,024 ms because a bucket
    dict that held a million timers takes 2.5-3.5 ms to free (munmap) when its
    promotion ends; at 256 ms such a burst spreads over four buckets. The
    costs: a bucket starts moving down only 256 ms ahead (~150k timers per
    256 ms can move at ~1.5 us each on the benchmark machine), and long
    horizons use more memory, one small dict per 256 ms: with 1M timers over
    10 min or 1 h, 61 or 58 B per timer; over 24 h, 116 B with `(256,)`
    against 64 B with `(256, 256)`, the better choice for such horizons.

    Promotion ahead of time, in chunks. A textbook wheel cascades a coarse
    bucket when its time arrives, all at once: in Python, 60-150 ms for a
    bucket of 100k+ timers. Here level i's bucket starting at s moves down
    once `now_ms > s - width(i)`, a whole bucket ahead, and `advance` moves at
    most `max_work` timers per call (releases count against it too), leaving
    the rest in flight, still cancellable, for the next call. Level 0 releases
    a tick only once all of it has arrived; if promotion fell behind (a
    starved loop), `advance` does the missing moves first, within the same
    limit. So one call does about `max_work` dict operations whatever the
    distribution of deadlines, a million due in the same second included. (A
    million due in the same millisecond share one level-0 bucket, whose dict
    grows, and resizes, as it fills.)

    Time. Integer milliseconds passed in by the caller; the wheel reads no
    clock. `advance(now_ms)` releases the timers whose tick has ended by
    `now_ms`: none before its instant, none later than a tick after `now_ms`
    passed it, provided `advance` is called again while `next_work_ms() <=
    now_ms`. `now_ms` may go backwards: nothing due after it is released.

    Inserts never raise: `add` returns False when the timer is already due,
    and the next `advance` releases it. Re-adding a key replaces its timer.

    Concurrency contract: not thread-safe and not re-entrant. Use it from one
    thread (the event loop); `add` and `cancel` go between `advance` calls.
    """

    __slots__ = (
        "_bounds_ms",
        "_coarse_wake_ms",
        "_ensure_after_ms",
        "_flight",
        "_flight_start_ms",
        "_levels",
        "_next_work_ms",
        "_now_ms",
        "_where",
    )

    def __init__(self, start_ms: int, config: WheelConfig | None = None) -> None:
        widths = (config or WheelConfig()).widths_ms()
        self._levels: list[Level[K]] = [Level(widths[0], widths[0] - 1)]
        self._levels.extend(Level(width, 1 - width) for width in widths[1:])
        self._where: list[dict[K, int]] = [{} for _ in range(_WHERE_SHARDS)]
        """Every pending key -> its deadline_ms (the deadline says which bucket holds it),
        sharded by hash(key): see `_WHERE_SHARDS`."""
        self._bounds_ms: list[int] = [align_up(start_ms + w, w) for w in widths[1:]]
        """Level i holds deadlines in [bounds[i-1], bounds[i]); level 0 everything before
        bounds[0]; the top level everything from bounds[-1]. Never decrease."""
        self._flight: list[dict[K, int] | None] = [None] * len(widths)
        """flight[i]: the bucket of level i being moved down to level i-1, if any."""
        self._flight_start_ms: list[int] = [0] * len(widths)
        self._now_ms = start_ms
        self._next_work_ms = FAR_MS
        """No tick is due and no bucket needs promotion before this (after cancels it may
        be early, never late)."""
        self._coarse_wake_ms = FAR_MS
        """The same for levels 1 and up alone."""
        self._ensure_after_ms = start_ms
        """Once now_ms passes this, some level's lower neighbour needs its bound moved."""

    # -- insert and cancel: O(1) -----------------------------------------------------------

    def add(self, key: K, deadline_ms: int) -> bool:
        """File `key` to fire at `deadline_ms`, replacing its earlier timer if any.

        Returns True when the timer lies in the future, False when it is already
        due (as of the last `advance`); either way the wheel holds it.
        """
        where = self._where[hash(key) & _SHARD_MASK]
        old_ms = where.get(key)
        if old_ms is not None:
            self._unlink(key, old_ms)
        where[key] = deadline_ms
        level = self._levels[bisect_right(self._bounds_ms, deadline_ms)]
        index = deadline_ms // level.width_ms
        bucket = level.buckets.get(index)
        if not bucket:
            if bucket is None:
                bucket = level.buckets[index] = {}
                heappush(level.heap, index)
            wake_ms = index * level.width_ms + level.wake_offset_ms
            if wake_ms < self._next_work_ms:
                self._next_work_ms = wake_ms
            if wake_ms < self._coarse_wake_ms and level is not self._levels[0]:
                self._coarse_wake_ms = wake_ms
        bucket[key] = deadline_ms
        return deadline_ms > self._now_ms

    def cancel(self, key: K) -> bool:
        """Drop `key`'s timer; False if there was none (fired, cancelled or never added)."""
        deadline_ms = self._where[hash(key) & _SHARD_MASK].pop(key, None)
        if deadline_ms is None:
            return False
        self._unlink(key, deadline_ms)
        return True

    def _unlink(self, key: K, deadline_ms: int) -> None:
        # The bounds say which level files this deadline now; the timer is in that
        # level's bucket unless it is still in the bucket being moved down into it.
        i = bisect_right(self._bounds_ms, deadline_ms)
        level = self._levels[i]
        bucket = level.buckets.get(deadline_ms // level.width_ms)
        if bucket is not None and bucket.pop(key, None) is not None:
            return
        flight = self._flight[i + 1]
        assert flight is not None, "a pending key is in its level or in flight to it"
        del flight[key]

    # -- time -------------------------------------------------------------------------------

    def advance(
        self, now_ms: int, max_fired: int = 1 << 30, max_work: int = 1 << 30
    ) -> list[tuple[K, int]]:
        """Release timers due by `now_ms`, earliest first, as (key, deadline_ms) pairs.

        Also promotes coarse buckets that are coming due. At most `max_fired`
        timers are released and about `max_work` moved in all; when either
        limit stops it early, `next_work_ms() <= now_ms` says to call again.
        """
        self._now_ms = now_ms
        fired: list[tuple[K, int]] = []
        if now_ms < self._next_work_ms and now_ms <= self._ensure_after_ms:
            return fired
        level = self._levels[0]
        heap, buckets, tick_ms, where = level.heap, level.buckets, level.width_ms, self._where
        bounds, flight = self._bounds_ms, self._flight
        work, room = max_work, max_fired
        promoted = False
        while True:
            # Level 0 holds every timer due before `complete_ms`; a tick is released
            # once its last millisecond has come and it lies wholly before that.
            complete_ms = self._flight_start_ms[1] if flight[1] is not None else bounds[0]
            end_tick = (now_ms + 1 if now_ms < complete_ms else complete_ms) // tick_ms
            while heap and heap[0] < end_tick and work > 0 and room > 0:
                tick = heap[0]
                bucket = buckets[tick]
                size = len(bucket)
                if size <= room and size < work:
                    heappop(heap)
                    del buckets[tick]
                    fired.extend(bucket.items())
                    for key in bucket:
                        del where[hash(key) & _SHARD_MASK][key]
                    room -= size
                    work -= size + 1
                else:
                    take = min(room, work)
                    pop = bucket.popitem
                    for _ in range(take):
                        item = pop()
                        fired.append(item)
                        key = item[0]
                        del where[hash(key) & _SHARD_MASK][key]
                    room -= take
                    work -= take
            if work <= 0 or room <= 0 or complete_ms > now_ms:
                break
            # Level 0 is not yet complete up to now: finish promotion before releasing.
            promoted = True
            work = self._ensure(1, now_ms + 1, work)
        levels = self._levels
        for i in range(1, len(levels)):
            if work <= 0:
                break
            target_ms = now_ms + levels[i].width_ms
            if flight[i] is not None or bounds[i - 1] < target_ms:
                promoted = True
                work = self._ensure(i, target_ms, work)
        if promoted:
            self._refresh_coarse()
        if flight.count(None) != len(flight):
            self._next_work_ms = _NOW_MS
        else:
            index = (heap[0] if buckets[heap[0]] else level.first_index()) if heap else None
            fine_ms = FAR_MS if index is None else index * tick_ms + level.wake_offset_ms
            self._next_work_ms = min(fine_ms, self._coarse_wake_ms)
        return fired

    def _refresh_coarse(self) -> None:
        """Recompute `_coarse_wake_ms` and `_ensure_after_ms` after promotion. O(levels)."""
        best, after = FAR_MS, FAR_MS
        for bound, level in zip(self._bounds_ms, self._levels[1:], strict=True):
            after = min(after, bound - level.width_ms)
            index = level.first_index()
            if index is not None:
                best = min(best, index * level.width_ms + level.wake_offset_ms)
        self._coarse_wake_ms = best
        self._ensure_after_ms = after

    def _ensure(self, i: int, target_ms: int, work: int) -> int:
        """Promote into level i-1 until it holds every timer due before `target_ms`.

        Returns the work left; stops early when `work` runs out.
        """
        levels, bounds, flight = self._levels, self._bounds_ms, self._flight
        level = levels[i]
        top = len(levels) - 1
        while work > 0:
            if flight[i] is not None:  # finish it first, whatever the target
                work = self._move(i, work)
                continue
            if bounds[i - 1] >= target_ms:
                return work
            # Level i holds everything before `limit`, except what is in flight from above.
            if i == top:
                limit_ms = FAR_MS
            elif flight[i + 1] is not None:
                limit_ms = self._flight_start_ms[i + 1]
            else:
                limit_ms = bounds[i]
            index = level.first_index()
            start_ms = FAR_MS if index is None else index * level.width_ms
            if start_ms < min(limit_ms, target_ms):
                # Take the whole bucket in flight; `_move` empties it in chunks.
                flight[i] = level.buckets.pop(heappop(level.heap))
                self._flight_start_ms[i] = start_ms
                bounds[i - 1] = start_ms + level.width_ms
                work -= 1
                continue
            if target_ms <= limit_ms:
                bounds[i - 1] = align_up(target_ms, level.width_ms)
                return work
            # Level i is empty below `limit`: cross the gap, then pull from level i+1.
            bounds[i - 1] = limit_ms
            work = self._ensure(i + 1, target_ms, work) - 1
        return work

    def _move(self, i: int, work: int) -> int:
        """Move up to `work` timers from the bucket in flight from level i into level i-1."""
        source = self._flight[i]
        assert source is not None
        level = self._levels[i - 1]
        width, buckets, heap = level.width_ms, level.buckets, level.heap
        pop = source.popitem
        count = min(work, len(source))
        for _ in range(count):
            key, deadline_ms = pop()
            index = deadline_ms // width
            bucket = buckets.get(index)
            if bucket is None:
                bucket = buckets[index] = {}
                heappush(heap, index)
            bucket[key] = deadline_ms
        if not source:
            self._flight[i] = None
        return work - count - 1

    # -- inspection -------------------------------------------------------------------------

    def __len__(self) -> int:
        """Pending timers. O(256): the key map is sharded."""
        return sum(map(len, self._where))

    def __contains__(self, key: object) -> bool:
        return key in self._where[hash(key) & _SHARD_MASK]

    @property
    def now_ms(self) -> int:
        """The `now_ms` of the last `advance` (or the start)."""
        return self._now_ms

    def deadline_ms(self, key: K) -> int | None:
        """When `key` is due, or None if it is not pending."""
        return self._where[hash(key) & _SHARD_MASK].get(key)

    def next_work_ms(self) -> int | None:
        """The earliest `now_ms` at which `advance` has work: a tick to release or a
        bucket to promote; None when there is none. At or before the last `now_ms`:
        call `advance` again now. Never late; after a cancel it may be early. O(1).
        """
        next_ms = self._next_work_ms
        if next_ms == FAR_MS:
            return None
        return self._now_ms if next_ms == _NOW_MS else next_ms

    def next_deadline_ms(self) -> int | None:
        """The earliest pending deadline, or None. Costs up to one coarse bucket's size."""
        levels, flight = self._levels, self._flight
        for i, level in enumerate(levels):
            candidates: list[int] = []
            index = level.first_index()
            if index is not None:
                candidates.append(min(level.buckets[index].values()))
            source = flight[i + 1] if i + 1 < len(levels) else None
            if source:
                candidates.append(min(source.values()))
            if candidates:
                return min(candidates)
        return None

    def level_counts(self) -> list[int]:
        """Pending timers per level, fine to coarse; a bucket in flight counts for the
        level it is leaving. O(buckets)."""
        counts = [level.count() for level in self._levels]
        for i, source in enumerate(self._flight):
            if source is not None:
                counts[i] += len(source)
        return counts

    def pending_between(self, start_ms: int, end_ms: int) -> list[tuple[K, int]]:
        """Pending (key, deadline_ms) with start_ms <= deadline_ms < end_ms, by deadline."""
        found: list[tuple[K, int]] = []
        if end_ms <= start_ms:
            return found
        sources: list[dict[K, int]] = [s for s in self._flight if s is not None]
        for level in self._levels:
            first, last = start_ms // level.width_ms, (end_ms - 1) // level.width_ms
            if last - first < len(level.buckets):
                sources.extend(b for b in map(level.buckets.get, range(first, last + 1)) if b)
            else:
                sources.extend(b for i, b in level.buckets.items() if first <= i <= last)
        for source in sources:
            found.extend(item for item in source.items() if start_ms <= item[1] < end_ms)
        found.sort(key=lambda item: item[1])
        return found
