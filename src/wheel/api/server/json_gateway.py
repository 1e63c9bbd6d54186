"""The public API over HTTP/JSON, in the Connect protocol's unary form.

    curl -H "Authorization: Bearer $WHEEL_TOKEN" -H "Content-Type: application/json" \\
         http://127.0.0.1:7979/wheel.v1.Jobs/ListJobs -d '{}'

Every method of every public service answers `POST /<service>/<method>` with a
JSON request body (protobuf's JSON mapping: lowerCamelCase or the proto's own
field names) and a JSON answer, on the node's `--http-listen` port. It runs the
very handlers the gRPC server does (`rpc.answer`): the same authentication,
validation and tenant scoping. Errors are Connect's JSON error body, with the
HTTP status Connect assigns to the code and the same google.rpc error details
gRPC clients get (`BadRequest` field violations for INVALID_ARGUMENT):

    {"code": "invalid_argument", "message": "schedule.cron.expression: ...",
     "details": [{"type": "google.rpc.BadRequest", "value": "<base64>", "debug": {...}}]}

The Connect protocol is small and stable; following it means Connect clients in
Go and TypeScript (and plain curl) can call wheel with no gRPC in between. Its
Python server library would bring an ASGI stack beside the aiohttp one the node
already runs, for the dozen lines of framing written here.

The gateway's routes take requests up to `MAX_REQUEST_BYTES` (a CreateJobs batch, as on
gRPC), whatever else the application they are added to serves; a larger one is answered
`resource_exhausted`. Other sites' pages may read its answers only when the node lists
their origins (`Cors`; off by default).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence

import grpc
from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import Message

from wheel.api.server.auth import Authenticator
from wheel.api.server.cors import Cors
from wheel.api.server.rpc import MAX_REQUEST_BYTES, Protocol, Rpc, Service, answer
from wheel.api.status import Status
from wheel.errors import InvalidArgument

# Connect's names and HTTP statuses for each code (connectrpc.com/docs/protocol).
_CONNECT: dict[grpc.StatusCode, tuple[str, int]] = {
    grpc.StatusCode.CANCELLED: ("canceled", 499),
    grpc.StatusCode.UNKNOWN: ("unknown", 500),
    grpc.StatusCode.INVALID_ARGUMENT: ("invalid_argument", 400),
    grpc.StatusCode.DEADLINE_EXCEEDED: ("deadline_exceeded", 504),
    grpc.StatusCode.NOT_FOUND: ("not_found", 404),
    grpc.StatusCode.ALREADY_EXISTS: ("already_exists", 409),
    grpc.StatusCode.PERMISSION_DENIED: ("permission_denied", 403),
    grpc.StatusCode.RESOURCE_EXHAUSTED: ("resource_exhausted", 429),
    grpc.StatusCode.FAILED_PRECONDITION: ("failed_precondition", 400),
    grpc.StatusCode.ABORTED: ("aborted", 409),
    grpc.StatusCode.OUT_OF_RANGE: ("out_of_range", 400),
    grpc.StatusCode.UNIMPLEMENTED: ("unimplemented", 501),
    grpc.StatusCode.INTERNAL: ("internal", 500),
    grpc.StatusCode.UNAVAILABLE: ("unavailable", 503),
    grpc.StatusCode.DATA_LOSS: ("data_loss", 500),
    grpc.StatusCode.UNAUTHENTICATED: ("unauthenticated", 401),
}


CONNECT = Protocol("connectrpc", {code: name for code, (name, _) in _CONNECT.items()})
"""Calls over this gateway, as their spans name them (Connect's codes)."""


def error_body(status: Status) -> tuple[int, bytes]:
    """Connect's JSON error for a status, and its HTTP status."""
    name, http = _CONNECT.get(status.code, ("unknown", 500))
    details = []
    for detail in status.details:
        details.append(
            {
                "type": detail.DESCRIPTOR.full_name,
                "value": base64.b64encode(detail.SerializeToString()).decode().rstrip("="),
                "debug": json_format.MessageToDict(detail),
            }
        )
    body = {"code": name, "message": status.message, "details": details}
    return http, json.dumps(body).encode()


def _error(status: Status) -> web.Response:
    http, body = error_body(status)
    return web.Response(status=http, body=body, content_type="application/json")


class JsonGateway:
    def __init__(
        self, authenticator: Authenticator, services: Sequence[Service], cors: Cors | None = None
    ) -> None:
        self._authenticator = authenticator
        self._cors = cors or Cors(())
        self._rpcs: dict[str, Rpc] = {
            f"/{service.full_name}/{rpc.name}": rpc for service in services for rpc in service.rpcs
        }

    @property
    def paths(self) -> list[str]:
        return sorted(self._rpcs)

    def add_routes(self, app: web.Application) -> None:
        """A POST route per method (and, with CORS on, its preflight)."""
        for path in self._rpcs:
            app.router.add_post(path, self.handle)
            if self._cors.enabled:
                app.router.add_route("OPTIONS", path, self._cors.preflight)

    async def handle(self, request: web.Request) -> web.Response:
        response = await self._answer(request.clone(client_max_size=MAX_REQUEST_BYTES))
        self._cors.allow(request, response)
        return response

    async def _answer(self, request: web.Request) -> web.Response:
        rpc = self._rpcs[request.path]
        if request.content_type != "application/json":
            return _error(
                Status(grpc.StatusCode.INVALID_ARGUMENT,
                       "Content-Type must be application/json (Connect's unary JSON)", ())
            )  # fmt: skip
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _error(
                Status(grpc.StatusCode.RESOURCE_EXHAUSTED,
                       f"the request is larger than {MAX_REQUEST_BYTES} bytes", ())
            )  # fmt: skip
        metadata = (("authorization", request.headers.get("Authorization", "")),)

        def parse() -> Message:
            message = rpc.request()
            try:
                json_format.Parse(raw or b"{}", message)
            except (json_format.ParseError, UnicodeDecodeError, ValueError, RecursionError) as exc:
                name = rpc.request.DESCRIPTOR.name
                raise InvalidArgument("request", f"not a {name}: {exc}") from None
            return message

        answered = await answer(
            request.path, rpc, self._authenticator, metadata, parse,
            protocol=CONNECT, headers=request.headers.items(),
        )  # fmt: skip
        if isinstance(answered, Status):
            return _error(answered)
        text = json_format.MessageToJson(answered, indent=None)
        return web.Response(text=text, content_type="application/json")
