"""Serve a Prometheus registry over HTTP (/metrics), for nodes and executors alike."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, start_http_server


def serve(registry: CollectorRegistry, listen: str) -> tuple[str, int]:
    """Serve on `host:port` (port 0 picks one; no host: every interface); the bound address."""
    host, _, port = listen.rpartition(":")
    server, _thread = start_http_server(int(port), addr=host or "0.0.0.0", registry=registry)
    return host, int(server.server_address[1])
