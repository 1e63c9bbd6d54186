"""CORS for the JSON API: which other sites' pages may call it from a browser.

    cors = Cors(("https://console.example.com",))   # the node's `cors_origins`
    cors.preflight(request)                          # the OPTIONS answer
    cors.allow(request, response)                    # on every answer of the gateway

Off by default (`Cors(())`): no answer carries an Access-Control-* header and no
preflight is granted, so a page on another site cannot read what the API says, and
cannot send it `Authorization` or a JSON body at all (both need a preflight). The API
needs no CORS to be safe from cross-site requests: it authenticates by a bearer token
the caller puts in a header, never by a cookie, so another site's page has nothing the
browser would attach for it. CORS is opened only for a browser app on another origin
that holds its own token (a console calling wheel with Connect's TypeScript client),
and then only to the origins named, compared exactly as browsers send them.

Answers never say `*` and never Access-Control-Allow-Credentials: the token is a
header the page sets itself, not a credential the browser adds, so no cookie or client
certificate is ever sent cross-site on the page's behalf.

Written here rather than taken from aiohttp-cors: what is needed is one fixed policy
for POST-only routes (an exact-origin list, a fixed set of request headers), about 30
lines, and that library configures CORS resource by resource through its own wrappers
and has gone years between releases.
"""

from __future__ import annotations

from aiohttp import web

METHODS = "POST"
HEADERS = ", ".join(
    ("Authorization", "Content-Type", "Connect-Protocol-Version", "Connect-Timeout-Ms",
     "X-User-Agent", "Traceparent", "Tracestate")
)  # fmt: skip
"""What a Connect client in a browser sends besides the body (and the trace context the
gateway reads)."""
MAX_AGE_S = 600
"""How long a browser may reuse a preflight's answer."""


class Cors:
    def __init__(self, origins: tuple[str, ...]) -> None:
        """`origins`: scheme://host[:port] each, as browsers send them (the node's config
        checks and normalises them); empty: CORS off."""
        self.origins = frozenset(origins)

    @property
    def enabled(self) -> bool:
        return bool(self.origins)

    def _allowed(self, request: web.Request) -> str | None:
        origin = request.headers.get("Origin")
        return origin if origin in self.origins else None

    def allow(self, request: web.Request, response: web.StreamResponse) -> None:
        """Mark `response` readable by the request's page if its origin is on the list."""
        if not self.enabled:
            return
        response.headers.add("Vary", "Origin")  # the answer depends on Origin: caches too
        origin = self._allowed(request)
        if origin is not None:
            response.headers["Access-Control-Allow-Origin"] = origin

    async def preflight(self, request: web.Request) -> web.Response:
        """The OPTIONS answer: granted (204 with the methods and headers) to a listed
        origin asking for POST; refused (403, no CORS headers) otherwise."""
        origin = self._allowed(request)
        if origin is None or request.headers.get("Access-Control-Request-Method") != METHODS:
            return web.Response(status=403, headers={"Vary": "Origin"})
        granted = {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Allow-Methods": METHODS,
            "Access-Control-Allow-Headers": HEADERS,
            "Access-Control-Max-Age": str(MAX_AGE_S),
            "Vary": "Origin",
        }
        return web.Response(status=204, headers=granted)
