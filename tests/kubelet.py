"""The kubelet's part of running deploy/k8s, done with local processes.

What `kubectl apply -k` would apply is what `kubectl kustomize` renders; a pod's
container is started as the image would start it (the Dockerfile's ENTRYPOINT, the
container's args) with the environment the kubelet would give it: ConfigMaps through
`envFrom`, `fieldRef`s, Secrets from test values, `$(VAR)` expanded, and mounted Secrets
as files in a directory of the pod's own. Its probes run as the kubelet runs them: the
startup probe until it succeeds, then liveness and readiness, each every periodSeconds
with its timeout, counting consecutive failures against failureThreshold.

Docker and a cluster are not available here, so two things stand in for a pod's network
namespace: each pod gets a loopback address of its own (127.a.b.c), where it binds what
it would bind on 0.0.0.0; and the cluster's DNS names of Services and pods are replaced,
in the environment, by the addresses of the pods behind them.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import random
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from wheel.local.process import spawn

ROOT = Path(__file__).resolve().parents[1]
K8S = ROOT / "deploy" / "k8s"
BASE = K8S / "base"
BIN = Path(sys.executable).parent

Manifest = dict[str, Any]

GENERATED = re.compile(r"-[a-z0-9]{10}$")
"""The hash kustomize appends to a generated ConfigMap's name."""


def render(directory: Path) -> list[Manifest]:
    """What `kubectl kustomize` makes of a kustomization: what `kubectl apply -k` applies."""
    rendered = subprocess.run(
        ["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=60
    )
    assert rendered.returncode == 0, rendered.stderr
    return [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]


def by_name(documents: list[Manifest]) -> dict[tuple[str, str], Manifest]:
    """Objects by (kind, name); a generated ConfigMap also by the name its generator gives,
    before kustomize appends the hash of its content."""
    objects: dict[tuple[str, str], Manifest] = {}
    for doc in copy.deepcopy(documents):
        name = doc["metadata"]["name"]
        objects[(doc["kind"], name)] = doc
        if doc["kind"] == "ConfigMap":
            objects[("ConfigMap", GENERATED.sub("", name))] = doc
    return objects


def container_of(workload: Manifest) -> Manifest:
    (container,) = workload["spec"]["template"]["spec"]["containers"]
    return dict(container)


def pod_env(
    workload: Manifest,
    objects: Mapping[tuple[str, str], Manifest],
    *,
    pod_name: str,
    secrets: Mapping[tuple[str, str], str],
    pod_ip: str = "10.0.0.1",
) -> dict[str, str]:
    """The container's environment as the kubelet builds it for a pod named `pod_name`:
    `secrets` holds each (Secret, key) the pod refers to."""
    fields = {
        "metadata.name": pod_name,
        "metadata.namespace": workload["metadata"].get("namespace", "default"),
        "status.podIP": pod_ip,
    }
    container = container_of(workload)
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(objects[("ConfigMap", source["configMapRef"]["name"])]["data"])
    for entry in container.get("env", []):
        if "value" in entry:
            value = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], entry["value"])
        elif "fieldRef" in entry["valueFrom"]:
            value = fields[entry["valueFrom"]["fieldRef"]["fieldPath"]]
        else:
            ref = entry["valueFrom"]["secretKeyRef"]
            value = secrets[(ref["name"], ref["key"])]
        env[entry["name"]] = value
    return env


def entrypoint() -> list[str]:
    """The image's ENTRYPOINT, from the Dockerfile's final stage, as this venv runs it."""
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    (last,) = [line for line in lines if line.startswith("ENTRYPOINT ")][-1:]
    command = yaml.safe_load(last.removeprefix("ENTRYPOINT "))
    assert isinstance(command, list), last
    return [str(BIN / command[0]), *command[1:]]


def pod_address() -> str:
    """A loopback address of a pod's own (the whole 127.0.0.0/8 reaches this machine)."""
    return f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"


@dataclass
class ProbeState:
    """One probe's record, as the kubelet keeps it."""

    spec: Manifest
    successes: int = 0
    failures: int = 0
    consecutive_failures: int = 0
    last: tuple[int, str] = (0, "not probed yet")

    @property
    def tripped(self) -> bool:
        return self.consecutive_failures >= self.spec.get("failureThreshold", 3)


