"""Options several `wheel` commands share, defined once so flags and variables agree, and
the parameter types they read values with: durations ("1h30m"), instants (ISO 8601 or
"now-3d"), the values of an enum.

    @click.option("--timeout", type=DURATION)
    @click.option("--misfire", type=choice(MisfirePolicy))
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from wheel.coordinator.etcd_settings import EtcdSettings

F = TypeVar("F", bound=Callable[..., Any])

# -- values --------------------------------------------------------------------------------

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


class DurationType(click.ParamType[timedelta, Any]):
    """ "30s", "5m", "1h30m", "250ms", "2d"."""

    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> timedelta:
        if isinstance(value, timedelta):
            return value
        text = str(value).strip().lower()
        parts = _DURATION_PART.findall(text)
        if not text or "".join(number + unit for number, unit in parts) != text:
            self.fail(f"{value!r} is not a duration (e.g. 30s, 5m, 1h30m, 250ms)", param, ctx)
        return timedelta(seconds=sum(float(number) * _UNIT_S[unit] for number, unit in parts))


_RELATIVE = re.compile(r"(now)?\s*([+-])\s*(\S+)")


class InstantType(click.ParamType[datetime, Any]):
    """ISO 8601 with a UTC offset ("2027-03-28T01:30:00+01:00", "2027-03-28T00:30:00Z"), or
    relative to now: "now", "now-3d", "-3d", "+1h30m" (resolved when the command runs).

    Relative instants keep scripts and docs from rotting: a backfill "from three
    days ago" stays inside the retention window whenever it runs.
    """

    name = "instant"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> datetime:
        if isinstance(value, datetime):
            return value
        text = str(value).strip()
        if text.lower() == "now":
            return datetime.now(UTC)
        relative = _RELATIVE.fullmatch(text.lower())
        if relative is not None:
            _, sign, amount = relative.groups()
            offset = DURATION.convert(amount, param, ctx)
            return datetime.now(UTC) + (offset if sign == "+" else -offset)
        try:
            instant = datetime.fromisoformat(text)
        except ValueError:
            self.fail(
                f"{value!r} is not an ISO 8601 instant or a time from now (now, -3d, +1h)",
                param,
                ctx,
            )
        if instant.tzinfo is None:
            self.fail(f"{value!r} needs a UTC offset (e.g. +01:00 or Z)", param, ctx)
        return instant


DURATION = DurationType()
INSTANT = InstantType()


def choice(cls: type[StrEnum]) -> click.Choice[str]:
    """The values of a StrEnum, as a case-insensitive choice."""
    return click.Choice([member.value for member in cls], case_sensitive=False)


def apply(options: Sequence[Callable[[Any], Any]]) -> Callable[[F], F]:
    """Several option decorators as one, in the order given."""

    def decorate(function: F) -> F:
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


# -- options -------------------------------------------------------------------------------


dsn = click.option(
    "--dsn",
    envvar="WHEEL_POSTGRES_DSN",
    required=True,
    help="Postgres connection URI (env WHEEL_POSTGRES_DSN; keep passwords out of shell history).",
)

etcd = click.option(
    "--etcd",
    "endpoint",
    envvar="WHEEL_ETCD_ENDPOINT",
    required=True,
    help="etcd client URL, e.g. http://127.0.0.1:2379 (env WHEEL_ETCD_ENDPOINT).",
)

output = click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json", "jsonl"]),
    default="table",
    show_default=True,
    help="table for people; json for programs; jsonl: one JSON object a line.",
)

cluster = click.option(
    "--cluster",
    envvar="WHEEL_CLUSTER",
    default="default",
    show_default=True,
    help="Cluster name: keys live under /wheel/<cluster>/ (env WHEEL_CLUSTER).",
)


def secret(path: Path | None, variable: str, option: str) -> str:
    """A secret from its file (a mounted Secret, the `option` given) or else the environment
    variable; never a flag's value."""
    if path is not None:
        try:
            return path.read_text().strip()
        except OSError as exc:
            raise click.BadParameter(
                f"cannot read {path}: {exc.strerror}", param_hint=option
            ) from None
    return os.environ.get(variable, "").strip()


@dataclass(frozen=True)
class EtcdAccess:
    """etcd's TLS and user settings as a command got them."""

    etcd_ca_file: str
    etcd_cert_file: str
    etcd_key_file: str
    etcd_user: str
    etcd_password: str = field(repr=False)

    def settings(self, endpoint: str) -> EtcdSettings:
        from wheel.coordinator.etcd_settings import EtcdSettings

        return EtcdSettings.of(
            endpoint,
            ca_file=self.etcd_ca_file,
            cert_file=self.etcd_cert_file,
            key_file=self.etcd_key_file,
            user=self.etcd_user,
            password=self.etcd_password,
        )


def etcd_access(command: Callable[..., Any]) -> Callable[..., Any]:
    """etcd's TLS and user options; the command gets them as one `etcd_access` (the password
    read from its file or WHEEL_ETCD_PASSWORD, never a flag)."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        kwargs["etcd_access"] = EtcdAccess(
            etcd_ca_file=kwargs.pop("etcd_ca_file"),
            etcd_cert_file=kwargs.pop("etcd_cert_file"),
            etcd_key_file=kwargs.pop("etcd_key_file"),
            etcd_user=kwargs.pop("etcd_user"),
            etcd_password=secret(
                kwargs.pop("etcd_password_file"), "WHEEL_ETCD_PASSWORD", "--etcd-password-file"
            ),
        )
        return command(*args, **kwargs)

    for option in reversed(
        [
            click.option("--etcd-ca-file", envvar="WHEEL_ETCD_CA_FILE", default="",
                         help="PEM CA of etcd's certificates: etcd over TLS "
                         "(env WHEEL_ETCD_CA_FILE)."),
            click.option("--etcd-cert-file", envvar="WHEEL_ETCD_CERT_FILE", default="",
                         help="PEM client certificate for etcd (env WHEEL_ETCD_CERT_FILE)."),
            click.option("--etcd-key-file", envvar="WHEEL_ETCD_KEY_FILE", default="",
                         help="PEM key of --etcd-cert-file (env WHEEL_ETCD_KEY_FILE)."),
            click.option("--etcd-user", envvar="WHEEL_ETCD_USER", default="",
                         help="etcd user (env WHEEL_ETCD_USER); its password from "
                         "WHEEL_ETCD_PASSWORD or --etcd-password-file."),
            click.option("--etcd-password-file", envvar="WHEEL_ETCD_PASSWORD_FILE",
                         type=click.Path(dir_okay=False, path_type=Path),
                         help="File holding the etcd user's password "
                         "(env WHEEL_ETCD_PASSWORD_FILE)."),
        ]
    ):  # fmt: skip
        run = option(run)
    return run
