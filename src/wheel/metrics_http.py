"""The plain-HTTP port of nodes and executors: Prometheus's `/metrics`, and the probes
`/livez` and `/readyz`, as etcd serves them.

Plain HTTP on purpose: the kubelet's HTTP probes need no TLS, while the gRPC port may
speak only TLS. The server runs on threads of its own, so a scrape or a probe is answered
while the event loop is busy; liveness is what tells a loop that no longer turns.

    endpoint = serve(registry, "0.0.0.0:9100", probes)
    endpoint.address        # "0.0.0.0:9100" as bound
    endpoint.close()

    port = ProbePort.open(registry, "0.0.0.0:9100", probes)   # and the loop's beat with it
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from wheel.probes import Probes

_Start = Callable[[str, list[tuple[str, str]]], Any]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    """Probes come every few seconds: they are not logged to stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        return


@dataclass(slots=True)
class HttpEndpoint:
    """A started plain-HTTP port."""

    host: str
    port: int
    _server: WSGIServer

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _answer(start: _Start, failing: str | None) -> list[bytes]:
    status = "200 OK" if failing is None else "503 Service Unavailable"
    body = ("ok" if failing is None else failing) + "\n"
    start(status, [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", "no-store")])
    return [body.encode()]


def application(
    registry: CollectorRegistry, probes: Probes | None
) -> Callable[[dict[str, Any], _Start], Iterable[bytes]]:
    """`/livez` and `/readyz` from `probes` (200, or 503 with the reason as the body);
    every other path is the registry's exposition, as prometheus_client serves it."""
    metrics = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start: _Start) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if probes is not None and path in ("/livez", "/readyz"):
            failing = probes.liveness() if path == "/livez" else probes.readiness()
            return _answer(start, failing)
        return metrics(environ, start)  # type: ignore[no-any-return]

    return app


def serve(registry: CollectorRegistry, listen: str, probes: Probes | None = None) -> HttpEndpoint:
    """Serve on `host:port` (port 0 picks one; no host: every interface) until closed."""
    host, _, port = listen.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    kind = _Server6 if ":" in host else _Server
    server = make_server(
        host, int(port), application(registry, probes), kind, handler_class=_QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, name="http probes", daemon=True)
    thread.start()
    return HttpEndpoint(host, int(server.server_address[1]), server)


@dataclass(slots=True)
class ProbePort:
    """A process's plain-HTTP port and the task that keeps its liveness beating: opened
    first, before the process waits for anything, and closed last."""

    endpoint: HttpEndpoint
    _beat: asyncio.Task[None]

    @classmethod
    def open(
        cls,
        registry: CollectorRegistry,
        listen: str,
        probes: Probes,
        beat: Callable[[], Coroutine[Any, Any, None]] | None = None,
    ) -> ProbePort:
        """Serve `listen`, and run `beat` (default: `probes.beat_while_running`) until
        closed; it may also judge readiness as it beats."""
        endpoint = serve(registry, listen, probes)
        task = asyncio.create_task((beat or probes.beat_while_running)(), name="probes beat")
        return cls(endpoint, task)

    def close(self) -> None:
        self._beat.cancel()
        self.endpoint.close()
