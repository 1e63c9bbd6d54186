"""Start-up time of the embedded etcd and Postgres: fresh data dir and restart.

.venv/bin/python benchmarks/local_services_startup.py [runs]
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from wheel.local import LocalServices


def main(runs: int) -> None:
    rows: dict[str, list[float]] = {k: [] for k in ("etcd", "postgres", "etcd2", "postgres2")}
    for _ in range(runs):
        root = Path(tempfile.mkdtemp(prefix="wheel-bench-"))
        root.chmod(0o755)
        with LocalServices.start(root, durable=False) as first:
            rows["etcd"].append(first.etcd_start_s)
            rows["postgres"].append(first.postgres_start_s)
        with LocalServices.start(root, durable=False) as again:
            rows["etcd2"].append(again.etcd_start_s)
            rows["postgres2"].append(again.postgres_start_s)
        shutil.rmtree(root)
    print(f"{'service':<10} {'data dir':<15} {'median s':>9} {'max s':>7}  ({runs} runs)")
    for key, label in [
        ("etcd", "fresh"),
        ("postgres", "fresh (initdb)"),
        ("etcd2", "existing"),
        ("postgres2", "existing"),
    ]:
        service = key.rstrip("2")
        values = rows[key]
        print(f"{service:<10} {label:<15} {statistics.median(values):>9.3f} {max(values):>7.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
