"""The gRPC server a node serves: the executor stream, the public API, health, reflection.

    served = await serve(config, engine=engine, api_store=api_store, etcd=etcd, ...)
    served.address          # host:port as bound (or --advertise)
    await served.health.set("", health_pb2.HealthCheckResponse.SERVING)

The public API's calls each authenticate with a bearer token; the stream
authenticates executors with theirs. Health starts NOT_SERVING: the node
sets SERVING once joined, loaded and on a sane clock (what a readiness probe
asks). Reflection lets grpcurl and grpc_cli find every service.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from aiohttp import web
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from wheel.api.server.auth import Authenticator, ExecutorAuthenticator
from wheel.api.server.calendars import CalendarsApi
from wheel.api.server.cluster import ClusterApi
from wheel.api.server.cors import Cors
from wheel.api.server.executions import ExecutionsApi
from wheel.api.server.explain import Explainer
from wheel.api.server.jobs import JobsApi
from wheel.api.server.json_gateway import JsonGateway
from wheel.api.server.notifications import NotificationsApi
from wheel.api.server.rpc import MAX_REQUEST_BYTES, SERVICE_NAMES, add_services
from wheel.api.server.served import ServedView
from wheel.coordinator.cluster_view import ClusterView
from wheel.coordinator.etcd import Etcd
from wheel.coordinator.layout import Layout
from wheel.dashboard.app import DashboardSettings
from wheel.keepalive import SERVER_KEEPALIVE
from wheel.notify.egress import EgressPolicy
from wheel.scheduler.config import SchedulerConfig
from wheel.scheduler.engine import Engine
from wheel.scheduler.http import start_http
from wheel.scheduler.stream import SERVICE, ExecutorStreamService
from wheel.store import Store
from wheel.tls import server_credentials

OPTIONS: tuple[tuple[str, int], ...] = (
    *SERVER_KEEPALIVE,
    # gRPC sets SO_REUSEPORT by default: a second node on the same --listen
    # would bind silently and share the port. Off, it fails to start instead.
    ("grpc.so_reuseport", 0),
    # A CreateJobs batch may be larger than gRPC's default 4 MiB.
    ("grpc.max_receive_message_length", MAX_REQUEST_BYTES),
)


@dataclass(slots=True)
class Served:
    """A started server and what the node changes on it later."""

    server: grpc.aio.Server
    health: health.aio.HealthServicer
    address: str
    """Where executors and clients reach this node."""
    cluster: ClusterView
    """The cluster map the node serves executors (WatchCluster)."""
    http: web.AppRunner | None = None
    dashboard_address: str = ""
    """Where the web dashboard and the JSON API listen ("" when they are off)."""

    async def close(self) -> None:
        if self.http is not None:
            await self.http.cleanup()
        await self.server.stop(1.0)
        await self.cluster.stop()


async def serve(
    config: SchedulerConfig,
    *,
    engine: Engine,
    api_store: Store,
    etcd: Etcd,
    layout: Layout,
    partitions: int,
) -> Served:
    """Build the server with every service, bind `config.listen` (TLS when configured)
    and start it."""
    server = grpc.aio.server(options=list(OPTIONS))
    cluster = ClusterView(etcd, layout)
    await cluster.start()
    stream = ExecutorStreamService(
        engine,
        config.node_id,
        ExecutorAuthenticator(api_store.tenants, ttl_s=config.token_cache_s),
        cluster,
    )
    server.add_generic_rpc_handlers([stream.handler()])
    served = ServedView(etcd, layout)
    explainer = Explainer(api_store, etcd, layout, served=served)
    egress = EgressPolicy.of(config.denied_networks)  # the senders' own: refused when made
    api_services = [
        JobsApi(
            api_store,
            partitions=partitions,
            retention_days=config.retention_days,
            served=served,
            handoff=engine.add_created,
            egress=egress,
        ).service(),
        ExecutionsApi(api_store, explainer).service(),
        ClusterApi(etcd, layout, served).service(),
        NotificationsApi(api_store, egress=egress).service(),
        CalendarsApi(api_store).service(),
    ]
    authenticator = Authenticator(api_store.tenants, ttl_s=config.token_cache_s)
    add_services(server, authenticator, api_services)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    await health_servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    reflection.enable_server_reflection(
        [
            SERVICE,
            *SERVICE_NAMES,
            health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
            reflection.SERVICE_NAME,
        ],
        server,
    )
    if config.tls_cert_file:
        credentials = server_credentials(config.tls_cert_file, config.tls_key_file)
        port = server.add_secure_port(config.listen, credentials)
    else:
        port = server.add_insecure_port(config.listen)
    await server.start()
    host = config.listen.rsplit(":", 1)[0]
    running = Served(server, health_servicer, config.advertise or f"{host}:{port}", cluster)
    if config.http_listen:
        tls = bool(config.tls_cert_file)
        # The dashboard is one more client of this node's API, on the loopback (by the
        # certificate's name, with TLS: a node's certificate names localhost for this).
        own = f"{'localhost' if tls else '127.0.0.1'}:{port}"
        settings = DashboardSettings(
            own, api_tls=tls, api_ca_file=config.tls_cert_file or None,
            secure_cookie=config.secure_cookie,
        )  # fmt: skip
        gateway = JsonGateway(authenticator, api_services, Cors(config.allowed_origins))
        running.http, running.dashboard_address = await start_http(
            config.http_listen, gateway, settings
        )
    return running
