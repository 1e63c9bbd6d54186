"""How long the `wheel` command takes to answer, against curl for the same call.

    PYTHONPATH=. .venv/bin/python benchmarks/cli_startup.py [--runs 15] [--before SRC]

Starts etcd, Postgres and one `wheel scheduler` (gRPC and its HTTP/JSON port),
makes a tenant, a token and 10 jobs, then times whole processes, each run a
fresh interpreter as a user's shell would start it:

- `wheel --help` and `wheel --version`;
- a command's help: `wheel jobs --help`, `wheel tokens create --help` and
  `wheel dev --help` (each command imports the SDK, the store or the dev
  cluster only when it runs);
- `wheel jobs list` (gRPC, the table printed) and `wheel jobs list -o json`;
- curl's POST of the same ListJobs to the node's HTTP/JSON port: the floor,
  what the network and the node cost without a Python process starting.

`--before SRC` runs the same `wheel` commands with another source tree first on
the path (e.g. a worktree of an older commit's `src`) in the same session, so
before and after share the machine's mood. Figures: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.e2e.cluster import Cluster

import wheel
from wheel import eventloop
from wheel.local import LocalServices
from wheel.local.ports import free_port
from wheel.store import Store, migrate

PARTITIONS = 8
SRC = str(Path(__file__).resolve().parent.parent / "src")


def median_s(argv: list[str], env: dict[str, str], runs: int) -> float:
    """The median wall time of `runs` runs of argv (one warm-up run not counted)."""
    times = []
    for run in range(runs + 1):
        started = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True, timeout=60)
        if run:
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def env_for(src: str, token: str, address: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": src, "WHEEL_TOKEN": token, "WHEEL_ENDPOINTS": address,
            "COLUMNS": "80"}  # fmt: skip


async def main(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="wheel-cli-bench-"))
    os.chmod(root, 0o755)  # Postgres's user must reach its data dir
    services = LocalServices.start(root, durable=False)
    cluster: Cluster | None = None
    try:
        dsn = services.postgres.dsn()
        await migrate(dsn)
        (root / "logs").mkdir()
        cluster = Cluster(dsn, services.etcd.port, "cli-bench", logs=root / "logs")
        address = f"127.0.0.1:{free_port()}"
        http = f"127.0.0.1:{free_port()}"
        cluster.start_node("node-0", partitions=PARTITIONS, listen=address, http_listen=http)
        await cluster.ready(within=120, partitions=PARTITIONS)
        store = await Store.open(dsn, max_size=4)
        tenant = await store.tenants.create("bench")
        _, token = await store.tenants.create_token(tenant.id, "bench")
        await store.close()
        async with wheel.AsyncClient(address, token=token) as client:
            for n in range(10):
                await client.create_job(f"report-{n}", "reports.daily", wheel.cron("H 1 * * *"))

        python = [sys.executable, "-m", "wheel"]
        calls = [
            ("wheel --help", [*python, "--help"]),
            ("wheel --version", [*python, "--version"]),
            ("wheel jobs --help", [*python, "jobs", "--help"]),
            ("wheel tokens create --help", [*python, "tokens", "create", "--help"]),
            ("wheel dev --help", [*python, "dev", "--help"]),
            ("wheel jobs list", [*python, "jobs", "list"]),
            ("wheel jobs list -o json", [*python, "jobs", "list", "--output", "json"]),
        ]
        trees = [("after", SRC)] + ([("before", args.before)] if args.before else [])
        rows: list[tuple[str, dict[str, float]]] = []
        for name, argv in calls:
            rows.append((name, {label: median_s(argv, env_for(src, token, address), args.runs)
                                for label, src in trees}))  # fmt: skip
        curl = ["curl", "-sf", "-H", f"Authorization: Bearer {token}", "-H",
                "Content-Type: application/json", f"http://{http}/wheel.v1.Jobs/ListJobs",
                "-d", '{"pageSize": 100}']  # fmt: skip
        rows.append(("curl ListJobs (HTTP/JSON)", {"after": median_s(curl, dict(os.environ),
                                                                     args.runs)}))  # fmt: skip

        print(f"\nmedian wall time of {args.runs} runs (s); one node, 10 jobs\n")
        labels = [label for label, _ in trees]
        print("| call | " + " | ".join(f"{label} s" for label in labels) + " |")
        print("|---|" + "---:|" * len(labels))
        for name, figures in rows:
            cells = [f"{figures[label]:.3f}" if label in figures else "-" for label in labels]
            print(f"| {name} | " + " | ".join(cells) + " |")
    finally:
        if cluster is not None:
            cluster.stop()
        services.stop()
        shutil.rmtree(root, ignore_errors=True)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--before", help="another source tree's src directory to compare")
    return parser.parse_args()


if __name__ == "__main__":
    eventloop.run(main(parse()))
