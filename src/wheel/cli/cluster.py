"""`wheel nodes` and `wheel executors`: the cluster at a glance, through the public API.

    wheel nodes                # each node, where it listens, how many partitions it holds,
                               # and whether the jobs it acknowledges survive its Postgres
    wheel executors            # pools, task types, and per node: credit, in flight, since

They take the API's connection options (`--endpoint`, `--token`, ...). An
executor connected to no node is listed with the reasons that happens.
"""

from __future__ import annotations

from datetime import UTC, datetime

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from wheel.cli.jobs_options import Session, connected
from wheel.durations import readable

_NO_LINKS = "connected to no node: check its --cluster, its token, and that nodes are up"


@click.command()
@connected
def nodes(session: Session) -> None:
    """Every scheduler node: where it listens, how many partitions it holds, and whether a
    job it acknowledges survives the loss of its Postgres primary (a synchronous standby)."""
    found = session.call(lambda client: client.nodes())

    def human(console: Console) -> None:
        if not found:
            console.print("no scheduler node is in this cluster")
            return
        table = Table("node", "address", "partitions", "acknowledged jobs", box=box.SIMPLE)
        for node in found:
            durable = Text("at risk", "red") if node.durability else "on a synchronous standby"
            table.add_row(node.node_id, node.address, str(node.partitions), durable)
        console.print(table)
        for reason in sorted({node.durability for node in found if node.durability}):
            console.print(Text.assemble(("warning: ", "red"), reason))

    session.show(found, human)


@click.command()
@connected
def executors(session: Session) -> None:
    """Every executor: its pools and task types, and per node its credit and runs in flight."""
    found = session.call(lambda client: client.executors())
    now = datetime.now(UTC)

    def human(console: Console) -> None:
        if not found:
            console.print("no executor is registered or connected")
            return
        table = Table("executor", "pools", "task types", "node", "credit", "in flight", "since",
                      box=box.SIMPLE)  # fmt: skip
        for executor in found:
            first = (executor.executor_id, ", ".join(executor.pools),
                     ", ".join(executor.task_types) or "any")  # fmt: skip
            if not executor.links:
                table.add_row(*first, _NO_LINKS, "", "", "")
            for index, link in enumerate(executor.links):
                credit = ", ".join(f"{pool} {n}" for pool, n in link.credit.items()) or "0"
                since = _ago(now, link.connected_at)
                table.add_row(*(first if index == 0 else ("", "", "")), link.node_id, credit,
                              str(link.in_flight), since)  # fmt: skip
        console.print(table)

    session.show(found, human)


def _ago(now: datetime, then: datetime | None) -> str:
    if then is None:
        return ""
    return f"{readable(max(0.0, (now - then).total_seconds()))} ago"
