"""Structured logs: a library that logs every reconnect try is throttled, not silenced."""

from __future__ import annotations

import logging

from wheel.cli.logs import Throttle


def _record(message: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord("psycopg.pool", logging.WARNING, "pool.py", 1, message, args, None)


def test_one_record_per_message_template_per_period_then_the_count_left_out() -> None:
    now = [0.0]
    throttle = Throttle(30.0, clock=lambda: now[0])
    connecting = "error connecting in %r: %s"
    assert throttle.filter(_record(connecting, "wheel", "refused"))
    assert not throttle.filter(_record(connecting, "wheel", "refused again"))
    assert not throttle.filter(_record(connecting, "wheel-api", "refused"))
    assert throttle.filter(_record("discarding broken connection: %s", "c1")), "another template"
    now[0] = 30.0
    let_through = _record(connecting, "wheel", "refused")
    assert throttle.filter(let_through)
    assert let_through.suppressed == 2  # type: ignore[attr-defined]
    now[0] = 61.0
    quiet = _record(connecting, "wheel", "refused")
    assert throttle.filter(quiet)
    assert not hasattr(quiet, "suppressed"), "nothing was left out since"
