"""The shipped deployment (``infra/compose``, ``infra/k8s``, ``infra/Dockerfile``) holds together:
every file parses, images are pinned, secrets are references, every ``AGENTLEDGER_*`` variable
set is one the code reads and every process gets what it needs, each Kubernetes workload has
resource requests and a disruption budget, and each worker Deployment scales on its own queue."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
K8S = INFRA / "k8s"
COMPOSE = INFRA / "compose" / "compose.yaml"
NEEDED_BY_EVERY_PROCESS = {"AGENTLEDGER_DATABASE_URL", "AGENTLEDGER_TEMPORAL_ADDRESS"}
NEEDED_BY_WORKERS = {"AGENTLEDGER_TASK_QUEUE", "AGENTLEDGER_TRUSTED_KEYS"}


def _variables_the_code_reads() -> set[str]:
    found = set()
    for path in (ROOT / "agentledger").rglob("*.py"):
        found |= set(re.findall(r"AGENTLEDGER_[A-Z_]*[A-Z]", path.read_text()))
    return found


def _k8s() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def _of(kind: str) -> list[dict[str, Any]]:
    return [d for d in _k8s() if d["kind"] == kind]


def _config_map(name: str) -> dict[str, str]:
    (found,) = [d for d in _of("ConfigMap") if d["metadata"]["name"] == name]
    return dict(found["data"])


def _container_env(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each variable a container gets: its own ``env`` and the ConfigMaps it pulls in."""
    env = {}
    for source in container.get("envFrom", []):
        for name, value in _config_map(source["configMapRef"]["name"]).items():
            env[name] = {"value": value}
    for item in container.get("env", []):
        env[item["name"]] = item
    return env


def _workloads() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for doc in _of("Deployment") + _of("Job"):
        for container in doc["spec"]["template"]["spec"]["containers"]:
            found.append((doc["metadata"]["name"], container))
    return found


def test_every_file_parses_and_the_kustomization_lists_every_manifest() -> None:
    listed = yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"]
    present = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(listed) == present
    assert _k8s() and yaml.safe_load(COMPOSE.read_text())["services"]


def test_images_are_pinned_to_a_version() -> None:
    images = [c["image"] for _, c in _workloads()]
    images += [s["image"] for s in yaml.safe_load(COMPOSE.read_text())["services"].values()]
    images += re.findall(r"^FROM (\S+)", (INFRA / "Dockerfile").read_text(), re.M)
    for image in images:
        name, _, tag = image.rpartition(":")
        assert name and tag and tag != "latest" and re.search(r"\d", tag), image


@pytest.mark.parametrize("source", ["k8s", "compose"])
def test_every_variable_set_is_one_the_code_reads(source: str) -> None:
    if source == "k8s":
        names = {n for _, c in _workloads() for n in _container_env(c)}
    else:
        text = COMPOSE.read_text()
        names = set(re.findall(r"^\s+(AGENTLEDGER_[A-Z_]+):", text, re.M))
    unknown = {n for n in names if n.startswith("AGENTLEDGER_")} - _variables_the_code_reads()
    assert not unknown, f"set but never read (a typo?): {sorted(unknown)}"


def test_every_process_gets_what_it_needs_and_secrets_are_references() -> None:
    for name, container in _workloads():
        env = _container_env(container)
        needed = {"AGENTLEDGER_DATABASE_URL"} if name.endswith("migrate") else (
            NEEDED_BY_EVERY_PROCESS | (NEEDED_BY_WORKERS if "worker" in name else set())
        )  # fmt: skip
        assert needed <= env.keys(), (name, needed - env.keys())
        assert "secretKeyRef" in env["AGENTLEDGER_DATABASE_URL"]["valueFrom"], name
        for item in container.get("env", []):
            value = str(item.get("value", ""))
            credentials = re.search(r"://[^/@\s]*:[^/@\s]*@", value)  # user:password@host
            assert not credentials and "password" not in value.lower(), (name, item)
    api = dict(_workloads())["agentledger-api"]
    assert "AGENTLEDGER_ISSUER_KEY" in _container_env(api)
    _assert_register_persists(api)
    workers = [c for n, c in _workloads() if "worker" in n]
    assert all("AGENTLEDGER_ISSUER_KEY" not in _container_env(c) for c in workers)


def test_every_workload_requests_resources_and_has_a_disruption_budget() -> None:
    budgets = [d["spec"]["selector"]["matchLabels"] for d in _of("PodDisruptionBudget")]
    for name, container in _workloads():
        assert {"cpu", "memory"} <= container["resources"]["requests"].keys(), name
    for deployment in _of("Deployment"):
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert any(b.items() <= labels.items() for b in budgets), deployment["metadata"]["name"]


def test_each_worker_deployment_scales_on_its_own_task_queue() -> None:
    config = _config_map("agentledger")
    queue_of = {
        "workflows": config["AGENTLEDGER_TASK_QUEUE"],
        "models": config["AGENTLEDGER_MODEL_QUEUE"],
        "tools": config["AGENTLEDGER_TOOL_QUEUE"],
    }
    scaled = {d["spec"]["scaleTargetRef"]["name"]: d for d in _of("ScaledObject")}
    workers = [d for d in _of("Deployment") if "worker" in d["metadata"]["name"]]
    assert len(workers) == len(queue_of)
    for deployment in workers:
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        kind = container["args"][container["args"].index("--queues") + 1]
        (trigger,) = scaled[deployment["metadata"]["name"]]["spec"]["triggers"]
        assert trigger["type"] == "temporal"
        assert trigger["metadata"]["taskQueue"] == queue_of[kind], kind


def _assert_register_persists(api: dict[str, Any]) -> None:
    """The erasure register the API appends to lies on a volume every replica shares and that
    outlives them (a claim), not in the container's own filesystem."""
    register = Path(_container_env(api)["AGENTLEDGER_ERASURE_REGISTER"]["value"])
    (deployment,) = [d for d in _of("Deployment") if d["metadata"]["name"] == "agentledger-api"]
    (mount,) = [m for m in api["volumeMounts"] if register.is_relative_to(m["mountPath"])]
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    claim = volumes[mount["name"]]["persistentVolumeClaim"]["claimName"]
    (pvc,) = [c for c in _of("PersistentVolumeClaim") if c["metadata"]["name"] == claim]
    assert "ReadWriteMany" in pvc["spec"]["accessModes"]
