"""The dashboard's HTTP side: routes, the sign-in, sessions and CSRF, errors as pages.

    add_routes(app, DashboardSettings("127.0.0.1:7070"))   # app: the node's (scheduler.http)

The dashboard's routes go into the node's HTTP application beside the JSON API, and each
carries its own checks (`_signed_in`, `_open`): nothing here runs for another route.
Every page but the sign-in needs a session; every form that changes something
carries the session's CSRF token, and another site's form is refused by its
Origin (the cookie is SameSite=Lax besides, so no other site's POST carries
it). An API error is shown as the page's message, never a traceback: a refused
token signs the browser out, another tenant's object is "not found", as the
API answers.

The session cookie is SameSite=Lax, not Strict: a link to a run pasted in
mail or chat is a navigation from another site, which a Strict cookie does
not follow, so a signed-in browser would land on the sign-in page and be
asked for its token again (pasting tokens is the habit to avoid). Lax sends
the cookie on such top-level GETs only, and every GET here only reads; every
change is a POST, which Lax keeps from other sites, and which must carry
the session's CSRF token and pass the Origin check besides. The cookie is
Secure when the dashboard's public URL is https (`secure_cookie`), as behind
a proxy that ends TLS and forwards plain HTTP: forwarded headers
(X-Forwarded-Proto) are never trusted, since anyone can send them.
"""

from __future__ import annotations

import logging
import re
import secrets
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import jinja2
import yarl
from aiohttp import web

from wheel.client.aio import AsyncClient
from wheel.dashboard import pages
from wheel.dashboard.sessions import Session, Sessions
from wheel.errors import NotFound, Unauthenticated, Unavailable, WheelError

log = logging.getLogger(__name__)

COOKIE = "wheel_session"
_SESSIONS = web.AppKey("sessions", Sessions)
_TEMPLATES = web.AppKey("templates", jinja2.Environment)
_SESSION = web.RequestKey("session", Session)
_TOKEN_SHAPE = re.compile(r"^whl_[A-Za-z0-9_-]{10,200}$")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class DashboardSettings:
    api_endpoint: str
    """The node's own gRPC address: the dashboard is one more API client."""
    api_tls: bool = False
    api_ca_file: str | None = None
    secure_cookie: bool = False
    """Mark the session cookie Secure: browsers reach the dashboard over https (a proxy
    may end TLS and forward plain HTTP to the node, which cannot tell)."""


_SETTINGS: web.AppKey[DashboardSettings] = web.AppKey("settings")


def templates() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("wheel.dashboard", "templates"),
        autoescape=jinja2.select_autoescape(["html"]),
        undefined=jinja2.StrictUndefined,
    )
    environment.filters.update(pages.FILTERS)
    return environment


def render(request: web.Request, name: str, status: int = 200, **context: Any) -> web.Response:
    session: Session | None = request.get(_SESSION)
    body = (
        request.app[_TEMPLATES]
        .get_template(name)
        .render(
            session=session,
            csrf=session.csrf if session else "",
            path=request.path,
            path_qs=request.path_qs,
            **context,
        )
    )
    return web.Response(
        text=body,
        status=status,
        content_type="text/html",
        headers={
            "Cache-Control": "no-store",
            "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "same-origin",
        },
    )


def _cross_site(request: web.Request) -> bool:
    """A POST another site's page made: its Origin is not this host, or the browser says so."""
    if request.headers.get("Sec-Fetch-Site") == "cross-site":
        return True
    origin = request.headers.get("Origin")
    if origin is None:
        return False
    return origin == "null" or origin.split("://", 1)[-1] != request.host


AFTER_SIGNIN = "/jobs"


