"""docs/api.md's curl tour, as written there, against a real node's HTTP/JSON API."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.nodes import NodeFactory
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

DOC = Path(__file__).resolve().parents[3] / "docs" / "api.md"


def tour() -> str:
    text = DOC.read_text()
    block = text.split("<!-- curl-tour -->", 1)[1].split("<!-- /curl-tour -->", 1)[0]
    return re.search(r"```sh\n(.*?)```", block, re.DOTALL).group(1)  # type: ignore[union-attr]


def run(script: str) -> list[dict[str, object]]:
    """Each curl's JSON answer in order, with its HTTP status as "http"."""
    curl = shutil.which("curl")
    assert curl, "curl is needed (.ci/run installs it)"
    # Each answer on a line of its own, with its HTTP status, so they can be told apart.
    script = script.replace("H=(-s ", 'H=(-s -w "\\n%{http_code}\\n" ')
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    answers = []
    for body, status in zip(lines[0::2], lines[1::2], strict=True):
        answers.append({**json.loads(body), "http": int(status)})
    return answers


@pytest.fixture
async def node(start_node: NodeFactory) -> SchedulerNode:
    started = await start_node(http_listen="127.0.0.1:0")
    await started.ready.wait()
    return started


async def test_the_curl_tour_works_as_written(node: SchedulerNode, store: Store) -> None:
    tenant = await store.tenants.create("curl-tour")
    _, token = await store.tenants.create_token(tenant.id, "tour")
    script = tour()
    assert "export WHEEL_HTTP=http://127.0.0.1:7979 WHEEL_TOKEN=whl_..." in script
    script = script.replace(
        "export WHEEL_HTTP=http://127.0.0.1:7979 WHEEL_TOKEN=whl_...",
        f"export WHEEL_HTTP=http://{node.dashboard_address} WHEEL_TOKEN={token}",
    )
    created, got, listed, preview, runs, bad = await asyncio.to_thread(run, script)
    assert created["http"] == 200
    job = created["job"]
    assert isinstance(job, dict)
    assert (job["name"], job["taskType"]) == ("curl-report", "reports.daily")
    assert len(created["nextRuns"]) == 5  # type: ignore[arg-type]
    assert (got["http"], got["id"]) == (200, job["id"])
    assert [j["name"] for j in listed["jobs"]] == ["curl-report"]  # type: ignore[union-attr]
    assert len(preview["nextRuns"]) == 3  # type: ignore[arg-type]
    assert runs["http"] == 200
    assert bad["http"] == 400
    assert bad["code"] == "invalid_argument"
    assert str(bad["message"]).startswith("schedule.cron.expression:")
    request, *_ = bad["details"]  # type: ignore[misc]
    assert request["type"] == "google.rpc.BadRequest"
    (violation,) = request["debug"]["fieldViolations"]
    assert violation["field"] == "schedule.cron.expression"


async def test_no_token_and_another_tenants_job_answer_as_over_grpc(
    node: SchedulerNode, store: Store
) -> None:
    base = f"http://{node.dashboard_address}"
    owner = await store.tenants.create("owner")
    _, mine = await store.tenants.create_token(owner.id, "mine")
    other = await store.tenants.create("other")
    _, theirs = await store.tenants.create_token(other.id, "theirs")
    create = ('{"name": "private", "taskType": "t", "schedule": '
              '{"cron": {"expression": "0 3 * * *"}}}')  # fmt: skip
    script = f"""
H=(-s -w "\\n%{{http_code}}\\n" -H "Content-Type: application/json")
curl "${{H[@]}}" {base}/wheel.v1.Jobs/ListJobs -d '{{}}'
curl "${{H[@]}}" -H "Authorization: Bearer {mine}" {base}/wheel.v1.Jobs/CreateJob -d '{create}'
curl "${{H[@]}}" -H "Authorization: Bearer {theirs}" {base}/wheel.v1.Jobs/GetJob \
  -d '{{"id": "private"}}'
curl "${{H[@]}}" -H "Authorization: Bearer {mine}" {base}/wheel.v1.Jobs/GetJob -d 'not json'
"""
    anonymous, created, stranger, garbage = await asyncio.to_thread(run, script)
    assert (anonymous["http"], anonymous["code"]) == (401, "unauthenticated")
    assert created["http"] == 200
    assert (stranger["http"], stranger["code"]) == (404, "not_found")
    assert (garbage["http"], garbage["code"]) == (400, "invalid_argument")
    assert str(garbage["message"]).startswith("request: not a GetJobRequest")
