"""Launcher of the `wheel` command.

It lives outside the `wheel` package so that it still imports when `wheel`
resolves to PyPA's wheel (installed in the same environment, or earlier on
the path): then it names the conflict and exits instead of running the wrong
program or dying in an ImportError.
"""

from __future__ import annotations

import importlib
import sys

DISTRIBUTION = "wheel-scheduler"
EXIT_CONFLICT = 3


def conflict() -> str | None:
    """Return why `import wheel` is not this project, or None when it is."""
    try:
        module = importlib.import_module("wheel")
    except ImportError as exc:
        return f"the package 'wheel' cannot be imported ({exc})"
    if getattr(module, "__distribution__", None) == DISTRIBUTION:
        return None
    where = getattr(module, "__file__", None) or "an unknown location"
    version = getattr(module, "__version__", "unknown")
    return (
        f"the import name 'wheel' resolves to another package (version {version}, "
        f"at {where}), most likely PyPA's 'wheel', which uses the same name as "
        f"{DISTRIBUTION}. Install {DISTRIBUTION} in its own virtual environment "
        "(`make dev` creates .venv) and run it from there."
    )


def main() -> None:
    problem = conflict()
    if problem is not None:
        print(f"wheel: error: {problem}", file=sys.stderr)
        raise SystemExit(EXIT_CONFLICT)
    cli = importlib.import_module("wheel.cli.main")
    cli.main()


if __name__ == "__main__":
    main()
