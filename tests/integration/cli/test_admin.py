"""`wheel tenants` and `wheel tokens` against a real database: create, authenticate, revoke."""

from __future__ import annotations

import json
import uuid

from click.testing import CliRunner

from wheel import eventloop
from wheel.cli.main import cli
from wheel.model.ids import TenantId
from wheel.store import Store


def authenticate(dsn: str, secret: str) -> TenantId | None:
    async def check() -> TenantId | None:
        store = await Store.open(dsn, min_size=1, max_size=1)
        try:
            return await store.tenants.authenticate(secret)
        finally:
            await store.close()

    return eventloop.run(check())


def run(dsn: str, *args: str) -> dict[str, object]:
    result = CliRunner().invoke(cli, [*args, "--output", "json"], env={"WHEEL_POSTGRES_DSN": dsn})
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert isinstance(document, dict)
    return document


def test_a_token_authenticates_its_tenant_until_revoked(database_dsn: str) -> None:
    tenant = run(database_dsn, "tenants", "create", "acme", "--max-in-flight", "50")
    assert tenant["name"] == "acme"
    assert tenant["max_in_flight"] == 50
    token = run(database_dsn, "tokens", "create", "--tenant", str(tenant["id"]), "--name", "ci")
    secret = str(token["secret"])
    assert secret.startswith("whl_")
    assert authenticate(database_dsn, secret) == uuid.UUID(str(tenant["id"]))
    revoked = run(database_dsn, "tokens", "revoke", str(token["id"]))
    assert revoked["revoked_at"] is not None
    assert authenticate(database_dsn, secret) is None


def test_errors_are_named_and_write_nothing(database_dsn: str) -> None:
    run(database_dsn, "tenants", "create", "acme")
    again = CliRunner().invoke(
        cli, ["tenants", "create", "acme"], env={"WHEEL_POSTGRES_DSN": database_dsn}
    )
    assert again.exit_code == 1
    assert "acme" in again.output
    unknown = CliRunner().invoke(
        cli,
        ["tokens", "create", "--tenant", str(uuid.uuid4()), "--name", "x"],
        env={"WHEEL_POSTGRES_DSN": database_dsn},
    )
    assert unknown.exit_code == 1
    assert "tenant" in unknown.output


def test_an_executor_token_is_no_tenants(database_dsn: str) -> None:
    token = run(database_dsn, "tokens", "create", "--executor", "--name", "pool-a")
    assert token["tenant_id"] is None
    secret = str(token["secret"])
    assert authenticate(database_dsn, secret) is None, "it cannot call the API as anyone"

    async def executor(check: str) -> bool:
        store = await Store.open(database_dsn, min_size=1, max_size=1)
        try:
            return await store.tenants.authenticate_executor(check)
        finally:
            await store.close()

    assert eventloop.run(executor(secret))
    both = CliRunner().invoke(
        cli,
        ["tokens", "create", "--executor", "--tenant", str(uuid.uuid4()), "--name", "x"],
        env={"WHEEL_POSTGRES_DSN": database_dsn},
    )
    assert both.exit_code == 2
    assert "exactly one of --tenant ID and --executor" in both.output


def test_an_operator_chooses_the_hosts_a_tenants_http_tasks_may_reach(database_dsn: str) -> None:
    tenant = run(database_dsn, "tenants", "create", "acme", "--http-host", "Hooks.Example.com",
                 "--http-host", "*.internal.example.com")  # fmt: skip
    assert tenant["http_hosts"] == ["hooks.example.com", "*.internal.example.com"]
    changed = run(database_dsn, "tenants", "set-http-hosts", "acme", "api.example.com")
    assert changed["http_hosts"] == ["api.example.com"]
    assert run(database_dsn, "tenants", "set-http-hosts", "acme")["http_hosts"] == []
    bad = CliRunner().invoke(
        cli, ["tenants", "set-http-hosts", "acme", "not a host"],
        env={"WHEEL_POSTGRES_DSN": database_dsn},
    )  # fmt: skip
    assert bad.exit_code == 1
    assert "http_hosts[0]: 'not a host' is not a host name or pattern" in bad.output
    missing = CliRunner().invoke(
        cli, ["tenants", "set-http-hosts", "nobody", "a.example.com"],
        env={"WHEEL_POSTGRES_DSN": database_dsn},
    )  # fmt: skip
    assert missing.exit_code == 1
    assert "nobody" in missing.output
