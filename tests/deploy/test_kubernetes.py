"""The Kubernetes manifests, validated offline against the schemas kubernetes-validate bundles."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from ragsage.settings import Settings

from .helpers import DEPLOY, SETTING_NAMES

MANIFESTS = sorted((DEPLOY / "kubernetes").glob("*.yaml"))
# The oldest Kubernetes these manifests promise to work on, and the newest schema bundled.
VERSIONS = ("1.29", kubernetes_validate.latest_version())


def _documents() -> list[tuple[Path, dict[str, Any]]]:
    found = []
    for path in MANIFESTS:
        for document in yaml.safe_load_all(path.read_text()):
            if document:
                found.append((path, document))
    return found


DOCUMENTS = _documents()


def _one(kind: str, name: str) -> dict[str, Any]:
    matches = [d for _, d in DOCUMENTS if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name}"
    return matches[0]


def _container(kind: str, name: str) -> dict[str, Any]:
    containers = _one(kind, name)["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "document",
    [d for _, d in DOCUMENTS],
    ids=[f"{p.name}:{d['kind']}" for p, d in DOCUMENTS],
)
def test_manifest_matches_the_kubernetes_schema(document: dict[str, Any], version: str) -> None:
    # strict: unknown fields (a misspelt probe, a field in the wrong place) are errors.
    kubernetes_validate.validate(document, version, strict=True)


def test_the_validator_rejects_a_misspelt_field() -> None:
    broken = copy.deepcopy(_one("Deployment", "ragsage-api"))
    container = broken["spec"]["template"]["spec"]["containers"][0]
    container["livenesProbes"] = container.pop("livenessProbe")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSIONS[0], strict=True)


def test_every_part_of_the_deployment_is_there() -> None:
    kinds = {(d["kind"], d["metadata"]["name"]) for _, d in DOCUMENTS}
    assert kinds >= {
        ("ConfigMap", "ragsage-config"),
        ("Secret", "ragsage-secrets"),
        ("Secret", "ragsage-owner"),
        ("Job", "ragsage-migrate"),
        ("Deployment", "ragsage-api"),
        ("Service", "ragsage-api"),
        ("Deployment", "ragsage-worker"),
        ("HorizontalPodAutoscaler", "ragsage-worker"),
    }


def test_api_probes_liveness_and_readiness_on_their_endpoints() -> None:
    api = _container("Deployment", "ragsage-api")
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert api["args"][: api["args"].index("--bind") + 2] == ["api", "--bind", "0.0.0.0:8000"]


def test_workers_have_no_probes_and_a_bounded_grace_period() -> None:
    worker = _container("Deployment", "ragsage-worker")
    assert not {"livenessProbe", "readinessProbe", "startupProbe"} & set(worker)
    grace = _one("Deployment", "ragsage-worker")["spec"]["template"]["spec"][
        "terminationGracePeriodSeconds"
    ]
    assert Settings().job_lease < grace < Settings().job_soft_time_limit


def test_the_service_and_autoscaler_point_at_their_deployments() -> None:
    service = _one("Service", "ragsage-api")
    api = _one("Deployment", "ragsage-api")
    labels = api["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    port_names = {p["name"] for p in _container("Deployment", "ragsage-api")["ports"]}
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= port_names
    target = _one("HorizontalPodAutoscaler", "ragsage-worker")["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", "ragsage-worker")
    assert "replicas" not in _one("Deployment", "ragsage-worker")["spec"]


def test_pods_read_the_config_and_secret_and_run_as_the_image_user() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    image_uid = int(re.findall(r"^USER (\d+)", dockerfile, re.MULTILINE)[-1])
    for kind, name in (
        ("Deployment", "ragsage-api"),
        ("Deployment", "ragsage-worker"),
        ("Job", "ragsage-migrate"),
    ):
        pod = _one(kind, name)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == image_uid
        container = pod["containers"][0]
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        sources = {(key, ref["name"]) for item in container["envFrom"] for key, ref in item.items()}
        shared = {("configMapRef", "ragsage-config"), ("secretRef", "ragsage-secrets")}
        # Only the migration Job may read the owner's credentials.
        owner = {("secretRef", "ragsage-owner")} if kind == "Job" else set()
        assert sources == shared | owner, name


def test_config_and_secret_together_are_valid_settings() -> None:
    config = _one("ConfigMap", "ragsage-config")["data"]
    secret = _one("Secret", "ragsage-secrets")["stringData"]
    owner = _one("Secret", "ragsage-owner")["stringData"]
    assert set(config) | set(secret) | set(owner) <= SETTING_NAMES
    # Credentials only in the Secrets, and the owner's only in its own.
    assert not [key for key in config if key.endswith(("_URL", "_KEY"))]
    assert {"RAGSAGE_APP_DATABASE_URL", "RAGSAGE_REDIS_URL"} <= set(secret)
    assert "RAGSAGE_DATABASE_URL" not in secret and set(owner) == {"RAGSAGE_DATABASE_URL"}
    Settings.from_env({**config, **secret})  # what the API and the workers run with
    Settings.from_env({**config, **secret, **owner})  # the migration


def test_the_example_secret_holds_only_placeholders() -> None:
    secret = {
        **_one("Secret", "ragsage-secrets")["stringData"],
        **_one("Secret", "ragsage-owner")["stringData"],
    }
    for key, value in secret.items():
        if key.endswith("_API_KEY"):
            assert value == "", key
        elif "://" in value:
            assert ":change-me@" in value, key
