"""Configuration files: a TOML table whose keys are a command's option names.

Precedence is the one operators expect: flags, then `WHEEL_*` environment
variables, then the file, then the defaults. The file is applied as click's
`default_map`, which click ranks below both flags and environment variables.

    # scheduler.toml
    node_id = "node-0"
    window_s = 300
    lease_s = 30

An unknown key is an error naming it (a typo must not be silently ignored).
Secrets (the Postgres DSN) belong in the environment, not in this file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from wheel.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])


def load(path: Path, known: set[str]) -> dict[str, Any]:
    """Read a TOML file of option values; ConfigError names a bad file or key."""
    try:
        document = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ConfigError("config", f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("config", f"{path} is not valid TOML: {exc}") from None
    values = {key.replace("-", "_"): value for key, value in document.items()}
    unknown = sorted(set(values) - known)
    if unknown:
        names = ", ".join(sorted(known))
        raise ConfigError(f"config.{unknown[0]}", f"not an option (known: {names})")
    return values


def option() -> Callable[[F], F]:
    """A `--config FILE` option (env WHEEL_CONFIG) that feeds the file to click's default_map."""

    def apply(ctx: click.Context, _param: click.Parameter, value: Path | None) -> None:
        if value is None:
            return
        known = {p.name for p in ctx.command.params if p.name and p.name != "config"}
        try:
            ctx.default_map = {**(ctx.default_map or {}), **load(value, known)}
        except ConfigError as exc:
            raise click.BadParameter(str(exc), param_hint="--config") from None

    return click.option(
        "--config",
        type=click.Path(dir_okay=False, path_type=Path),
        envvar="WHEEL_CONFIG",
        is_eager=True,
        expose_value=False,
        callback=apply,
        help="TOML file of option values (keys: option names); flags and WHEEL_* win over it.",
    )
