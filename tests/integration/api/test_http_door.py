"""The node's HTTP door: the JSON API and the dashboard share `--http-listen`, each behind its
own checks. An API call from another site's page is the API's to answer (bearer token,
Connect's JSON), CORS is off unless the node lists origins, and the dashboard still
refuses another site's forms."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator

import aiohttp
import pytest

from tests.integration.nodes import NodeFactory
from wheel.api.server.rpc import MAX_REQUEST_BYTES
from wheel.dashboard.app import MAX_FORM_BYTES
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store

LIST_JOBS = "/wheel.v1.Jobs/ListJobs"
CONSOLE = "https://console.example.com"
ELSEWHERE = "https://elsewhere.example"
PREFLIGHT = {
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization,content-type,connect-protocol-version",
}


def cors_headers(answer: aiohttp.ClientResponse) -> dict[str, str]:
    return {k: v for k, v in answer.headers.items() if k.lower().startswith("access-control-")}


async def start(start_node: NodeFactory, **overrides: str) -> SchedulerNode:
    node = await start_node(http_listen="127.0.0.1:0", **overrides)
    await node.ready.wait()
    return node


@pytest.fixture
async def token(store: Store) -> str:
    tenant = await store.tenants.create("door")
    return (await store.tenants.create_token(tenant.id, "door"))[1]


@pytest.fixture
async def http(start_node: NodeFactory) -> AsyncIterator[aiohttp.ClientSession]:
    node = await start(start_node)
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(f"http://{node.dashboard_address}", cookie_jar=jar) as s:
        yield s


def api_headers(token: str, **more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json", **more}


@pytest.mark.parametrize(
    "site", [{"Origin": ELSEWHERE}, {"Sec-Fetch-Site": "cross-site"}, {"Origin": "null"}]
)
async def test_an_api_call_from_another_site_gets_the_apis_json_answer(
    http: aiohttp.ClientSession, token: str, site: dict[str, str]
) -> None:
    async with http.post(LIST_JOBS, data="{}", headers=api_headers(token, **site)) as answer:
        assert answer.status == 200, await answer.text()
        assert answer.content_type == "application/json"
        assert json.loads(await answer.text()) == {}  # no jobs yet
        assert cors_headers(answer) == {}, "CORS is off: the page cannot read this answer"
    refused = {"Content-Type": "application/json", **site}
    async with http.post(LIST_JOBS, data="{}", headers=refused) as answer:
        assert answer.status == 401
        assert (await answer.json())["code"] == "unauthenticated"


async def test_cors_is_off_by_default(http: aiohttp.ClientSession) -> None:
    async with http.options(LIST_JOBS, headers={"Origin": CONSOLE, **PREFLIGHT}) as answer:
        assert answer.status >= 400, "no preflight is granted"
        assert cors_headers(answer) == {}


async def test_the_dashboard_still_refuses_another_sites_forms(
    http: aiohttp.ClientSession, token: str
) -> None:
    async with http.post("/signin", data={"token": token}, headers={"Origin": ELSEWHERE}) as a:
        assert a.status == 403
        assert "A form from another site cannot act here." in await a.text()
    async with http.post("/signin", data={"token": token}) as signed:
        assert signed.url.path == "/jobs"
    for site in ({"Origin": ELSEWHERE}, {"Sec-Fetch-Site": "cross-site"}):
        async with http.post("/signout", data={"csrf": "x"}, headers=site) as answer:
            assert answer.status == 403
            assert "A form from another site cannot act here." in await answer.text()
    async with http.get("/jobs", allow_redirects=False) as still:
        assert still.status == 200, "still signed in: the forged sign-out changed nothing"


async def test_each_room_reads_bodies_up_to_its_own_limit(
    http: aiohttp.ClientSession, token: str
) -> None:
    bigger_than_a_form = json.dumps({"pageToken": "x" * (2 * MAX_FORM_BYTES)})
    async with http.post(LIST_JOBS, data=bigger_than_a_form, headers=api_headers(token)) as a:
        assert (await a.json())["code"] == "invalid_argument"  # read, and the token refused
    too_big = b'{"pageToken": "' + b"x" * MAX_REQUEST_BYTES + b'"}'
    async with http.post(LIST_JOBS, data=io.BytesIO(too_big), headers=api_headers(token)) as answer:
        assert (await answer.json())["code"] == "resource_exhausted"
    async with http.post("/signin", data={"token": "x" * (2 * MAX_FORM_BYTES)}) as answer:
        assert answer.status == 413


async def test_listed_origins_may_call_the_api_from_a_browser(
    start_node: NodeFactory, token: str
) -> None:
    node = await start(start_node, cors_origins=f"{CONSOLE}, http://localhost:5173")
    async with aiohttp.ClientSession(f"http://{node.dashboard_address}") as http:
        async with http.options(LIST_JOBS, headers={"Origin": CONSOLE, **PREFLIGHT}) as answer:
            assert answer.status == 204
            granted = cors_headers(answer)
            assert granted["Access-Control-Allow-Origin"] == CONSOLE
            assert granted["Access-Control-Allow-Methods"] == "POST"
            allowed = {
                h.strip().lower() for h in granted["Access-Control-Allow-Headers"].split(",")
            }
            assert {"authorization", "content-type", "connect-protocol-version",
                    "connect-timeout-ms"} <= allowed  # fmt: skip
            assert "Access-Control-Allow-Credentials" not in granted
            assert "Origin" in answer.headers.getall("Vary")
        headers = api_headers(token, Origin=CONSOLE)
        async with http.post(LIST_JOBS, data="{}", headers=headers) as answer:
            assert answer.status == 200
            assert cors_headers(answer) == {"Access-Control-Allow-Origin": CONSOLE}
            assert "Origin" in answer.headers.getall("Vary")
        async with http.post(LIST_JOBS, data="{", headers=headers) as answer:  # errors too
            assert answer.status == 400
            assert cors_headers(answer) == {"Access-Control-Allow-Origin": CONSOLE}

        # Another origin: answered as ever, but nothing lets its page read the answer.
        async with http.options(LIST_JOBS, headers={"Origin": ELSEWHERE, **PREFLIGHT}) as a:
            assert a.status == 403
            assert cors_headers(a) == {}
        async with http.post(
            LIST_JOBS, data="{}", headers=api_headers(token, Origin=ELSEWHERE)
        ) as a:
            assert a.status == 200
            assert cors_headers(a) == {}
        # The dashboard's pages are never opened to other sites.
        async with http.get("/signin", headers={"Origin": CONSOLE}) as answer:
            assert answer.status == 200
            assert cors_headers(answer) == {}
