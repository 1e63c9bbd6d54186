"""The SDK imports only the contract, and the contract imports only leaves.

A program that talks to wheel (or a webhook receiver that checks a signature)
installs the SDK, `wheel.client`. It must not load a node: not the store
(psycopg), the engine, the executor, the notification sender or the CLI. So
every module under `src/wheel/client` may import only

- `wheel.client` itself;
- the contract both sides share: `wheel.api` without `wheel.api.server`
  (conversions, the status mapping, the signature checks), `wheel.model` (the
  domain types), `wheel.errors` (the exception tree), `wheel._proto` (the
  generated messages and stubs) and `wheel._version`;
- the leaves it uses: `wheel.eventloop` (the sync client's loop),
  `wheel.timestamps` (protobuf Timestamp <-> datetime) and `wheel.durations`
  (how long ago a job was paused, in the model's words).

and never `wheel` itself: the package root names the SDK and the executor
lazily, so an import of it from below is an upward edge. The contract
(`src/wheel/api` without `server/`) may import the same, bar the SDK, plus
`wheel.schedule`, the pure cron/zone/DST package (its preview runs become
`NextRun` messages there). A leaf is a module that imports no other wheel
module; `test_the_leaves_are_leaves` keeps the listed ones so. A new leaf
joins a list here when the SDK needs it.

Every import counts: at module top, inside functions and under
`TYPE_CHECKING`, because a type-only import still ties the SDK to the module
when mypy or a reader follows it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src"
PACKAGE = SRC / "wheel"

LEAVES = ("wheel.eventloop", "wheel.timestamps", "wheel.durations")
CONTRACT = ("wheel.api", "wheel.model", "wheel.errors", "wheel._proto", "wheel._version")
SDK_MAY_IMPORT = ("wheel.client", *CONTRACT, *LEAVES)
API_MAY_IMPORT = (*CONTRACT, "wheel.schedule", *LEAVES)
NEVER = ("wheel.api.server",)


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    path = SRC.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imported(path: Path, root: Path = SRC) -> Iterator[tuple[int, str]]:
    """Every wheel module `path` imports, with its line: top level, in functions, type-only.

    `from wheel import x` names the submodule `wheel.x` when there is one and
    the package root otherwise (`from wheel import __version__`).
    """
    package = _module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                origin = ".".join([*base, *([node.module] if node.module else [])])
            else:
                origin = node.module or ""
            for alias in node.names:
                name = f"{origin}.{alias.name}"
                yield node.lineno, name if _is_module(name) else origin


def _within(name: str, allowed: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in allowed)


def _forbidden(
    folder: Path, allowed: tuple[str, ...], *, root: Path = SRC, skip: str | None = None
) -> list[str]:
    """Each import under `folder` outside `allowed`, named with its module and line."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        if skip is not None and skip in path.relative_to(folder).parts:
            continue
        for line, name in _imported(path, root):
            if not (name == "wheel" or name.startswith("wheel.")):
                continue
            if name == "wheel" or _within(name, NEVER) or not _within(name, allowed):
                found.append(f"{_module_name(path, root)} (line {line}) imports {name}")
    return found


def test_the_sdk_imports_only_the_contract_and_leaves() -> None:
    found = _forbidden(PACKAGE / "client", SDK_MAY_IMPORT)
    assert not found, "the SDK reaches beyond the contract:\n" + "\n".join(found)


def test_the_contract_imports_only_the_model_errors_schedule_and_leaves() -> None:
    found = _forbidden(PACKAGE / "api", API_MAY_IMPORT, skip="server")
    assert not found, "the contract reaches beyond the leaves:\n" + "\n".join(found)


def test_the_leaves_are_leaves() -> None:
    for leaf in (*LEAVES, "wheel._version", "wheel.errors"):
        path = SRC.joinpath(*leaf.split(".")).with_suffix(".py")
        assert [name for _, name in _imported(path) if name.split(".")[0] == "wheel"] == [], leaf


def test_the_rule_sees_imports_in_functions_type_checking_and_from_the_root(
    tmp_path: Path,
) -> None:
    client = tmp_path / "wheel" / "client"
    client.mkdir(parents=True)
    (client / "bad.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from wheel import __version__\n"
        "from wheel.api import status\n"
        "if TYPE_CHECKING:\n"
        "    from wheel.store.jobs import Jobs\n"
        "def later():\n"
        "    import wheel.notify.sender\n"
        "    from wheel.api.server import rpc\n"
    )
    assert _forbidden(client, SDK_MAY_IMPORT, root=tmp_path) == [
        "wheel.client.bad (line 2) imports wheel",
        "wheel.client.bad (line 5) imports wheel.store.jobs",
        "wheel.client.bad (line 7) imports wheel.notify.sender",
        "wheel.client.bad (line 8) imports wheel.api.server.rpc",
    ]


def test_importing_the_sdk_loads_no_part_of_a_node() -> None:
    """What `import wheel.client` actually loads, following every import at run time."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, wheel.client\n"
            "print(*sorted(m for m in sys.modules if m.startswith('wheel.')), sep='\\n')",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "wheel.client.aio" in loaded
    beyond = [m for m in loaded if not _within(m, (*SDK_MAY_IMPORT, "wheel.schedule"))]
    assert not beyond, "import wheel.client loads " + ", ".join(beyond)
