"""The governor's full collections of what it froze: only once enough was frozen since."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from wheel.timingwheel import GcGovernor, GcPolicy
from wheel.timingwheel.gcpolicy import FROZEN_GROWTH


class Cycle:
    """A tracked object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def governor() -> Iterator[GcGovernor]:
    governor = GcGovernor(GcPolicy())
    governor.start()
    yield governor
    governor.stop()
    gc.unfreeze()


def test_a_full_collection_waits_until_the_frozen_generation_has_grown(
    governor: GcGovernor,
) -> None:
    assert governor.collect_frozen_if_grown() is None, "nothing frozen since the start"
    baseline = gc.get_freeze_count()
    # Cycles that die frozen: a quarter more of the heap, freed only by a full collection.
    garbage = [Cycle() for _ in range(int(baseline * FROZEN_GROWTH) + 1_000)]
    governor.freeze()
    del garbage
    assert governor.frozen_grown()
    found = governor.collect_frozen_if_grown()
    assert found is not None
    assert found >= int(baseline * FROZEN_GROWTH), "the cycles collected"
    assert not governor.frozen_grown(), "counted afresh from what survived"
    assert governor.collect_frozen_if_grown() is None


def test_a_little_frozen_since_is_left_for_later(governor: GcGovernor) -> None:
    kept = [Cycle() for _ in range(100)]
    governor.freeze()
    assert not governor.frozen_grown()
    assert governor.collect_frozen_if_grown() is None
    assert len(kept) == 100
