"""The local servers' shared facts for tests: where their data lives, the template
database, and cleaning a cluster's etcd keys."""

from __future__ import annotations

import tempfile
from pathlib import Path

from wheel.coordinator.etcd import Etcd
from wheel.local import LocalServices

TEMPLATE_DATABASE = "wheel_template"


def service_data_root() -> Path:
    """A fresh directory for server data that Postgres's user can reach when we are root.

    Not pytest's tmp_path: /tmp/pytest-of-root is private to root by design.
    """
    root = Path(tempfile.mkdtemp(prefix="wheel-test-"))
    root.chmod(0o755)  # ours, made for this; nothing above it is loosened
    return root


async def delete_cluster_keys(local_services: LocalServices, cluster: str) -> None:
    """Remove everything a cluster of that name left in etcd (`/wheel/<cluster>/`)."""
    client = await Etcd.connect(local_services.etcd.endpoint)
    try:
        await client.delete_prefix(f"/wheel/{cluster}/")
    finally:
        await client.close()
