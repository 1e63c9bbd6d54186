"""The store's SQL, one statement per `.sql` file, loaded by name."""

from __future__ import annotations

import functools
from importlib import resources
from typing import LiteralString


@functools.cache
def sql(name: str) -> LiteralString:
    """The text of `queries/<name>.sql` (our own files: safe as literal SQL)."""
    return resources.files(__package__).joinpath(f"{name}.sql").read_text()
