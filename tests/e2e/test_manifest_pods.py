"""deploy/k8s run as the kubelet would run it: the StatefulSet's node, the executor
Deployment's executor and the migration Job, each container's command with its args and
environment as local processes, probed as the kubelet probes them.

On a fresh database the node must start (startup probe), stay alive (liveness) and say
it is not ready because the schema is missing, for as long as the migration takes; the
Job's command migrates; the node becomes Ready, and so does an executor once it streams
to it; a node rolled (SIGTERM within its grace, the same pod name again) becomes Ready
again. Plaintext, and TLS on the gRPC port as scheduler.env's commented lines turn it on:
the probes are plain HTTP on the metrics port either way.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.kubelet import (
    BASE,
    Manifest,
    Pod,
    by_name,
    commented_settings,
    container_of,
    mounted,
    pod_address,
    pod_env,
    render,
    resolve,
)
from tests.services import delete_cluster_keys
from tests.tls_material import Authority
from wheel.local import LocalServices
from wheel.store import Store

NAMESPACE = "wheel"

pytestmark = pytest.mark.timeout(300)  # two processes started and one rolled, on real probes


@pytest.fixture
async def pods(local_services: LocalServices) -> AsyncIterator[list[Pod]]:
    """Every pod a test starts; whatever still runs is killed afterwards."""
    started: list[Pod] = []
    yield started
    for pod in started:
        await pod.kill()


async def _executor_token(dsn: str) -> str:
    store = await Store.open(dsn, min_size=1, max_size=1)
    try:
        return (await store.tenants.create_executor_token("wheel-executor"))[1]
    finally:
        await store.close()


@pytest.mark.parametrize("tls", [False, True], ids=["plaintext", "tls"])
async def test_the_manifests_processes_start_slowly_become_ready_and_roll(
    tls: bool,
    empty_database: str,
    local_services: LocalServices,
    pods: list[Pod],
    tmp_path: Path,
) -> None:
    objects = by_name(render(BASE))
    statefulset = objects[("StatefulSet", "wheel-scheduler")]
    deployment = objects[("Deployment", "wheel-executor")]
    job = objects[("Job", "wheel-migrate")]
    cluster = f"pods-{uuid.uuid4().hex[:10]}"
    node_name, node_ip = "wheel-scheduler-0", pod_address()
    names = {  # cluster DNS: the headless Service and the pod's own name
        f"{node_name}.wheel-scheduler.{NAMESPACE}.svc": node_ip,
        f"wheel-scheduler.{NAMESPACE}.svc": node_ip,
    }
    secrets = {("wheel-secrets", "postgres-dsn"): empty_database}
    # What the README has the operator edit: etcd, the cluster's name, the task modules.
    edits = {
        "WHEEL_ETCD_ENDPOINT": f"http://127.0.0.1:{local_services.etcd.port}",
        "WHEEL_CLUSTER": cluster,
    }
    node_mounts: dict[str, Path] = {}
    executor_mounts: dict[str, Path] = {}
    node_env = pod_env(statefulset, objects, pod_name=node_name, secrets=secrets, pod_ip=node_ip)
    node_env |= edits
    if tls:  # the wheel-tls Secret, mounted, and scheduler.env's TLS lines uncommented
        authority = Authority.make(tmp_path)
        cert, key = authority.issue(tmp_path, node_name, addresses=(node_ip,))
        secret_dir = tmp_path / "wheel-tls"
        secret_dir.mkdir()
        (secret_dir / "tls.crt").write_bytes(cert.read_bytes())
        (secret_dir / "tls.key").write_bytes(key.read_bytes())
        (secret_dir / "ca.crt").write_bytes(authority.path.read_bytes())
        node_mounts = {_mount_path(statefulset, "tls"): secret_dir}
        executor_mounts = {_mount_path(deployment, "tls"): secret_dir}
        uncommented = commented_settings(BASE / "scheduler.env", "WHEEL_TLS_")
        assert set(uncommented) == {"WHEEL_TLS_CERT_FILE", "WHEEL_TLS_KEY_FILE"}
        node_env |= uncommented
    node_env = {k: mounted(v, node_mounts) for k, v in resolve(node_env, names, node_ip).items()}
    node = Pod(statefulset, node_name, node_env, tmp_path, ip=node_ip)
    pods.append(node)
    try:
        node.start()
        startup = container_of(statefulset)["startupProbe"]
        await node.until("started", within_s=startup["periodSeconds"] * startup["failureThreshold"])

        # A fresh database: alive, not ready, saying why, for as long as it takes.
        waiting = node.probes["readinessProbe"]
        liveness = node.probes["livenessProbe"]
        while waiting.successes + waiting.failures < 2 or liveness.successes < 1:
            await node.until("unready", within_s=30)
            assert not node.restarts_due
            await _tick()
        assert waiting.successes == 0
        assert liveness.failures == 0
        code, why = waiting.last
        assert code == 503
        assert "run `wheel migrate` (or the migration Job): missing 0001_" in why, why

        # The migration Job's container, then Ready.
        migrate = Pod(job, "wheel-migrate-x1", pod_env(job, objects, pod_name="wheel-migrate-x1",
                      secrets=secrets), tmp_path, ip=pod_address())  # fmt: skip
        pods.append(migrate)
        migrate.start()
        assert migrate.popen is not None
        assert await _exit_code(migrate) == 0, migrate.tail()
        await node.until("ready", within_s=60)

        # An executor, once it streams to the node.
        executor_name = "wheel-executor-7d9f-x2"
        executor_ip = pod_address()
        executor_env = pod_env(deployment, objects, pod_name=executor_name, pod_ip=executor_ip,
                               secrets={("wheel-executor-token", "executor-token"):
                                        await _executor_token(empty_database)})  # fmt: skip
        executor_env |= {"WHEEL_TASKS": "tests.e2e.tasks"}
        if tls:
            ca = commented_settings(BASE / "executor.env", "WHEEL_TLS_")
            assert set(ca) == {"WHEEL_TLS_CA_FILE"}
            executor_env |= {"WHEEL_TLS": "true", **ca}
        executor_env = {k: mounted(v, executor_mounts)
                        for k, v in resolve(executor_env, names, executor_ip).items()}  # fmt: skip
        executor = Pod(deployment, executor_name, executor_env, tmp_path, ip=executor_ip)
        pods.append(executor)
        executor.start()
        await executor.until("ready", within_s=60)

        # A rolling update replaces the node: the same pod name comes back Ready.
        assert await node.terminate() == 0, node.tail()
        await executor.until("unready", within_s=30)
        node.start()
        await node.until("ready", within_s=90)
        await executor.until("ready", within_s=60)
        assert not node.restarts_due
        assert not executor.restarts_due
    finally:
        await delete_cluster_keys(local_services, cluster)


def _mount_path(workload: Manifest, volume: str) -> str:
    container = container_of(workload)
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume]
    return str(mount["mountPath"])


async def _tick() -> None:
    await asyncio.sleep(0.5)  # the kubelet probes on its own period: there is no event


async def _exit_code(pod: Pod) -> int:
    assert pod.popen is not None
    return await asyncio.to_thread(pod.popen.wait, 120)
