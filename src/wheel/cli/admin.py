"""`wheel tenants` and `wheel tokens`: the operator's commands, straight against Postgres.

Tenants and tokens are administration, not tenant work: these commands take
the database DSN (`WHEEL_POSTGRES_DSN`), never a tenant token. A token's
secret is printed once, at creation; only its SHA-256 is stored. The store (psycopg)
and rich are imported when a command runs, so `wheel tokens --help` loads neither.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from wheel import eventloop
from wheel.cli import options
from wheel.errors import WheelError
from wheel.model.ids import TenantId
from wheel.model.tenants import default_executor_ids

if TYPE_CHECKING:
    from wheel.store import Store

T = TypeVar("T")


def _with_store(dsn: str, work: Callable[[Store], Awaitable[T]]) -> T:
    from wheel.store import Store

    async def run() -> T:
        store = await Store.open(dsn, min_size=1, max_size=1)
        try:
            return await work(store)
        finally:
            await store.close()

    try:
        return eventloop.run(run())
    except WheelError as exc:
        raise click.ClickException(str(exc)) from exc


def _show(output: str, title: str, record: dict[str, Any]) -> None:
    if output in ("json", "jsonl"):
        click.echo(json.dumps(record, indent=2 if output == "json" else None, default=str))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("field", "value", title=title)
    for key, value in record.items():
        table.add_row(key, "-" if value is None else str(value))
    Console().print(table)


@click.group()
def tenants() -> None:
    """Create tenants (each sees only its own jobs and executions)."""


_HTTP_HOST = click.option(
    "--http-host",
    "http_hosts",
    multiple=True,
    help="A host its HTTP tasks may POST to (repeat it; '*.example.com': any name under "
    "one). None: any host the nodes' egress allows.",
)


@tenants.command("create")
@click.argument("name")
@click.option("--max-in-flight", type=int, default=1000, show_default=True,
              help="Most of the tenant's executions dispatched or running at once.")  # fmt: skip
@_HTTP_HOST
@options.dsn
@options.output
def create_tenant(
    name: str, max_in_flight: int, http_hosts: tuple[str, ...], dsn: str, output: str
) -> None:
    """Create a tenant named NAME."""
    tenant = _with_store(
        dsn, lambda s: s.tenants.create(name, max_in_flight=max_in_flight, http_hosts=http_hosts)
    )
    _show(output, "tenant created", dataclasses.asdict(tenant))


@tenants.command("set-http-hosts")
@click.argument("name")
@click.argument("hosts", nargs=-1)
@options.dsn
@options.output
def set_http_hosts(name: str, hosts: tuple[str, ...], dsn: str, output: str) -> None:
    """Choose the HOSTS tenant NAME's HTTP tasks may POST to (none: any host).

    Names, or '*.example.com' for any name under one. Jobs are checked when
    created or edited; every run is checked again when it is sent.
    """

    async def work(store: Store) -> Any:
        tenant = await store.tenants.by_name(name)
        return await store.tenants.set_http_hosts(tenant.id, hosts)

    _show(output, "tenant updated", dataclasses.asdict(_with_store(dsn, work)))


@click.group()
def tokens() -> None:
    """Create and revoke API tokens (the bearer token decides the tenant of every call)."""


@tokens.command("create")
@click.option(
    "--tenant", "tenant_id", type=click.UUID, help="The tenant the token calls the API as."
)
@click.option(
    "--executor",
    is_flag=True,
    help="An executor's token instead: it opens the executor stream (and is no tenant's).",
)
@click.option("--name", required=True, help="What the token is for (shown in listings).")
@click.option(
    "--executor-id",
    "executor_ids",
    multiple=True,
    metavar="GLOB",
    help="With --executor: an executor id (glob) its holder may connect as; repeatable. "
    "Default: NAME and NAME-* (a Deployment's pods under a token named after it).",
)
@options.dsn
@options.output
def create_token(
    tenant_id: uuid.UUID | None,
    executor: bool,
    name: str,
    executor_ids: tuple[str, ...],
    dsn: str,
    output: str,
) -> None:
    """Create a token; its secret is shown now and never again."""
    if executor == (tenant_id is not None):
        raise click.UsageError("give exactly one of --tenant ID and --executor")
    if executor_ids and not executor:
        raise click.UsageError("--executor-id is for executor tokens (--executor)")
    if tenant_id is not None:
        info, secret = _with_store(dsn, lambda s: s.tenants.create_token(TenantId(tenant_id), name))
        shown: dict[str, object] = {**dataclasses.asdict(info), "secret": secret}
    else:
        globs = executor_ids or default_executor_ids(name)
        info, secret = _with_store(
            dsn, lambda s: s.tenants.create_executor_token(name, executor_ids=globs)
        )
        shown = {**dataclasses.asdict(info), "executor_ids": list(globs), "secret": secret}
    _show(output, "token created (copy the secret now: it is not stored)", shown)


@tokens.command("revoke")
@click.argument("token_id", type=click.UUID)
@options.dsn
@options.output
def revoke_token(token_id: uuid.UUID, dsn: str, output: str) -> None:
    """Revoke a token by its id: calls carrying it are refused from now on."""
    info = _with_store(dsn, lambda s: s.tenants.revoke_token(token_id))
    _show(output, "token revoked", dataclasses.asdict(info))
