"""`python -m wheel`: the same as the `wheel` command."""

from wheel.cli.main import main

main()
