"""The dashboard is a client of the public API, like any other: its modules import the SDK,
the model and small pure leaves, never the server side (`api.server`, the store, the
scheduler) that the node's HTTP door (`wheel.scheduler.http`) puts it beside."""

from __future__ import annotations

import ast
from pathlib import Path

import wheel.dashboard

ALLOWED = ("wheel.client", "wheel.model", "wheel.errors", "wheel.durations", "wheel.schedule",
           "wheel.dashboard")  # fmt: skip
"""What the dashboard may import from wheel: `wheel.schedule` is pure (cron, zones, words)."""


def imports(path: Path) -> list[str]:
    """Every wheel module `path` imports, at the top or inside a function."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [node.module] if node.module != "wheel" else [
                f"wheel.{alias.name}" for alias in node.names
            ]  # fmt: skip
        elif isinstance(node, ast.ImportFrom):  # relative: within the dashboard
            found.append("wheel.dashboard")
    return [name for name in found if name == "wheel" or name.startswith("wheel.")]


def test_the_dashboard_imports_only_the_sdk_the_model_and_small_leaves() -> None:
    modules = sorted(Path(wheel.dashboard.__file__).parent.rglob("*.py"))
    assert len(modules) >= 3
    outside = {
        f"{module.name}: {name}"
        for module in modules
        for name in imports(module)
        if not any(name == allowed or name.startswith(f"{allowed}.") for allowed in ALLOWED)
    }
    assert outside == set()
