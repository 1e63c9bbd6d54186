"""`wheel nodes` and `wheel executors` as printed: lost nodes, who took their partitions,
and executor credit in slots."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rich.console import Console

from wheel.cli.cluster import free_slots, show_executors, show_roster, takers
from wheel.client.types import ExecutorInfo, ExecutorLink, Node, NodeState, Roster
from wheel.executor.config import DEFAULT_HOLD

NOW = datetime.now(UTC).replace(microsecond=0)


def printed(draw: object, width: int = 120) -> str:
    console = Console(width=width, record=True, highlight=False, markup=False)
    draw(console)  # type: ignore[operator]
    return console.export_text()


def live(node_id: str, partitions: int = 128) -> Node:
    return Node(node_id, f"10.0.0.{node_id[-1]}:7070", partitions,
                since=NOW - timedelta(hours=3))  # fmt: skip


def lost(node_id: str, ago: timedelta, taken: dict[int, str | None]) -> Node:
    return Node(node_id, "10.0.0.9:7070", len(taken), state=NodeState.LOST,
                gone_at=NOW - ago, taken=taken)  # fmt: skip


def test_a_lost_node_is_shown_with_when_it_went_and_who_took_its_partitions() -> None:
    gone = lost("node-2", timedelta(minutes=2), {p: f"node-{p % 2}" for p in range(85)})
    roster = Roster((live("node-0"), live("node-1")), (gone,), expected=3)
    text = printed(lambda c: show_roster(c, roster, NOW))
    assert "2 of 3 expected nodes are live: lost node-2" in text
    row = next(line for line in text.splitlines() if "node-2" in line and "lost" in line
               and "UTC" in line)  # fmt: skip
    assert f"{gone.gone_at:%H:%M:%S} UTC, 2 min ago" in row
    assert "node-0 (43), node-1 (42)" in row
    assert "85" in row


def test_a_whole_cluster_reads_as_all_expected_nodes_live() -> None:
    roster = Roster((live("node-0"), live("node-1")), (), expected=2)
    text = printed(lambda c: show_roster(c, roster, NOW))
    assert "2 of 2 expected nodes are live" in text
    assert "lost" not in text
    assert "departed" not in text
    assert "3 h" in text, "how long each node has been up"


def test_a_node_that_left_cleanly_or_came_back_is_not_missing() -> None:
    left = Node("node-3", "", 10, state=NodeState.LEFT, gone_at=NOW - timedelta(minutes=5),
                taken={1: "node-0", 2: None})  # fmt: skip
    back = lost("node-1", timedelta(minutes=9), {5: "node-0"})
    roster = Roster((live("node-0"), live("node-1")), (left, back), expected=2)
    assert roster.lost == ()
    text = printed(lambda c: show_roster(c, roster, NOW))
    assert "2 of 2 expected nodes are live" in text
    assert "lost, back" in text
    assert "node-0 (1), 1 not yet" in text
    assert "left" in text


def test_takers_count_per_node() -> None:
    assert takers(lost("x", timedelta(0), {1: "b", 2: "a", 3: "b"})) == "a (1), b (2)"
    assert takers(lost("x", timedelta(0), {})) == "-"


def link(credit: int, *, slots: int | None = 16, hold: int = DEFAULT_HOLD) -> ExecutorLink:
    return ExecutorLink(
        "node-0", {"default": credit}, in_flight=0, connected_at=NOW - timedelta(minutes=1),
        slots={"default": slots} if slots is not None else {},
        hold=hold if slots is not None else 0,
    )  # fmt: skip


def test_credit_reads_as_free_slots_not_slots_plus_the_hold() -> None:
    assert free_slots(link(DEFAULT_HOLD + 16)) == "default 16 of 16 free"
    assert free_slots(link(DEFAULT_HOLD + 12)) == "default 12 of 16 free"
    # Every slot busy and runs handed over ahead of their instant: nothing free.
    assert free_slots(link(DEFAULT_HOLD - 40)) == "default 0 of 16 free"
    assert free_slots(link(4, hold=0)) == "default 4 of 16 free"


def test_an_executor_that_does_not_say_its_slots_shows_its_raw_credit() -> None:
    assert free_slots(link(DEFAULT_HOLD + 16, slots=None)) == "default credit 50,016"


def test_the_executors_table_shows_free_slots() -> None:
    executor = ExecutorInfo("ex-1", ("default",), ("reports.daily",), 16,
                            links=(link(DEFAULT_HOLD + 12),))  # fmt: skip
    text = printed(lambda c: show_executors(c, [executor], NOW))
    assert "free slots" in text
    assert "default 12 of 16 free" in text
    assert "50012" not in text
    assert "50,012" not in text


def test_a_node_lost_then_back_then_stopped_cleanly_is_not_missing() -> None:
    stopped = Node("node-1", "", 4, state=NodeState.LEFT, gone_at=NOW - timedelta(minutes=1))
    earlier = lost("node-1", timedelta(minutes=9), {5: "node-0"})
    roster = Roster((live("node-0"),), (stopped, earlier), expected=1)
    assert roster.lost == ()
    assert "1 of 1 expected nodes are live" in printed(lambda c: show_roster(c, roster, NOW))
