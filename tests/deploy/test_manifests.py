"""deploy/k8s and the Dockerfile against the code they run: offline, in a few seconds.

What is checked: every manifest against the Kubernetes OpenAPI schemas
(`kubernetes-validate`, strict: unknown fields fail), that each
kustomization's references resolve and that it renders with `kubectl
kustomize` (kubectl comes with this machine kind), and the invariants that tie the
manifests to the code: node id from the pod name, probes on the ports the
processes serve, ConfigMap keys that are real options with values the real
CLIs accept, termination grace covering the hand-over and drain times.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import re
import shlex
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner

from tests.kubelet import BASE, K8S, ROOT, by_name, container_of, pod_env, render
from wheel.cli.executor import executor
from wheel.cli.scheduler import scheduler
from wheel.executor.config import ExecutorConfig
from wheel.model.notifications import DEFAULT_DENIED
from wheel.probes import STALL_AFTER_S
from wheel.scheduler.config import SchedulerConfig

# The oldest Kubernetes the manifests claim to support (README.md there) and the newest
# schema bundled with kubernetes-validate.
KUBERNETES_VERSIONS = ("1.31", kubernetes_validate.latest_version())
# Fields of kustomization.yaml used here; anything else must be added knowingly (and
# would not be understood by this test, which does not render).
KUSTOMIZATION_FIELDS = {
    "apiVersion", "kind", "namespace", "resources", "images", "configMapGenerator",
    "generatorOptions",
}  # fmt: skip
PLACEHOLDERS = {
    ("wheel-secrets", "postgres-dsn"): "postgresql://wheel@postgres/wheel",
    ("wheel-executor-token", "executor-token"): "whl_placeholder",
}
# `await self._server.stop(grace=1.0)` in SchedulerNode.stop (src/wheel/scheduler/node.py).
SERVER_STOP_GRACE_S = 1.0
# Slack for process start-up of the shutdown path, logging and the kubelet's own timing.
MARGIN_S = 5.0

Manifest = dict[str, Any]
OPERATOR_KINDS = {"postgresql.cnpg.io/v1"}
"""Custom resources of operators that are prerequisites (their schemas are the operators'):
checked by the tests of their own below."""


def _yaml_files() -> list[Path]:
    return sorted(K8S.rglob("*.yaml"))


def _documents(path: Path) -> list[Manifest]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def _manifests() -> Iterator[tuple[Path, Manifest]]:
    for path in _yaml_files():
        for doc in _documents(path):
            if doc.get("kind") != "Kustomization":
                yield path, doc


@functools.cache
def _rendered_base() -> tuple[Manifest, ...]:
    return tuple(render(BASE))


def _base() -> dict[tuple[str, str], Manifest]:
    """The rendered base's objects by (kind, name)."""
    return by_name(list(_rendered_base()))


def _container(workload: Manifest) -> Manifest:
    return container_of(workload)


def _port(address: str) -> int:
    return int(address.rpartition(":")[2])


def _env(workload: Manifest, base: Mapping[tuple[str, str], Manifest]) -> dict[str, str]:
    """The container's environment as a pod named `<name>-0` sees it, secrets as placeholders."""
    return pod_env(
        workload, base, pod_name=f"{workload['metadata']['name']}-0", secrets=PLACEHOLDERS
    )


# -- (a) schemas -----------------------------------------------------------------------


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("path", _yaml_files(), ids=lambda p: str(p.relative_to(K8S)))
def test_every_manifest_validates_against_the_kubernetes_schemas(path: Path, version: str) -> None:
    documents = [doc for doc in _documents(path) if doc.get("kind") != "Kustomization"
                 and doc.get("apiVersion") not in OPERATOR_KINDS]  # fmt: skip
    for doc in documents:
        kubernetes_validate.validate(doc, version, strict=True)
        assert doc["metadata"].get("name"), f"{path}: a {doc['kind']} without a name"


# -- (b) kustomizations: references only, not rendering --------------------------------


@pytest.mark.parametrize(
    "path", sorted(K8S.rglob("kustomization.yaml")), ids=lambda p: str(p.relative_to(K8S))
)
def test_kustomization_references_resolve(path: Path) -> None:
    """Each listed resource exists and parses, no two define the same object, images are used.

    (Rendering is the next test's: this one names what is wrong when it fails.)
    """
    (kustomization,) = _documents(path)
    assert set(kustomization) <= KUSTOMIZATION_FIELDS, set(kustomization) - KUSTOMIZATION_FIELDS
    assert kustomization["apiVersion"] == "kustomize.config.k8s.io/v1beta1"
    assert kustomization["kind"] == "Kustomization"
    seen: dict[tuple[str, str, str], Path] = {}
    images: set[str] = set()

    def collect(directory: Path, listing: Manifest) -> None:
        for entry in listing["resources"]:
            target = (directory / entry).resolve()
            assert target.exists(), f"{path}: {entry} does not exist"
            if target.is_dir():
                (nested,) = _documents(target / "kustomization.yaml")
                collect(target, nested)
                continue
            for doc in _documents(target):
                namespace = kustomization.get("namespace", doc["metadata"].get("namespace", ""))
                key = (doc["kind"], doc["metadata"]["name"], namespace)
                assert key not in seen, f"{key} in both {seen[key]} and {target}"
                seen[key] = target
                spec = doc.get("spec", {}).get("template", {}).get("spec", {})
                images.update(c["image"] for c in spec.get("containers", []))

    collect(path.parent, kustomization)
    assert seen
    for generator in kustomization.get("configMapGenerator", []):
        for env_file in generator["envs"]:
            assert (path.parent / env_file).is_file(), f"{path}: {env_file} does not exist"
    for image in kustomization.get("images", []):
        assert image["name"] in images, f"{path}: image {image['name']} is used by no container"


@pytest.mark.parametrize(
    "path", sorted(K8S.rglob("kustomization.yaml")), ids=lambda p: str(p.relative_to(K8S))
)
def test_the_kustomization_renders_with_kubectl(path: Path) -> None:
    """`kubectl kustomize` (kubectl is part of this machine kind's image: the env package
    list) renders it offline; what it renders validates, in one namespace, images named."""
    documents = render(path.parent)
    kinds = {doc["kind"] for doc in documents}
    assert {"StatefulSet", "Deployment", "Job", "ConfigMap", "Service"} <= kinds
    for doc in documents:
        kubernetes_validate.validate(doc, KUBERNETES_VERSIONS[-1], strict=True)
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "wheel", doc["metadata"]["name"]
        spec = doc.get("spec", {}).get("template", {}).get("spec", {})
        for container in spec.get("containers", []):
            assert "/" in container["image"], f"{container['image']}: not set by `images:`"
    if path.parent.name == "autoscaling":
        assert "HorizontalPodAutoscaler" in kinds
    if path.parent.name == "trial-etcd":
        assert any(d["metadata"]["name"] == "etcd" and d["kind"] == "Service" for d in documents)


@pytest.mark.parametrize(
    "path", sorted(K8S.rglob("kustomization.yaml")), ids=lambda p: str(p.relative_to(K8S))
)
def test_no_kustomization_includes_a_directory_that_contains_it(path: Path) -> None:
    """Kustomize refuses a root that lies inside one it loads ("cycle detected"): overlays
    sit beside the base, never inside it. (Found by rendering with kubectl kustomize.)"""
    for entry in _documents(path)[0]["resources"]:
        target = (path.parent / entry).resolve()
        if target.is_dir():
            assert not path.parent.resolve().is_relative_to(target), f"{path}: {entry}"


def test_examples_outside_kustomizations_are_deliberate() -> None:
    """Secrets, the Ingress and the adapter rules are examples; every other file is applied."""
    listed: set[Path] = set()
    for path in K8S.rglob("kustomization.yaml"):
        listed.add(path)
        for entry in _documents(path)[0]["resources"]:
            listed.add((path.parent / entry).resolve())
    unlisted = {p.relative_to(K8S).as_posix() for p in _yaml_files() if p.resolve() not in listed}
    assert unlisted == {
        "base/ingress.example.yaml",
        "base/secrets.example.yaml",
        "overlays/autoscaling/prometheus-adapter-rules.example.yaml",
        "prerequisites/postgres-cluster.example.yaml",
    }


def test_the_postgres_prerequisite_commits_on_a_synchronous_standby_in_another_zone() -> None:
    """CloudNativePG's Cluster, as docs/operations.md asks: a standby every commit waits for,
    instances apart, and the DSN the README gives naming its read-write service."""
    (cluster,) = _documents(K8S / "prerequisites" / "postgres-cluster.example.yaml")
    assert (cluster["apiVersion"], cluster["kind"]) == ("postgresql.cnpg.io/v1", "Cluster")
    spec = cluster["spec"]
    assert spec["instances"] >= 3
    synchronous = spec["postgresql"]["synchronous"]
    assert synchronous["method"] in ("any", "first")
    assert synchronous["number"] >= 1
    assert synchronous["dataDurability"] == "required", "preferred would drop to asynchronous"
    assert spec["affinity"]["topologyKey"] == "topology.kubernetes.io/zone"
    assert spec["affinity"]["podAntiAffinityType"] == "required"
    service = f"{cluster['metadata']['name']}-rw.{cluster['metadata']['namespace']}.svc"
    assert service in (K8S / "README.md").read_text()


# -- (c) invariants tying the manifests to the code ------------------------------------


def _scheduler_names() -> set[str]:
    return {f"WHEEL_{f.name.upper()}" for f in dataclasses.fields(SchedulerConfig)}


def _executor_names() -> set[str]:
    names: set[str] = set()
    for param in executor.params:
        envvar = param.envvar
        names.update([envvar] if isinstance(envvar, str) else envvar or [])
    return names | {"WHEEL_EXECUTOR_TOKEN"}  # read by the command itself, never a flag


def test_every_configmap_key_is_a_real_option() -> None:
    base = _base()
    shared = base[("ConfigMap", "wheel-config")]["data"]
    executor_only = base[("ConfigMap", "wheel-executor-config")]["data"]
    assert set(shared) <= _scheduler_names() | _executor_names(), (
        set(shared) - _scheduler_names() - _executor_names()
    )
    assert set(executor_only) <= _executor_names(), set(executor_only) - _executor_names()
    assert all(isinstance(value, str) for value in {**shared, **executor_only}.values())


def test_the_etcd_tls_and_auth_settings_are_options_reading_the_mounted_secret() -> None:
    """The commented WHEEL_ETCD_* lines of the ConfigMap name real options, and their files
    lie in the StatefulSet's mount of the wheel-etcd Secret, whose keys they name."""
    text = (BASE / "scheduler.env").read_text()
    commented = dict(re.findall(r"^# (WHEEL_ETCD_[A-Z_]+)=(\S+)$", text, re.MULTILINE))
    assert set(commented) == {
        "WHEEL_ETCD_CA_FILE", "WHEEL_ETCD_CERT_FILE", "WHEEL_ETCD_KEY_FILE", "WHEEL_ETCD_USER",
        "WHEEL_ETCD_PASSWORD_FILE",
    }  # fmt: skip
    assert set(commented) <= _scheduler_names()
    pod = _base()[("StatefulSet", "wheel-scheduler")]["spec"]["template"]["spec"]
    (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "etcd"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == "etcd"]
    assert volume["secret"]["secretName"] == "wheel-etcd"
    assert volume["secret"]["optional"] is True
    example = {d["metadata"]["name"]: d for d in _documents(BASE / "secrets.example.yaml")}[
        "wheel-etcd"
    ]
    for key, value in commented.items():
        if key.endswith("_FILE"):
            path = Path(value)
            assert path.parent == Path(mount["mountPath"]), key
            assert path.name in example["stringData"], key


def test_executors_hold_no_etcd_setting_and_learn_the_cluster_from_the_nodes() -> None:
    base = _base()
    executor_pod = base[("Deployment", "wheel-executor")]["spec"]["template"]["spec"]
    env = _env(base[("Deployment", "wheel-executor")], base)
    assert not [name for name in env if name.startswith("WHEEL_ETCD")]
    assert "etcd" not in {v["name"] for v in executor_pod["volumes"]}
    host, port = env["WHEEL_NODES"].rsplit(":", 1)
    service = base[("Service", "wheel-scheduler")]
    assert host == f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
    assert service["spec"]["clusterIP"] == "None"  # headless: it resolves to the nodes
    assert int(port) in {p["port"] for p in service["spec"]["ports"]}


def test_the_node_accepts_its_pod_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """`wheel scheduler` parses the StatefulSet's environment into a valid SchedulerConfig."""
    base = _base()
    env = _env(base[("StatefulSet", "wheel-scheduler")], base)
    seen: list[SchedulerConfig] = []

    class Node:
        def __init__(self, config: SchedulerConfig) -> None:
            seen.append(config)

        async def run(self, stop: object) -> None:
            return None

    monkeypatch.setattr("wheel.scheduler.node.SchedulerNode", Node)
    monkeypatch.setattr("wheel.signals.wait_for_stop_signal", lambda: None)
    result = CliRunner().invoke(scheduler, [], env=env)
    assert result.exit_code == 0, result.output
    (config,) = seen
    assert config.node_id == "wheel-scheduler-0"
    assert config.advertise == "wheel-scheduler-0.wheel-scheduler.wheel.svc:7070"


def test_the_executor_accepts_its_pod_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """`wheel executor` parses the Deployment's environment into a valid ExecutorConfig."""
    base = _base()
    env = _env(base[("Deployment", "wheel-executor")], base)
    seen: list[ExecutorConfig] = []

    async def capture(config: ExecutorConfig) -> None:
        seen.append(config)

    monkeypatch.setattr("wheel.cli.executor.logs.configure", lambda level: None)
    monkeypatch.setattr("wheel.executor.executor.run_executor", capture)
    result = CliRunner().invoke(executor, [], env=env)
    assert result.exit_code == 0, result.output
    (config,) = seen
    assert config.executor_id == "wheel-executor-0"
    assert config.nodes == ("wheel-scheduler.wheel.svc:7070",)
    assert config.task_modules == tuple(shlex.split(env["WHEEL_TASKS"]))
    assert config.token == "whl_placeholder"


def test_node_id_comes_from_the_pod_name_and_advertises_the_headless_name() -> None:
    base = _base()
    statefulset = base[("StatefulSet", "wheel-scheduler")]
    env = {entry["name"]: entry for entry in _container(statefulset)["env"]}
    assert env["WHEEL_NODE_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    headless = base[("Service", statefulset["spec"]["serviceName"])]
    assert headless["spec"]["clusterIP"] == "None"
    # Executors keep streaming results to a node that is handing over (not ready).
    assert headless["spec"]["publishNotReadyAddresses"] is True
    advertise = _env(statefulset, base)["WHEEL_ADVERTISE"]
    assert advertise.split(".")[1] == headless["metadata"]["name"]


def _http_probes(container: Manifest, metrics_port: int) -> dict[str, Manifest]:
    """The container's probes, each an HTTP GET of the plain metrics port: its path by kind."""
    paths = {}
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = container[kind]
        assert set(probe) & {"grpc", "tcpSocket", "exec"} == set(), kind
        port = probe["httpGet"]["port"]
        named = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert named.get(port, port) == metrics_port, kind
        paths[kind] = probe
    return paths


def _assert_probes_fit_the_process(container: Manifest, metrics_port: int) -> None:
    """Started and alive on /livez (the loop turns), ready on /readyz; the startup probe
    waits long enough for a slow start, liveness is patient with a busy process."""
    probes = _http_probes(container, metrics_port)
    assert probes["startupProbe"]["httpGet"]["path"] == "/livez"
    assert probes["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert probes["readinessProbe"]["httpGet"]["path"] == "/readyz"
    startup = probes["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 120
    liveness = probes["livenessProbe"]
    assert liveness["periodSeconds"] * liveness["failureThreshold"] >= 60
    assert liveness["timeoutSeconds"] >= 5
    # A stalled loop fails /livez only after STALL_AFTER_S: the probe must not fail sooner.
    assert liveness["periodSeconds"] * liveness["failureThreshold"] > STALL_AFTER_S


def test_probes_and_ports_are_the_ones_the_node_serves() -> None:
    base = _base()
    statefulset = base[("StatefulSet", "wheel-scheduler")]
    env = _env(statefulset, base)
    container = _container(statefulset)
    grpc_port, metrics_port = _port(env["WHEEL_LISTEN"]), _port(env["WHEEL_METRICS_LISTEN"])
    http_port = _port(env["WHEEL_HTTP_LISTEN"])
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"grpc": grpc_port, "http": http_port, "metrics": metrics_port}
    assert _port(env["WHEEL_ADVERTISE"]) == grpc_port
    _assert_probes_fit_the_process(container, metrics_port)
    for service in (base[("Service", "wheel-scheduler")], base[("Service", "wheel-api")]):
        assert {p["name"]: p["port"] for p in service["spec"]["ports"]}["grpc"] == grpc_port
        assert service["spec"]["selector"] == statefulset["spec"]["selector"]["matchLabels"]
    headless = {p["name"]: p for p in base[("Service", "wheel-scheduler")]["spec"]["ports"]}
    assert headless["metrics"]["port"] == metrics_port
    api_ports = {p["name"]: p for p in base[("Service", "wheel-api")]["spec"]["ports"]}
    assert api_ports["http"]["targetPort"] == "http"
    # Scraped once per node: the Service clients use carries no metrics port.
    assert "metrics" not in api_ports


def test_executor_probes_and_port_are_the_ones_it_serves() -> None:
    base = _base()
    deployment = base[("Deployment", "wheel-executor")]
    metrics_port = _port(_env(deployment, base)["WHEEL_METRICS_LISTEN"])
    container = _container(deployment)
    assert [p["containerPort"] for p in container["ports"]] == [metrics_port]
    _assert_probes_fit_the_process(container, metrics_port)


def test_the_ingress_example_reaches_the_nodes_http_port_over_tls() -> None:
    (ingress,) = _documents(BASE / "ingress.example.yaml")
    kubernetes_validate.validate(ingress, KUBERNETES_VERSIONS[-1], strict=True)
    (tls,) = ingress["spec"]["tls"]
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] in tls["hosts"]
    (path,) = rule["http"]["paths"]
    backend = path["backend"]["service"]
    service = _base()[("Service", backend["name"])]
    assert backend["port"]["name"] in {p["name"] for p in service["spec"]["ports"]}
    assert "publishNotReadyAddresses" not in service["spec"], "ready nodes only"


def test_the_session_cookie_is_secure_at_the_ingress_host() -> None:
    """Browsers reach the dashboard at the Ingress host over https: the nodes are told
    that origin, which makes the session cookie Secure behind the TLS-terminating proxy."""
    (ingress,) = _documents(BASE / "ingress.example.yaml")
    (rule,) = ingress["spec"]["rules"]
    base = _base()
    public = _env(base[("StatefulSet", "wheel-scheduler")], base)["WHEEL_HTTP_PUBLIC_URL"]
    assert public == f"https://{rule['host']}"


def test_http_tasks_and_webhooks_are_denied_the_cluster_s_own_ranges() -> None:
    """What the NetworkPolicy keeps nodes from reaching, the nodes refuse themselves (at
    create, naming the field, and at send), with a clear error instead of a timeout."""
    base = _base()
    env = _env(base[("StatefulSet", "wheel-scheduler")], base)
    denied = [ipaddress.ip_network(n) for n in env["WHEEL_NOTIFY_DENY_NETWORKS"].split(",")]
    policy = base[("NetworkPolicy", "wheel-scheduler")]
    (public,) = [rule for rule in policy["spec"]["egress"] if "to" in rule]
    excluded = [ipaddress.ip_network(n) for b in public["to"] for n in b["ipBlock"]["except"]]
    for network in excluded:
        assert any(network.subnet_of(d) for d in denied if d.version == network.version), network
    defaults = [ipaddress.ip_network(n) for n in DEFAULT_DENIED]
    assert set(defaults) <= set(denied), "the defaults stay denied"


def test_editing_the_configuration_rolls_the_pods_that_read_it(tmp_path: Path) -> None:
    """The ConfigMaps are generated with a hash of their content in their name: an edit
    changes the name each workload refers to, so `kubectl apply -k` rolls exactly them."""
    copied = tmp_path / "base"
    shutil.copytree(BASE, copied)
    settings = copied / "scheduler.env"
    edited = settings.read_text().replace("WHEEL_RETENTION_DAYS=30", "WHEEL_RETENTION_DAYS=31")
    assert edited != settings.read_text()
    settings.write_text(edited)

    def referred(documents: list[Manifest]) -> dict[str, set[str]]:
        return {
            doc["metadata"]["name"]: {
                source["configMapRef"]["name"] for source in _container(doc).get("envFrom", [])
            }
            for doc in documents
            if doc["kind"] in ("StatefulSet", "Deployment")
        }

    before, after = referred(list(_rendered_base())), referred(render(copied))
    assert before["wheel-scheduler"] != after["wheel-scheduler"]
    assert before["wheel-executor"] == after["wheel-executor"]


def _egress(policy: Manifest) -> list[Manifest]:
    return list(policy["spec"]["egress"])


def _is_dns(rule: Manifest) -> bool:
    return "to" not in rule and {(p["port"], p.get("protocol", "TCP")) for p in rule["ports"]} == {
        (53, "UDP"), (53, "TCP"),
    }  # fmt: skip


def test_executors_reach_the_nodes_only() -> None:
    base = _base()
    policy = base[("NetworkPolicy", "wheel-executor")]
    deployment = base[("Deployment", "wheel-executor")]
    assert (
        policy["spec"]["podSelector"]["matchLabels"]
        == (deployment["spec"]["selector"]["matchLabels"])
    )
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
    nodes = base[("StatefulSet", "wheel-scheduler")]
    grpc_port = _port(_env(nodes, base)["WHEEL_LISTEN"])
    rules = [rule for rule in _egress(policy) if not _is_dns(rule)]
    (to_nodes,) = rules
    (peer,) = to_nodes["to"]
    assert peer == {"podSelector": {"matchLabels": nodes["spec"]["selector"]["matchLabels"]}}
    assert [p["port"] for p in to_nodes["ports"]] == [grpc_port]
    (scrape,) = policy["spec"]["ingress"]
    assert [p["port"] for p in scrape["ports"]] == ["metrics"]


def test_nodes_reach_postgres_etcd_dns_and_public_addresses_only() -> None:
    base = _base()
    policy = base[("NetworkPolicy", "wheel-scheduler")]
    nodes = base[("StatefulSet", "wheel-scheduler")]
    assert (
        policy["spec"]["podSelector"]["matchLabels"] == (nodes["spec"]["selector"]["matchLabels"])
    )
    rules = _egress(policy)
    assert any(_is_dns(rule) for rule in rules)
    ports_only = [rule for rule in rules if "to" not in rule and not _is_dns(rule)]
    assert {p["port"] for rule in ports_only for p in rule["ports"]} == {5432, 2379}
    (public,) = [rule for rule in rules if "to" in rule]
    assert "ports" not in public  # webhooks and HTTP tasks name their own ports
    blocks = {block["ipBlock"]["cidr"]: block["ipBlock"]["except"] for block in public["to"]}
    assert set(blocks) == {"0.0.0.0/0", "::/0"}
    internal = [ipaddress.ip_network(n) for n in blocks["0.0.0.0/0"] + blocks["::/0"]]
    for address in ("10.1.2.3", "172.20.0.1", "192.168.1.1", "169.254.169.254",
                    "100.64.0.1", "127.0.0.1", "fd00::1", "fe80::1", "::1"):  # fmt: skip
        assert any(ipaddress.ip_address(address) in net for net in internal), address
    ingress_ports = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
    assert ingress_ports == {p["name"] for p in _container(nodes)["ports"]}


def _setting(env: Mapping[str, str], name: str, default: Any) -> float:
    return float(env.get(name, default))


def test_node_grace_covers_the_hand_over() -> None:
    """Hand-over (bounded by the etcd session TTL), then results and heartbeats are flushed
    one after the other, each within drain_timeout_s, then the server stops (1 s grace)."""
    base = _base()
    statefulset = base[("StatefulSet", "wheel-scheduler")]
    env = _env(statefulset, base)
    defaults = {f.name: f.default for f in dataclasses.fields(SchedulerConfig)}
    session_ttl_s = _setting(env, "WHEEL_SESSION_TTL_S", defaults["session_ttl_s"])
    drain_timeout_s = _setting(env, "WHEEL_DRAIN_TIMEOUT_S", defaults["drain_timeout_s"])
    needed_s = session_ttl_s + 2 * drain_timeout_s + SERVER_STOP_GRACE_S + MARGIN_S
    grace_s = statefulset["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace_s >= needed_s
    assert "lifecycle" not in _container(statefulset)  # SIGTERM itself hands over


def test_executor_grace_covers_the_drain() -> None:
    base = _base()
    deployment = base[("Deployment", "wheel-executor")]
    env = _env(deployment, base)
    defaults = {f.name: f.default for f in dataclasses.fields(ExecutorConfig)}
    drain_timeout_s = _setting(env, "WHEEL_DRAIN_TIMEOUT", defaults["drain_timeout_s"])
    needed_s = drain_timeout_s + float(defaults["flush_timeout_s"]) + MARGIN_S
    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] >= needed_s


def test_scheduler_is_spread_and_protected() -> None:
    base = _base()
    statefulset = base[("StatefulSet", "wheel-scheduler")]
    spec = statefulset["spec"]["template"]["spec"]
    (term,) = spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    for workload in (statefulset, base[("Deployment", "wheel-executor")]):
        (zones,) = workload["spec"]["template"]["spec"]["topologySpreadConstraints"]
        assert zones["topologyKey"] == "topology.kubernetes.io/zone"
        assert zones["maxSkew"] == 1
        assert zones["labelSelector"] == workload["spec"]["selector"]
    budget = base[("PodDisruptionBudget", "wheel-scheduler")]["spec"]
    assert budget["maxUnavailable"] == 1
    assert budget["selector"] == statefulset["spec"]["selector"]
    resources = _container(statefulset)["resources"]
    assert "cpu" not in resources["limits"]  # CFS throttling would stall the timing wheel
    assert {"cpu", "memory"} <= set(resources["requests"])


def test_every_workload_runs_as_the_images_non_root_user() -> None:
    user = int(_final_stage_user().split(":")[0])
    for (kind, name), doc in _base().items():
        if kind not in ("StatefulSet", "Deployment", "Job"):
            continue
        pod = doc["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["runAsUser"] == user, name
        assert pod["automountServiceAccountToken"] is False, name
        security = _container(doc)["securityContext"]
        assert security["readOnlyRootFilesystem"] is True, name
        assert security["allowPrivilegeEscalation"] is False, name


def test_the_executor_autoscaler_scales_on_wheel_metrics_not_cpu() -> None:
    (hpa,) = _documents(K8S / "overlays" / "autoscaling" / "executor-hpa.yaml")
    assert hpa["spec"]["scaleTargetRef"]["name"] == "wheel-executor"
    names = {m["external"]["metric"]["name"] for m in hpa["spec"]["metrics"]}
    assert {m["type"] for m in hpa["spec"]["metrics"]} == {"External"}
    assert names == {"wheel_upcoming", "wheel_backlog_age_seconds"}
    metrics_source = (ROOT / "src" / "wheel" / "scheduler" / "metrics.py").read_text()
    for name in names:
        assert f'"{name}"' in metrics_source  # the name the node exports


# -- the Dockerfile --------------------------------------------------------------------

COMPILERS = re.compile(r"\b(gcc|g\+\+|clang|cc|build-essential|make|python3?-dev)\b")


def _final_stage() -> list[str]:
    lines = (ROOT / "Dockerfile").read_text().splitlines()
    instructions = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    starts = [i for i, line in enumerate(instructions) if line.upper().startswith("FROM ")]
    assert len(starts) >= 2, "the Dockerfile is multi-stage"
    return instructions[starts[-1] :]


def _final_stage_user() -> str:
    users = [line.split()[1] for line in _final_stage() if line.upper().startswith("USER ")]
    assert users, "the final stage sets a USER"
    return users[-1]


def test_the_image_runs_as_a_numeric_non_root_user_without_compilers() -> None:
    user, _, group = _final_stage_user().partition(":")
    assert user.isdigit()
    assert int(user) != 0
    assert group == "" or group.isdigit()
    assert group != "0"
    stage = _final_stage()
    runs = " ".join(line for line in stage if not line.upper().startswith("COPY"))
    assert not COMPILERS.search(runs), COMPILERS.search(runs)
    assert not any("apt-get install" in line or "apk add" in line for line in stage)
    copies = [line for line in stage if line.upper().startswith("COPY")]
    assert copies
    assert all("--from=builder" in line for line in copies)
    assert stage[-2:] == ['ENTRYPOINT ["wheel"]', 'CMD ["--help"]']
