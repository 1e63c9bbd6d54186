"""TLS material from files into gRPC credentials (read once, at start-up)."""

from __future__ import annotations

from pathlib import Path

import grpc


def server_credentials(cert_file: str, key_file: str) -> grpc.ServerCredentials:
    """A server's credentials from a PEM certificate chain and its private key."""
    return grpc.ssl_server_credentials(
        [(Path(key_file).read_bytes(), Path(cert_file).read_bytes())]
    )


def channel_credentials(ca_file: str = "") -> grpc.ChannelCredentials:
    """A client's credentials: the system's roots, or only the CA in `ca_file` when given."""
    roots = Path(ca_file).read_bytes() if ca_file else None
    return grpc.ssl_channel_credentials(root_certificates=roots)