@dataclass
class Pod:
    """One pod of a workload, its container run as a local process."""

    workload: Manifest
    name: str
    env: dict[str, str]
    directory: Path
    ip: str = field(default_factory=pod_address)
    popen: subprocess.Popen[bytes] | None = None
    probes: dict[str, ProbeState] = field(default_factory=dict)
    ready: bool = False
    started: bool = False
    restarts_due: list[str] = field(default_factory=list)
    """Each time the kubelet would have restarted the container, and why."""
    _prober: asyncio.Task[None] | None = None

    @property
    def container(self) -> Manifest:
        return container_of(self.workload)

    @property
    def log_path(self) -> Path:
        return self.directory / f"{self.name}.log"

    def port(self, name_or_number: str | int) -> int:
        named = {p["name"]: p["containerPort"] for p in self.container.get("ports", [])}
        return int(named.get(name_or_number, name_or_number))

    def start(self) -> None:
        """Start the container's process and the kubelet's probes of it."""
        argv = [*entrypoint(), *self.container.get("args", [])]
        self.popen = spawn(
            argv, log_path=self.log_path, death_signal=signal.SIGKILL, cwd=ROOT,
            env={"PATH": os.environ["PATH"], "PYTHONUNBUFFERED": "1", **self.env},
        )  # fmt: skip
        self.ready = self.started = False
        self.probes = {
            kind: ProbeState(self.container[kind])
            for kind in ("startupProbe", "readinessProbe", "livenessProbe")
            if kind in self.container
        }
        self._prober = asyncio.create_task(self._probe_all(), name=f"kubelet {self.name}")

    async def terminate(self) -> int:
        """SIGTERM, then SIGKILL after terminationGracePeriodSeconds; the exit code."""
        assert self.popen is not None
        await self._stop_probing()
        grace_s = self.workload["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30)
        self.popen.send_signal(signal.SIGTERM)
        try:
            return await asyncio.to_thread(self.popen.wait, grace_s)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            await asyncio.to_thread(self.popen.wait)
            raise AssertionError(f"{self.name} outlived its {grace_s} s grace") from None

    async def kill(self) -> None:
        await self._stop_probing()
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()
            await asyncio.to_thread(self.popen.wait)

    async def _stop_probing(self) -> None:
        if self._prober is not None:
            self._prober.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._prober
            self._prober = None
        self.ready = False

    def probe_once(self, kind: str) -> tuple[int, str]:
        """One HTTP GET as the probe describes it: (status, body); (0, why) on no answer."""
        get = self.probes[kind].spec["httpGet"]
        url = f"http://{self.ip}:{self.port(get['port'])}{get['path']}"
        timeout_s = self.probes[kind].spec.get("timeoutSeconds", 1)
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as refused:
            return refused.code, refused.read().decode()
        except (urllib.error.URLError, OSError) as exc:
            return 0, str(exc)

    async def _probe(self, kind: str) -> bool:
        state = self.probes[kind]
        state.last = await asyncio.to_thread(self.probe_once, kind)
        ok = 200 <= state.last[0] < 400
        if ok:
            state.successes += 1
            state.consecutive_failures = 0
        else:
            state.failures += 1
            state.consecutive_failures += 1
        return ok

    async def _probe_all(self) -> None:
        """The kubelet's loop: startup until it succeeds, then liveness and readiness, each
        on its own period."""
        if "startupProbe" in self.probes:
            spec = self.probes["startupProbe"].spec
            while not await self._probe("startupProbe"):
                if self.probes["startupProbe"].tripped:
                    self.restarts_due.append(f"startup: {self.probes['startupProbe'].last}")
                    return
                await asyncio.sleep(spec.get("periodSeconds", 10))
        self.started = True
        async with asyncio.TaskGroup() as probes:
            probes.create_task(self._keep_probing("livenessProbe"))
            probes.create_task(self._keep_probing("readinessProbe"))

    async def _keep_probing(self, kind: str) -> None:
        if kind not in self.probes:
            self.ready = self.ready or kind == "readinessProbe"
            return
        state = self.probes[kind]
        while True:
            ok = await self._probe(kind)
            if kind == "readinessProbe":
                if ok:
                    self.ready = True
                elif state.tripped:
                    self.ready = False
            elif state.tripped:
                self.restarts_due.append(f"liveness: {state.last}")
            await asyncio.sleep(state.spec.get("periodSeconds", 10))

    async def until(self, condition: str, within_s: float) -> None:
        """Wait until the pod is "started" or "ready" (or not "ready": "unready")."""
        wanted = {
            "started": lambda: self.started,
            "ready": lambda: self.ready,
            "unready": lambda: not self.ready,
        }[condition]
        try:
            async with asyncio.timeout(within_s):
                while not wanted():
                    assert not self.restarts_due, (self.name, self.restarts_due)
                    exited = self.popen.poll() if self.popen is not None else None
                    assert exited is None, f"{self.name} exited ({exited}): {self.tail()}"
                    await asyncio.sleep(0.1)  # the kubelet's own record: polled, as kubectl does
        except TimeoutError:
            raise AssertionError(
                f"{self.name}: not {condition} within {within_s} s; probes "
                f"{ {k: s.last for k, s in self.probes.items()} }; log: {self.tail()}"
            ) from None

    def tail(self, lines: int = 15) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


_ANY_ADDRESS = re.compile(r"(?<![\d.])0\.0\.0\.0(?=:\d+$)")
"""0.0.0.0 as the host of a `host:port` listen address (not in a network like 10.0.0.0/8)."""


def resolve(env: Mapping[str, str], names: Mapping[str, str], bind: str) -> dict[str, str]:
    """The environment as seen from a pod at `bind`: a listen address on 0.0.0.0 is on the
    pod's own address, and each cluster DNS name in `names` (longest first) becomes the
    address behind it."""
    resolved = {}
    for key, value in env.items():
        value = _ANY_ADDRESS.sub(bind, value)
        for name in sorted(names, key=len, reverse=True):
            value = value.replace(name, names[name])
        resolved[key] = value
    return resolved


def commented_settings(env_file: Path, prefix: str) -> dict[str, str]:
    """The commented-out `# NAME=value` lines of an env file whose NAME starts with `prefix`:
    what an operator uncomments to turn a feature on."""
    found = re.findall(rf"^# ({re.escape(prefix)}[A-Z_]*)=(\S+)$", env_file.read_text(), re.M)
    return dict(found)


def mounted(value: str, mounts: Mapping[str, Path]) -> str:
    """A path inside a mounted volume, as the process sees it here."""
    for mount_path, local in mounts.items():
        if value.startswith(mount_path + "/"):
            return str(local / value.removeprefix(mount_path + "/"))
    return value
