"""`python -m wheel`: the same as the `wheel` command."""

from wheel.cli import main

main()
