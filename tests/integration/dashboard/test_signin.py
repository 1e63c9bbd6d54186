"""The sign-in of a real node's dashboard, over HTTP without a browser: where it sends the
browser afterwards, and the cookie it sets behind a proxy that ends TLS."""

from __future__ import annotations

import uuid
from http.cookies import SimpleCookie

import aiohttp
import pytest

from tests.integration.nodes import NodeFactory
from wheel.scheduler.node import SchedulerNode
from wheel.store import Store


@pytest.fixture
async def node(start_node: NodeFactory) -> SchedulerNode:
    # Behind an Ingress: browsers use https://wheel.example.com, the node serves plain HTTP.
    started = await start_node(
        http_listen="127.0.0.1:0", http_public_url="https://wheel.example.com"
    )
    await started.ready.wait()
    return started


async def tenant_token(store: Store) -> str:
    tenant = await store.tenants.create(f"signin-{uuid.uuid4().hex[:6]}")
    return (await store.tenants.create_token(tenant.id, "dashboard"))[1]


REDIRECTS = [
    ("/\t/evil.example", "/jobs"),  # what ?next=/%09/evil.example arrives as
    ("/\r\n/evil.example", "/jobs"),
    ("//evil.example", "/jobs"),
    ("/\\evil.example", "/jobs"),
    ("https://evil.example/", "/jobs"),
    ("/runs?status=dead", "/runs?status=dead"),
]


async def test_signing_in_goes_to_a_path_of_this_site_with_a_secure_lax_cookie(
    node: SchedulerNode, store: Store
) -> None:
    base = f"http://{node.dashboard_address}"
    token = await tenant_token(store)
    async with aiohttp.ClientSession() as http:
        for given, location in REDIRECTS:
            async with http.get(f"{base}/signin", params={"next": given}) as page:
                assert page.status == 200
                assert f'value="{location}"' in await page.text(), given
            async with http.post(
                f"{base}/signin", data={"token": token, "next": given}, allow_redirects=False
            ) as answer:
                assert answer.status == 303
                assert answer.headers["Location"] == location, given
                (set_cookie,) = answer.headers.getall("Set-Cookie")
            cookie = SimpleCookie(set_cookie)["wheel_session"]
            assert (cookie["samesite"], cookie["path"]) == ("Lax", "/")
            assert cookie["httponly"], set_cookie
            assert cookie["secure"], set_cookie


async def test_a_forwarded_header_does_not_make_the_cookie_secure(
    start_node: NodeFactory, store: Store
) -> None:
    """Without a public https URL the cookie is not Secure, whatever a client claims."""
    node = await start_node("node-plain", http_listen="127.0.0.1:0")
    await node.ready.wait()
    token = await tenant_token(store)
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"http://{node.dashboard_address}/signin",
            data={"token": token, "next": "/jobs"},
            headers={"X-Forwarded-Proto": "https"},
            allow_redirects=False,
        ) as answer,
    ):
        assert answer.status == 303
        (set_cookie,) = answer.headers.getall("Set-Cookie")
    cookie = SimpleCookie(set_cookie)["wheel_session"]
    assert cookie["samesite"] == "Lax"
    assert not cookie["secure"]
