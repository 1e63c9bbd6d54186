"""What `wheel dev` prints: one line at a time, flushed, so it interleaves in order with
the children's output on the same terminal."""

from __future__ import annotations

import sys


def say(line: str, *, err: bool = False) -> None:
    """Print one line to stdout (stderr with `err`), flushed at once."""
    print(line, file=sys.stderr if err else sys.stdout, flush=True)
