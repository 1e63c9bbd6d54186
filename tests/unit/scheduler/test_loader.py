"""The loader's catch-up: how far each pass reads, and from when."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast
from unittest.mock import MagicMock

from wheel.model.ids import PartitionId
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.engine import Engine
from wheel.scheduler.loader import Loader
from wheel.store import Store


class _Occurrences:
    def __init__(self) -> None:
        self.reads: list[tuple[datetime, datetime]] = []

    async def load_requeued(self, partitions: list[PartitionId], since: datetime,
                            before: datetime) -> list[Any]:  # fmt: skip
        self.reads.append((since, before))
        return []


def loader() -> tuple[Loader, _Occurrences]:
    config = SchedulerConfig(node_id="n", postgres_dsn="postgresql://x", etcd_endpoint="e:1",
                             prefetch_ms=500, window_s=300)  # fmt: skip
    engine = MagicMock(name="engine")
    engine.config = config
    engine.owned = {PartitionId(0): 1}
    engine.add_due.return_value = 0
    engine.now = lambda: datetime.now(UTC)
    occurrences = _Occurrences()
    store = MagicMock(name="store")
    store.occurrences = occurrences
    found = Loader(cast(Engine, engine), cast(Store, store), dsn="postgresql://x")
    found.loaded_until = datetime.now(UTC) + timedelta(seconds=300)
    return found, occurrences


async def test_a_near_pass_reads_what_is_claimable_now_and_a_full_one_the_whole_window() -> None:
    found, occurrences = loader()
    await found.catch_up()
    await found.catch_up(full=True)
    (near_since, near_before), (full_since, full_before) = occurrences.reads
    now = datetime.now(UTC)
    assert near_before < now + timedelta(seconds=1), "a near pass stops at now + prefetch"
    assert full_before == found.loaded_until, "a full pass reaches the loaded window's end"
    assert full_since <= near_since


async def test_a_pass_rereads_only_the_slack_before_the_last_one() -> None:
    found, occurrences = loader()
    await found.catch_up()
    first_done = datetime.now(UTC)
    await found.catch_up()
    second_since = occurrences.reads[1][0]
    assert first_done - timedelta(seconds=31) < second_since < first_done


async def test_the_listener_reconnecting_reads_the_whole_window() -> None:
    found, occurrences = loader()
    await found._caught_up_fully()
    assert occurrences.reads[0][1] == found.loaded_until