def _next(value: str | None) -> str:
    """Where to go after signing in: a path of this site only, never another host.

    Read as the redirect will be written (aiohttp puts `str(yarl.URL(location))` in the
    Location header, and yarl, as browsers do, drops tabs and newlines: `/<tab>/evil`
    becomes `//evil`, another host), then checked: no scheme, no host, and neither `//`
    (scheme-relative) nor `/\\` (a slash to browsers) at the start."""
    if not value or "\\" in value:
        return AFTER_SIGNIN
    try:
        url = yarl.URL(value)
        location = str(url)
        written = yarl.URL(location)  # what the Location header will say
    except Exception:  # not only ValueError: yarl raises IndexError for http://[]@
        return AFTER_SIGNIN  # fail closed
    if url.scheme or url.raw_authority or written.scheme or written.raw_authority:
        return AFTER_SIGNIN
    if str(written) != location or not location.startswith("/") or location[1:2] in ("/", "\\"):
        return AFTER_SIGNIN
    if not all("!" <= c <= "~" and c != "\\" for c in location):  # yarl encodes the rest
        return AFTER_SIGNIN
    return location


def signed_in_redirect(session_id: str, after: str, *, secure: bool) -> web.HTTPSeeOther:
    """The sign-in's answer: to `after`, with the session cookie (see the module's note on
    SameSite and Secure)."""
    response = web.HTTPSeeOther(after)
    response.set_cookie(COOKIE, session_id, httponly=True, samesite="Lax", path="/", secure=secure)
    return response


MAX_FORM_BYTES = 64 * 1024
"""Largest request a dashboard route reads: its forms are a token or a list of run ids."""


def _refused_cross_site(request: web.Request) -> web.Response | None:
    if request.method == "POST" and _cross_site(request):
        return render(request, "error.html", status=403,
                      message="A form from another site cannot act here.")  # fmt: skip
    return None


def _open(handler: Handler) -> Handler:
    """A route anyone may reach (the sign-in): another site's form is refused all the same."""

    async def handle(request: web.Request) -> web.StreamResponse:
        request = request.clone(client_max_size=MAX_FORM_BYTES)
        refused = _refused_cross_site(request)
        return refused if refused is not None else await handler(request)

    return handle


def _signed_in(handler: Handler) -> Handler:
    """A route for signed-in browsers: attach the session or send the browser to the sign-in;
    on POST refuse other sites' forms (Origin) and check the session's CSRF token; show an
    API error as a page."""

    async def handle(request: web.Request) -> web.StreamResponse:
        request = request.clone(client_max_size=MAX_FORM_BYTES)
        refused = _refused_cross_site(request)
        if refused is not None:
            return refused
        background = request.query.get("fragment") == "1"
        session = request.app[_SESSIONS].get(request.cookies.get(COOKIE), touch=not background)
        if session is None:
            target = request.path_qs if request.method == "GET" and not background else "/jobs"
            raise web.HTTPSeeOther(f"/signin?next={urllib.parse.quote(target, safe='')}")
        request[_SESSION] = session
        if request.method == "POST":
            form = await request.post()
            given = form.get("csrf")
            if not session.csrf_ok(given if isinstance(given, str) else None):
                return render(request, "error.html", status=403, message="This form has expired:"
                              " reload the page and try again.")  # fmt: skip
        try:
            return await handler(request)
        except Unauthenticated:
            await request.app[_SESSIONS].close(session.id)
            response = web.HTTPSeeOther("/signin?expired=1")
            response.del_cookie(COOKIE)
            raise response from None
        except NotFound as exc:
            return render(request, "error.html", status=404, message=str(exc))
        except Unavailable as exc:
            return render(request, "error.html", status=503, message=str(exc))
        except WheelError as exc:
            return render(request, "error.html", status=400, message=str(exc))
        except web.HTTPException:
            raise
        except Exception:
            reference = secrets.token_hex(6)
            log.exception("dashboard.internal_error", extra={"reference": reference})
            return render(
                request,
                "error.html",
                status=500,
                message=f"Something went wrong (reference {reference} in the node's log).",
            )

    return handle


async def signin_page(request: web.Request) -> web.Response:
    expired = request.query.get("expired") == "1"
    return render(request, "signin.html", error="", expired=expired,
                  next=_next(request.query.get("next")))  # fmt: skip


