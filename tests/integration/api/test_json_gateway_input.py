"""Malformed input on the HTTP surfaces: the JSON API and the dashboard answer a clear 4xx
for anything a hostile or careless client sends, never a 500, and write nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.nodes import NodeFactory
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                               max_size=4),
    max_leaves=12,
)  # fmt: skip
FIELDS = st.sampled_from(
    ["id", "name", "taskType", "schedule", "pageSize", "pageToken", "jobId", "statuses",
     "count", "job", "executionId", "url", "on"]
)  # fmt: skip


@pytest.fixture
async def node(start_node: NodeFactory) -> SchedulerNode:
    started = await start_node(http_listen="127.0.0.1:0")
    await started.ready.wait()
    return started


@pytest.fixture
async def http(node: SchedulerNode) -> AsyncIterator[aiohttp.ClientSession]:
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(f"http://{node.dashboard_address}", cookie_jar=jar) as s:
        yield s


async def test_random_json_to_every_method_is_refused_cleanly(
    node: SchedulerNode, store: Store, http: aiohttp.ClientSession
) -> None:
    tenant = await store.tenants.create("fuzz")
    _, token = await store.tenants.create_token(tenant.id, "fuzz")
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    from google.protobuf import descriptor_pool

    from wheel.api.server.rpc import SERVICE_NAMES

    pool = descriptor_pool.Default()
    paths = [
        f"/{service}/{method.name}"
        for service in SERVICE_NAMES
        for method in pool.FindServiceByName(service).methods
    ]
    seen: set[int] = set()
    cases: list[tuple[str, object]] = []

    # Hypothesis draws the cases (it runs no coroutine); the node answers them after.
    @settings(max_examples=150, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(path=st.sampled_from(paths), body=st.one_of(JSON, st.dictionaries(FIELDS, JSON)))
    def collect(path: str, body: object) -> None:
        cases.append((path, body))

    collect()
    for path, body in cases:
        async with http.post(path, data=json.dumps(body), headers=headers) as answer:
            text = await answer.text()
            seen.add(answer.status)
            assert answer.status < 500, (path, body, answer.status, text)
            if answer.status >= 400:
                error = json.loads(text)
                assert error["code"], text
                assert error["message"], text
    assert seen & {400, 404}  # garbage was refused, not everything accepted
    raw = [b"", b"{", b"\xff\xfe", b"[1,2", b'{"pageSize": 1e999}', b'{"pageSize": -1}']
    for body in raw:
        async with http.post("/wheel.v1.Jobs/ListJobs", data=body, headers=headers) as answer:
            assert answer.status in (200, 400), (body, answer.status, await answer.text())


async def test_the_dashboard_answers_bad_queries_with_a_page_not_a_500(
    store: Store, http: aiohttp.ClientSession
) -> None:
    tenant = await store.tenants.create("pages")
    _, token = await store.tenants.create_token(tenant.id, "pages")
    async with http.post("/signin", data={"token": token}) as signed:
        assert signed.url.path == "/jobs"
    for path, status in [
        ("/runs?after=yesterday", 400), ("/runs?status=sleeping", 400),
        ("/runs?job=%00", 400), ("/runs/not-an-execution-id", 400),
        ("/jobs/00000000-0000-0000-0000-000000000000", 404), ("/jobs?page=garbage", 400),
        ("/queue?retried=<b>x</b>", 200),
    ]:  # fmt: skip
        async with http.get(path) as answer:
            text = await answer.text()
            assert answer.status == status, (path, answer.status, text[:300])
            assert "Traceback" not in text
            assert "<b>x</b>" not in text
