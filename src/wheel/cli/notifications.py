"""`wheel notifications`: the tenant's webhook for runs that need a person.

    wheel notifications show [--reveal-secret]
    wheel notifications set https://hooks.example.com/wheel [--on dead,needs_review,skipped]
    wheel notifications off
    wheel notifications rotate-secret

A job can send its own elsewhere (`wheel jobs create ... --notify-url URL`).
The secret signs every notification (the Wheel-Signature header); it is
printed only when asked for, or when `set` or `rotate-secret` makes the
receiver need it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import click

from wheel.cli.session import Session, connected
from wheel.model.executions import ExecutionStatus
from wheel.model.notifications import NOTIFIABLE, Webhook

if TYPE_CHECKING:
    from rich.console import Console

    from wheel.client import Client


def _statuses(value: str | None) -> tuple[ExecutionStatus, ...]:
    if not value:
        return ()
    chosen = []
    allowed = {s.value: s for s in NOTIFIABLE}
    for name in (part.strip().lower() for part in value.split(",")):
        if name not in allowed:
            raise click.BadParameter(
                f"{name!r} is not one of {', '.join(allowed)}", param_hint="--on"
            )
        chosen.append(allowed[name])
    return tuple(chosen)


def _show(session: Session, webhook: Webhook, *, reveal: bool, said: str = "") -> None:
    shown = webhook if reveal else dataclasses.replace(webhook, secret="")

    def human(console: Console) -> None:
        if said:
            console.print(said)
        console.print(f"url:     {webhook.url or '(none: only jobs with their own URL notify)'}")
        console.print(f"on:      {', '.join(s.value for s in webhook.on)}")
        if reveal:
            console.print(f"secret:  {webhook.secret}")
        else:
            console.print("secret:  (hidden: --reveal-secret prints it)")
        if webhook.secret_rotated_at is not None:
            console.print(f"rotated: {webhook.secret_rotated_at.isoformat(timespec='seconds')}")

    session.show(shown, human)


@click.group()
def notifications() -> None:
    """The tenant's webhook: dead, needs_review (and skipped) runs POSTed, signed."""


@notifications.command("show")
@click.option("--reveal-secret", is_flag=True, help="Print the signing secret too.")
@connected
def show(session: Session, reveal_secret: bool) -> None:
    """Where notifications go, for which statuses."""
    webhook = session.call(lambda client: client.webhook())
    _show(session, webhook, reveal=reveal_secret)


@notifications.command("set")
@click.argument("url")
@click.option(
    "--on",
    "on",
    metavar="STATUSES",
    help="Comma-separated, of dead, needs_review, skipped (default: dead,needs_review).",
)
@connected
def set_(session: Session, url: str, on: str | None) -> None:
    """POST the tenant's notifications to URL; prints the secret receivers check them with."""
    statuses = _statuses(on)
    webhook = session.call(lambda client: client.set_webhook(url, on=statuses))
    _show(session, webhook, reveal=True)


@notifications.command("off")
@connected
def off(session: Session) -> None:
    """No tenant-wide webhook (jobs that name their own URL still notify)."""
    webhook = session.call(lambda client: client.set_webhook("", on=client.webhook().on))
    _show(session, webhook, reveal=False, said="the tenant's webhook is off")


@notifications.command("rotate-secret")
@connected
def rotate_secret(session: Session) -> None:
    """A new signing secret; the previous one also signs for a day, so receivers can switch."""

    def rotate(client: Client) -> Webhook:
        current = client.webhook()
        return client.set_webhook(current.url, on=current.on, rotate_secret=True)

    webhook = session.call(rotate)
    _show(session, webhook, reveal=True, said="new secret (the previous one signs too, for a day):")
