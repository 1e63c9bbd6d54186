"""A real node serving the public API, two tenants with tokens, and raw gRPC stubs.

The stubs are grpcio's generated ones, not the SDK: these tests pin the
server's behaviour on the wire.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.integration.api.helpers import Api, serving
from tests.integration.nodes import NodeFactory
from wheel.store import Store


@pytest.fixture
async def api(store: Store, start_node: NodeFactory) -> AsyncIterator[Api]:
    async with serving(store, start_node) as served:
        yield served
