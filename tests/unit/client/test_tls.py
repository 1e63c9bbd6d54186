"""TLS: the client verifies the node with the CA it is given, and says so when it cannot."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.tls_material import TlsFiles, make_tls_files
from tests.unit.client.fake_api import FakeApi, serving
from tests.unit.client.helpers import TOKEN
from wheel.cli.jobs import jobs
from wheel.client import AsyncClient, Client
from wheel.errors import Unavailable
from wheel.tls import server_credentials


@pytest.fixture
def tls(tmp_path: Path) -> TlsFiles:
    return make_tls_files(tmp_path)


@pytest.fixture
def tls_address(api: FakeApi, tls: TlsFiles) -> Iterator[str]:
    with serving(api, server_credentials(str(tls.cert), str(tls.key))) as address:
        yield f"localhost:{address.rsplit(':', 1)[1]}"  # the name the certificate is for


async def test_tls_with_a_private_ca(tls_address: str, tls: TlsFiles, api: FakeApi) -> None:
    async with AsyncClient(tls_address, token=TOKEN, root_certificates=tls.ca) as client:
        assert len(await client.nodes()) == 1
    assert api.calls[0].metadata["authorization"] == f"Bearer {TOKEN}"


async def test_a_node_the_roots_do_not_vouch_for_is_unavailable(tls_address: str) -> None:
    async with AsyncClient(tls_address, tls=True, retries=0, timeout_s=5) as client:
        with pytest.raises(Unavailable):
            await client.nodes()


def test_plaintext_to_a_tls_node_is_unavailable(tls_address: str) -> None:
    with Client(tls_address, retries=0, timeout_s=5) as client, pytest.raises(Unavailable):
        client.nodes()


def test_the_cli_takes_the_ca(tls_address: str, tls: TlsFiles) -> None:
    args = ["list", "--endpoint", tls_address, "--tls-ca", str(tls.ca), "--output", "json"]
    result = CliRunner().invoke(jobs, args, env={"WHEEL_TOKEN": TOKEN})
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("{")
