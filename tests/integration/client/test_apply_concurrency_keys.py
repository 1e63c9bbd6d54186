"""`wheel jobs apply -f` with concurrency keys, against a real node: a file's key and limit
are the job's, an edit of them is an update, and a key without a limit writes nothing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from click.testing import CliRunner

from wheel.cli.jobs import jobs
from wheel.client import AsyncClient
from wheel.scheduler.node import SchedulerNode

CHARGE = '[jobs.charge]\ntask = "billing.charge"\ncron = "0 6 * * *"\n'


async def test_apply_files_carry_concurrency_keys(
    node: SchedulerNode, token: str, tmp_path: Path
) -> None:
    env = {"WHEEL_ENDPOINTS": node.address, "WHEEL_TOKEN": token, "COLUMNS": "200"}
    path = tmp_path / "jobs.toml"

    def run(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(jobs, ["apply", "-f", str(path), *args], env=env)
        return result.exit_code, result.output

    path.write_text(CHARGE + 'payload = \'{"customer": 42}\'\n'
                    'concurrency_key = "billing"\nconcurrency_limit = 1\n')  # fmt: skip
    code, out = await asyncio.to_thread(run)
    assert (code, "applied: 1 create" in out) == (0, True), out
    async with AsyncClient(node.address, token=token) as client:
        made = await client.get_job("charge")
        assert (made.policies.concurrency_key, made.policies.concurrency_limit) == ("billing", 1)

        path.write_text(CHARGE + 'payload = \'{"customer": 42}\'\n'
                        'concurrency_key_field = "customer"\nconcurrency_limit = 3\n')  # fmt: skip
        code, out = await asyncio.to_thread(run, "--output", "json")
        assert code == 0, out
        (change,) = json.loads(out)["changes"]
        assert (change["action"], sorted(change["fields"])) == ("update", [
            "policies.concurrency_key", "policies.concurrency_key_field",
            "policies.concurrency_limit",
        ])  # fmt: skip
        edited = await client.get_job("charge")
        assert (edited.policies.concurrency_key_field, edited.policies.concurrency_limit) == (
            "customer", 3
        )  # fmt: skip

        path.write_text(CHARGE + 'concurrency_key = "billing"\n')
        code, out = await asyncio.to_thread(run)
        assert code != 0
        assert "'--concurrency-limit': required with a concurrency key" in out
        assert (await client.get_job("charge")).version == edited.version, "nothing written"
