"""`wheel completion SHELL`: print click's completion script for bash, zsh or fish.

    eval "$(wheel completion bash)"      # in ~/.bashrc
    eval "$(wheel completion zsh)"       # in ~/.zshrc
    wheel completion fish > ~/.config/fish/completions/wheel.fish

The script calls `wheel` back with `_WHEEL_COMPLETE` set; click answers with
the commands, options and choices that fit what has been typed so far.
"""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

SHELLS = ("bash", "zsh", "fish")


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script for SHELL (bash, zsh or fish); eval it in the
    shell's startup file: eval "$(wheel completion bash)"."""
    root = ctx.find_root()
    source = get_completion_class(shell)
    if source is None:  # click knows all of SHELLS; this guards a future click
        raise click.BadParameter(f"no completion for {shell}", param_hint="SHELL")
    name = root.info_name or "wheel"
    variable = f"_{name.replace('-', '_').upper()}_COMPLETE"
    click.echo(source(root.command, {}, name, variable).source())
