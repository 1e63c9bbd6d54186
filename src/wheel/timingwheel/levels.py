"""One level of the wheel: buckets of one width, keyed by absolute bucket number."""

from __future__ import annotations

from collections.abc import Hashable
from heapq import heappop
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

FAR_MS = 1 << 62
"""Later than any instant in milliseconds since 1970: the top level's upper bound."""


class Level(Generic[K]):
    """Buckets of `width_ms`, keyed by absolute bucket number, and their order."""

    __slots__ = ("buckets", "heap", "wake_offset_ms", "width_ms")

    def __init__(self, width_ms: int, wake_offset_ms: int) -> None:
        self.width_ms = width_ms
        self.wake_offset_ms = wake_offset_ms
        """Bucket n needs `advance` once now_ms >= n * width_ms + wake_offset_ms."""
        self.buckets: dict[int, dict[K, int]] = {}
        """Bucket number (deadline_ms // width_ms) -> {key: deadline_ms}."""
        self.heap: list[int] = []
        """Every bucket number in `buckets`, once, as a min-heap."""

    def first_index(self) -> int | None:
        """Number of the earliest non-empty bucket; drops emptied buckets on the way."""
        heap, buckets = self.heap, self.buckets
        while heap:
            index = heap[0]
            if buckets[index]:
                return index
            heappop(heap)
            del buckets[index]
        return None

    def count(self) -> int:
        return sum(len(bucket) for bucket in self.buckets.values())


def align_up(value: int, step: int) -> int:
    """The least multiple of `step` that is >= `value`."""
    return -(-value // step) * step
