"""`wheel nodes` and `wheel executors`: the cluster at a glance, through the public API.

    wheel nodes                # "2 of 3 expected nodes are live", each node, where it
                               # listens, its partitions, whether the jobs it acknowledges
                               # survive its Postgres; the nodes lost or left in the last
                               # hour, when, and who took their partitions
    wheel executors            # pools, task types, and per node: free slots, in flight, since

They take the API's connection options (`--endpoint`, `--token`, ...). An
executor connected to no node is listed with the reasons that happens. rich is imported
when a table is printed: `wheel nodes --help` needs none of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from wheel.cli.session import Session, connected
from wheel.durations import readable

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from wheel.client import types

_NO_LINKS = "connected to no node: check its --cluster, its token, and that nodes are up"
_STATE_STYLE = {"live": "green", "lost": "red", "left": "dim"}


@click.command()
@connected
def nodes(session: Session) -> None:
    """Every scheduler node: where it listens, how many partitions it holds, and whether a
    job it acknowledges survives the loss of its Postgres primary (a synchronous standby);
    then the nodes lost or stopped in the last hour, and who took their partitions."""
    roster = session.call(lambda client: client.roster())
    session.show(roster, lambda console: show_roster(console, roster, datetime.now(UTC)))


def show_roster(console: Console, roster: types.Roster, now: datetime) -> None:
    """The roster as `wheel nodes` prints it."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    if not roster.nodes and not roster.departed:
        console.print("no scheduler node is in this cluster")
        return
    lost = roster.lost
    summary = f"{len(roster.nodes)} of {roster.expected} expected nodes are live"
    if lost:
        names = ", ".join(node.node_id for node in lost)
        console.print(Text(f"{summary}: lost {names}", "bold red"))
    else:
        console.print(summary)
    if roster.nodes:
        table = Table("node", "state", "partitions", "up", "address", "acknowledged jobs",
                      box=box.SIMPLE)  # fmt: skip
        for node in roster.nodes:
            durable = Text("at risk", "red") if node.durability else "on a synchronous standby"
            up = _ago(now, node.since).removesuffix(" ago") or "-"
            table.add_row(node.node_id, _state(node.state), str(node.partitions), up,
                          node.address, durable)  # fmt: skip
        console.print(table)
    for reason in sorted({node.durability for node in roster.nodes if node.durability}):
        console.print(Text.assemble(("warning: ", "red"), reason))
    if roster.departed:
        console.print("departed in the last hour:")
        live = {node.node_id for node in roster.nodes}
        table = Table("node", "state", "at", "partitions", "taken by", box=box.SIMPLE)
        for node in roster.departed:
            state = _state(node.state)
            if node.node_id in live:
                state.append(", back", "green")
            table.add_row(node.node_id, state, _gone(now, node.gone_at), str(node.partitions),
                          takers(node))  # fmt: skip
        console.print(table)


def takers(node: types.Node) -> str:
    """Who took a departed node's partitions: "node-0 (43), node-1 (42), 1 not yet"."""
    parts = [f"{taker} ({count})" for taker, count in node.takers().items()]
    if node.untaken:
        parts.append(f"{node.untaken} not yet")
    return ", ".join(parts) or "-"


@click.command()
@connected
def executors(session: Session) -> None:
    """Every executor: its pools and task types, and per node its free slots (how many more
    runs it would start now) and runs in flight."""
    found = session.call(lambda client: client.executors())
    session.show(found, lambda console: show_executors(console, found, datetime.now(UTC)))


def show_executors(console: Console, found: Sequence[types.ExecutorInfo], now: datetime) -> None:
    """The executors as `wheel executors` prints them."""
    from rich import box
    from rich.table import Table

    if not found:
        console.print("no executor is registered or connected")
        return
    table = Table("executor", "pools", "task types", "node", "free slots", "in flight", "since",
                  box=box.SIMPLE)  # fmt: skip
    for executor in found:
        first = (executor.executor_id, ", ".join(executor.pools),
                 ", ".join(executor.task_types) or "any")  # fmt: skip
        if not executor.links:
            table.add_row(*first, _NO_LINKS, "", "", "")
        for index, link in enumerate(executor.links):
            since = _ago(now, link.connected_at)
            table.add_row(*(first if index == 0 else ("", "", "")), link.node_id,
                          free_slots(link), str(link.in_flight), since)  # fmt: skip
    console.print(table)


def free_slots(link: types.ExecutorLink) -> str:
    """A stream's credit in slots, by pool: "default 12 of 16 free". Credit counts the runs
    it may be handed ahead of their instant too (its hold, 50,000 by default), so the raw
    figure reads 50016 for 16 idle slots; without the executor's slots, the raw credit."""
    parts = []
    for pool in sorted(link.credit.keys() | link.slots.keys()):
        free = link.free_slots(pool)
        if free is None:
            parts.append(f"{pool} credit {link.credit.get(pool, 0):,}")
        else:
            parts.append(f"{pool} {free} of {link.slots[pool]} free")
    return ", ".join(parts) or "none"


def _state(state: str) -> Text:
    from rich.text import Text

    return Text(str(state), _STATE_STYLE.get(str(state), ""))


def _gone(now: datetime, then: datetime | None) -> str:
    if then is None:
        return "-"
    return f"{then.astimezone(UTC):%H:%M:%S} UTC, {_ago(now, then)}"


def _ago(now: datetime, then: datetime | None) -> str:
    if then is None:
        return ""
    return f"{readable(max(0.0, (now - then).total_seconds()))} ago"
