"""The node's HTTP door (`--http-listen`): one aiohttp application with two rooms.

    runner, address = await start_http("0.0.0.0:7979", gateway, dashboard_settings)
    ...
    await runner.cleanup()

The public API over HTTP/JSON (`wheel.api.server.json_gateway`: `POST /wheel.v1.*`,
bearer tokens, Connect's JSON errors, CORS only for the origins the node lists) and the
web dashboard (`wheel.dashboard`: pages, a session cookie, CSRF tokens and the Origin
check) each add their own routes with their own checks and size limit. The application
has no middleware: an API call never enters dashboard code, and a page never passes
through the gateway.
"""

from __future__ import annotations

from aiohttp import web

from wheel.api.server.json_gateway import JsonGateway
from wheel.dashboard import app as dashboard
from wheel.dashboard.app import DashboardSettings


def make_app(gateway: JsonGateway, settings: DashboardSettings) -> web.Application:
    """The JSON API's routes and the dashboard's, side by side."""
    # Each room reads bodies up to its own limit; this is for routes that add none.
    app = web.Application(client_max_size=dashboard.MAX_FORM_BYTES)
    gateway.add_routes(app)
    dashboard.add_routes(app, settings)
    return app


async def start_http(
    listen: str, gateway: JsonGateway, settings: DashboardSettings
) -> tuple[web.AppRunner, str]:
    """Serve the application on `listen` (host:port; port 0 picks one): the runner and the
    bound address."""
    host, _, port = listen.rpartition(":")
    runner = web.AppRunner(make_app(gateway, settings), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host or "127.0.0.1", int(port))
    await site.start()
    bound = runner.addresses[0]
    return runner, f"{bound[0]}:{bound[1]}"
