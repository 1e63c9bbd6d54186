"""Tenancy on a real node: the tenant is the bearer token's, and tenants never meet.

Every RPC of every service is listed in `CASES` with a request alice may
make about her own objects; `test_every_rpc_has_a_case` compares the table
with the services in the proto, so an RPC added without a case here fails
the suite. For each case bob sends alice's request with his own token and
must learn nothing and change nothing (NOT_FOUND for anything naming her
objects); every case sent without a live token is UNAUTHENTICATED and
writes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf.message import Message

from tests.integration.api.helpers import Api, serving
from tests.integration.api.world import (
    CASES,
    METHODS,
    MORE_OF_ALICES,
    BobCheck,
    alices_view,
    assert_every_rpc_unauthenticated,
    bad_credentials,
    create,
    fingerprint,
    invoke,
    not_found,
    world,
)
from tests.integration.nodes import NodeFactory
from wheel._proto.wheel.v1 import api_pb2 as apb
from wheel.store import Store

# -- what bob gets when he sends alice's request ----------------------------------------------


def test_every_rpc_has_a_case() -> None:
    assert sorted(CASES) == sorted(METHODS), "an RPC without a tenancy case (or a stale case)"
    assert {m for m, _ in MORE_OF_ALICES} <= set(METHODS)


async def test_bob_can_neither_see_nor_touch_alices_objects(api: Api) -> None:
    w = await world(api)
    view = await alices_view(api, w)
    written = await fingerprint(api.store)
    failures: list[str] = []
    checks: list[tuple[str, Message, BobCheck]] = [
        (method, case.request(w), case.bob) for method, case in CASES.items()
    ]
    checks += [(method, build(w), not_found) for method, build in MORE_OF_ALICES]
    for method, request, check in checks:
        try:
            await check(api, w, method, request)
        except AssertionError as exc:
            failures.append(f"{method} {request}: {exc}")
        if await alices_view(api, w) != view or await fingerprint(api.store) != written:
            failures.append(f"{method} {request}: changed alice's objects")
            view, written = await alices_view(api, w), await fingerprint(api.store)
    assert not failures, "\n".join(failures)


async def test_each_case_is_accepted_from_alice(api: Api) -> None:
    """The control: bob's refusals above are about whose objects they are, not the requests."""
    failures = []
    for method, case in CASES.items():
        w = await world(api)  # a fresh one each time: some cases change her objects
        try:
            await invoke(api.channel, method, case.request(w), api.alice.metadata)
        except grpc.aio.AioRpcError as error:
            failures.append(f"{method}: {error.code()} {error.details()}")
    assert not failures, "\n".join(failures)


async def test_every_rpc_refuses_a_call_without_a_live_token(api: Api) -> None:
    w = await world(api)
    view = await alices_view(api, w)
    failures = []
    for how, metadata in bad_credentials(api.alice.token).items():
        failures += [
            f"{how}: {f}" for f in await assert_every_rpc_unauthenticated(api, w, metadata)
        ]
    assert not failures, "\n".join(failures)
    assert await alices_view(api, w) == view


@pytest.fixture
async def uncached(store: Store, start_node: NodeFactory) -> AsyncIterator[Api]:
    """Like `api`, on a node that looks every token up on every call (revocation is immediate)."""
    async with serving(store, start_node, token_cache_s=0.0) as served:
        yield served


async def test_a_revoked_token_stops_working_for_every_rpc(uncached: Api) -> None:
    api = uncached
    w = await world(api)
    info, secret = await api.store.tenants.create_token(api.alice.tenant.id, "laptop")
    metadata = (("authorization", f"Bearer {secret}"),)
    seen = await invoke(
        api.channel, "/wheel.v1.Jobs/GetJob", apb.GetJobRequest(id=w.job.id), metadata
    )
    assert seen == await api.alice.jobs.GetJob(
        apb.GetJobRequest(id=w.job.id), metadata=api.alice.metadata
    )
    await api.store.tenants.revoke_token(info.id)
    failures = await assert_every_rpc_unauthenticated(api, w, metadata)
    assert not failures, "\n".join(failures)
    # Her other token is untouched by the revocation.
    await api.alice.jobs.GetJob(apb.GetJobRequest(id=w.job.id), metadata=api.alice.metadata)


async def test_the_tenant_is_the_tokens_whatever_the_request_carries(api: Api) -> None:
    a, b = api.alice, api.bob
    # Bob's create, with alice's tenant id smuggled in as an unknown field (number 99).
    smuggled = str(a.tenant.id).encode()
    extra = bytes([0x9A, 0x06, len(smuggled)]) + smuggled  # field 99, length-delimited
    raw = create("bob's, really").SerializeToString() + extra
    made = apb.CreateJobResponse.FromString(
        await api.channel.unary_unary("/wheel.v1.Jobs/CreateJob")(raw, metadata=b.metadata)
    )
    assert [
        j.id for j in (await b.jobs.ListJobs(apb.ListJobsRequest(), metadata=b.metadata)).jobs
    ] == [made.job.id]
    assert list((await a.jobs.ListJobs(apb.ListJobsRequest(), metadata=a.metadata)).jobs) == []
    async with api.store.pool.connection() as conn:
        cursor = await conn.execute("SELECT tenant_id FROM jobs WHERE id = %s", (made.job.id,))
        assert await cursor.fetchall() == [(b.tenant.id,)]


async def test_tokens_are_stored_as_their_sha256_only(api: Api) -> None:
    async with api.store.pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT t.tenant_id, t.token_sha256, row_to_json(t)::text FROM api_tokens t"
        )
        rows = await cursor.fetchall()
        cursor = await conn.execute("SELECT row_to_json(t)::text FROM tenants t")
        tenants = " ".join(row[0] for row in await cursor.fetchall())
    tokens = {api.alice.tenant.id: api.alice.token, api.bob.tenant.id: api.bob.token}
    assert sorted(tenant for tenant, _, _ in rows) == sorted(tokens)
    for tenant, digest, stored in rows:
        token = tokens[tenant]
        assert len(digest) == 32
        assert bytes(digest) == hashlib.sha256(token.encode()).digest()
        assert bytes(digest) != token.encode()
        for seen in (stored, tenants):
            assert token not in seen
            assert token.removeprefix("whl_") not in seen