async def signin(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    token = str(form.get("token", "")).strip()
    after = _next(str(form.get("next", "")))

    def refused(status: int, why: str) -> web.Response:
        return render(request, "signin.html", status=status, expired=False, next=after, error=why)

    if not _TOKEN_SHAPE.match(token):
        return refused(401, "That is not a wheel token (whl_...).")
    settings = request.app[_SETTINGS]
    client = AsyncClient(
        settings.api_endpoint, token=token, tls=settings.api_tls,
        root_certificates=settings.api_ca_file, retries=1,
    )  # fmt: skip
    try:
        await client.list_jobs(page_size=1)
    except Unauthenticated:
        await client.close()
        return refused(401, "This token is not accepted (unknown, revoked, or an executor's).")
    except WheelError as exc:
        await client.close()
        return refused(503, str(exc))
    sessions = request.app[_SESSIONS]
    previous = request.cookies.get(COOKIE)
    if previous:  # this browser's earlier session ends: one at a time
        await sessions.close(previous)
    session = await sessions.open(client, token)
    raise signed_in_redirect(session.id, after, secure=settings.secure_cookie)


async def signout(request: web.Request) -> web.StreamResponse:
    await request.app[_SESSIONS].close(request[_SESSION].id)
    response = web.HTTPSeeOther("/signin")
    response.del_cookie(COOKIE, path="/")
    raise response


def _page(view: Callable[..., Awaitable[dict[str, Any]]], template: str) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        session = request[_SESSION]
        context = await view(session.client, request)
        if "redirect" in context:
            raise web.HTTPSeeOther(context["redirect"])
        name = context.pop("template", template)
        if request.query.get("fragment") != "1":  # a live refresh redraws only its table
            context["attention_count"] = await _attention_count(session.client)
        return render(request, name, **context)

    return handle


async def _attention_count(client: AsyncClient) -> int | None:
    """The header's count of jobs needing attention; None (no count) if it cannot be had."""
    try:
        return await client.attention_count()
    except Unauthenticated:
        raise
    except WheelError:
        return None


async def _root(request: web.Request) -> web.StreamResponse:
    raise web.HTTPSeeOther("/jobs")


def add_routes(
    app: web.Application, settings: DashboardSettings, sessions: Sessions | None = None
) -> None:
    """Add the dashboard's pages to `app` (the node's HTTP application, `wheel.scheduler.http`):
    its checks run on its own routes only, and no other route passes through them."""
    app[_SESSIONS] = sessions or Sessions()
    app[_SETTINGS] = settings
    app[_TEMPLATES] = templates()
    app.router.add_get("/", _signed_in(_root))
    app.router.add_get("/signin", _open(signin_page))
    app.router.add_post("/signin", _open(signin))
    app.router.add_post("/signout", _signed_in(signout))
    for path, view, template in [
        ("/jobs", pages.jobs, "jobs.html"),
        ("/jobs/{ref}", pages.job, "job.html"),
        ("/runs", pages.runs, "runs.html"),
        ("/runs/{id}", pages.run, "run.html"),
        ("/queue", pages.queue, "queue.html"),
        ("/cluster", pages.cluster, "cluster.html"),
        ("/calendars", pages.calendars, "calendars.html"),
    ]:
        app.router.add_get(path, _signed_in(_page(view, template)))
    for path, change in [
        ("/jobs/{ref}/{action:pause|resume|trigger}", pages.act),
        ("/runs/{id}/retry", pages.retry),
        ("/queue/retry", pages.retry_many),
    ]:
        app.router.add_post(path, _signed_in(_page(change, "")))
    app.router.add_static("/static/", pages.STATIC, show_index=False)

    async def close_sessions(_: web.Application) -> None:
        await app[_SESSIONS].close_all()

    app.on_cleanup.append(close_sessions)


__all__ = ["MAX_FORM_BYTES", "DashboardSettings", "add_routes"]
