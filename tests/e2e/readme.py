"""The README's tour, read from the README itself and run against a live `wheel dev`.

Blocks marked `<!-- readme-test: NAME -->` (the fenced block right after the
marker) are the commands a reader types: the CLI block runs under
`bash -euo pipefail`, the SDK block under the project's Python, with the
environment `wheel dev` tells the reader to export. A command that stops
working fails the test, so the README cannot rot.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent


def block(name: str, text: str | None = None) -> str:
    """The fenced block after `<!-- readme-test: name -->`."""
    text = README.read_text() if text is None else text
    found = re.search(
        rf"<!-- readme-test: {re.escape(name)} -->\s*```\w*\n(.*?)```", text, re.DOTALL
    )
    if found is None:
        raise AssertionError(f"README has no block marked readme-test: {name}")
    return found.group(1)


def run_tour(exported: Mapping[str, str]) -> tuple[str, str]:
    """Run the CLI and SDK blocks as a reader would; their outputs (each must exit 0)."""
    env = {
        **os.environ,
        **exported,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": "200",
    }
    cli = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block("cli")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 0, f"the README's CLI tour failed:\n{cli.stdout}\n{cli.stderr}"
    sdk = subprocess.run(
        [sys.executable, "-c", block("sdk")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert sdk.returncode == 0, f"the README's SDK tour failed:\n{sdk.stdout}\n{sdk.stderr}"
    return cli.stdout, sdk.stdout
