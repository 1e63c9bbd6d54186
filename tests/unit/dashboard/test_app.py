"""The dashboard's doors: where the sign-in sends a browser, and the cookie it sets."""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from hypothesis import given
from hypothesis import strategies as st

from wheel.dashboard.app import (
    AFTER_SIGNIN,
    COOKIE,
    DashboardSettings,
    _next,
    add_routes,
    signed_in_redirect,
)

SITE = "https://wheel.example.com/signin"
CONTROLS = [chr(c) for c in (*range(0x20), 0x7F)]
"""Every ASCII control character: browsers drop tabs and newlines from URLs, and so does
yarl when aiohttp writes the Location header."""


def location(value: str | None) -> str:
    """The Location header the sign-in's redirect carries."""
    return signed_in_redirect("s", _next(value), secure=False).headers["Location"]


def stays_here(written: str) -> bool:
    """Whether a browser on SITE follows `written` to SITE's own host: judged by the
    standard library's reading (which drops tabs and newlines as browsers do), and by
    the shape a browser reads as a path whatever else it does (one slash, then not a
    second slash or a backslash; printable ASCII only)."""
    resolved = urlsplit(urljoin(SITE, written))
    shaped = (
        written.startswith("/")
        and written[1:2] not in ("/", "\\")
        and all("!" <= c <= "~" and c != "\\" for c in written)
    )
    return resolved.scheme == "https" and resolved.netloc == "wheel.example.com" and shaped


@pytest.mark.parametrize("control", CONTROLS, ids=[f"0x{ord(c):02x}" for c in CONTROLS])
@pytest.mark.parametrize(
    "shape",
    ["/{c}/evil.example", "{c}//evil.example", "/{c}{c}/evil.example", "/{c}\\evil.example",
     "/{c}/{c}/evil.example", "{c}/{c}/evil.example/jobs", "/jobs{c}", "https:{c}//evil.example"],
)  # fmt: skip
def test_a_control_character_never_makes_the_redirect_leave(control: str, shape: str) -> None:
    # `next=/%09/evil.example` arrives decoded: a tab, which yarl drops, making //evil.example.
    written = location(shape.format(c=control))
    assert stays_here(written), written


@pytest.mark.parametrize(
    "value",
    [
        "//evil.example", "///evil.example", "////evil.example", "//evil.example/jobs",
        "/\\evil.example", "\\\\evil.example", "/\\/evil.example", "\\/evil.example",
        "https://evil.example", "http:evil.example", "http:/evil.example", "HTTPS://evil.example",
        "javascript:alert(1)", "data:text/html,<script>alert(1)</script>", "evil.example",
        "//user@evil.example", "//user:pw@evil.example/", "@evil.example", "/@evil.example",
        "%2F%2Fevil.example", "/%2F%2Fevil.example", "/%2f/evil.example", "/%5Cevil.example",
        "/%09/evil.example", "/.//evil.example", "/..//evil.example", "/a/..//evil.example",
        " //evil.example", "/ /evil.example", "\u3000//evil.example", "/\u3000/evil.example",
        "/\uff0f/evil.example", "\uff0f\uff0fevil.example", "/\u2028/evil.example",
        "/\x85/evil.example", "//evil.example%2F@wheel.example.com", "//[::1]/", "//127.0.0.1",
        "//0x7f.1", "//evil.example\\@wheel.example.com", "http://[]@", "//[]@", "", None,
    ],
)  # fmt: skip
def test_the_usual_open_redirect_tricks_stay_on_this_site(value: str | None) -> None:
    written = location(value)
    assert stays_here(written), written


@pytest.mark.parametrize(
    "value",
    ["/jobs", "/runs/5f1c9a8e@20260329T013000Z", "/runs?job=nightly&status=dead",
     "/jobs/%E2%9C%93", "/queue?page_token=abc%3D%3D", "/cluster"],
)  # fmt: skip
def test_a_path_of_this_site_is_where_the_sign_in_goes(value: str) -> None:
    assert location(value) == value


def test_anything_else_goes_to_the_jobs() -> None:
    for value in ("//evil.example", "/\t/evil.example", "https://evil.example", None, ""):
        assert _next(value) == AFTER_SIGNIN


@pytest.mark.parametrize("secure", [False, True])
def test_the_session_cookie_is_http_only_lax_and_secure_when_told(secure: bool) -> None:
    response = signed_in_redirect("id-1", "/jobs", secure=secure)
    cookie = response.cookies[COOKIE]
    assert cookie.value == "id-1"
    assert (cookie["httponly"], cookie["samesite"], cookie["path"]) == (True, "Lax", "/")
    assert bool(cookie["secure"]) is secure
    header = cookie.OutputString()
    assert "SameSite=Lax" in header
    assert ("Secure" in header) is secure
    assert response.status == 303


@pytest.mark.parametrize(
    "path", ["/jobs/nightly/pause", "/jobs/nightly/trigger", "/runs/x/retry", "/queue/retry",
             "/signout"],
)  # fmt: skip
async def test_every_change_is_a_post_so_a_lax_cookie_changes_nothing(path: str) -> None:
    """A Lax cookie goes with another site's links (top-level GETs): those only read."""
    app = web.Application()
    add_routes(app, DashboardSettings("127.0.0.1:1"))
    match = await app.router.resolve(make_mocked_request("GET", path, app=app))
    assert isinstance(match.http_exception, web.HTTPMethodNotAllowed)
    posted = await app.router.resolve(make_mocked_request("POST", path, app=app))
    assert posted.http_exception is None


_PIECES = st.sampled_from(
    [*"/\\@:.%?#[] \t\r\n\x00", "evil.example", "https:", "09", "\u3000", "\uff0f", "jobs"]
)


@given(st.lists(_PIECES, max_size=12).map("".join))
def test_whatever_next_says_the_browser_stays_on_this_site(value: str) -> None:
    written = location(value)
    assert stays_here(written), written
