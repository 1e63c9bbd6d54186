"""A click group whose commands are imported only when one is run.

`wheel --help` lists twelve commands; importing them all would pull in gRPC,
psycopg, aiohttp and the dev cluster (about 0.6 s before anything is printed).
`LazyGroup` knows each command by its import path and its one-line help, so the
listing imports nothing, and running a command imports that command's module only:

    LazyGroup(commands={"jobs": Lazy("wheel.cli.jobs:jobs", "Create, inspect and change jobs.")})

The one-line help is written twice (here and in the command's docstring);
`tests/unit/cli/test_lazy_commands.py` checks that they agree.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem


@dataclass(frozen=True)
class Lazy:
    """Where a command lives and what `--help` says of it."""

    path: str
    """`module:attribute` of the click command."""
    summary: str
    """The line `wheel --help` shows next to the command's name."""

    def load(self) -> click.Command:
        module_name, _, attribute = self.path.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.path} is not a click command")
        return command


class LazyGroup(click.Group):
    """A group whose listed commands are imported when resolved (run, or completed)."""

    def __init__(self, *args: Any, commands: Mapping[str, Lazy], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            self.add_command(self.lazy[cmd_name].load(), cmd_name)
        return super().get_command(ctx, cmd_name)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """Command names with their summaries (a TAB imports no command), then options."""
        from click.shell_completion import CompletionItem

        results = []
        for name in self.list_commands(ctx):
            if not name.startswith(incomplete):
                continue
            if name in self.lazy:
                results.append(CompletionItem(name, help=self.lazy[name].summary))
            elif (command := super().get_command(ctx, name)) is not None and not command.hidden:
                results.append(CompletionItem(name, help=command.get_short_help_str()))
        # The options (click.Command's part); click.Group's would import every command.
        return results + click.Command.shell_complete(self, ctx, incomplete)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The listing from the summaries: no command is imported to print it."""
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy:
                rows.append((name, self.lazy[name].summary))
                continue
            command = super().get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(formatter.width - 6 - len(name))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)
