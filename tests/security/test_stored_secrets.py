"""Attack 6: a delegate key's signing secret read as the app role.

Key ids are public (a restricted key's ``kid``), and ``ragsage_find_signer``
is callable by every app-role session.  Before migration 36 it returned the
secret in plaintext, so any SQL reaching the app role could mint restricted
keys for any namespace.  Now it returns the secret sealed with the operator's
key, which the database never holds.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import ProgrammingError

from ragsage.adapters.postgres.keys import create_key
from ragsage.adapters.sealing import Sealer
from ragsage.core.keys import NewKey, Role
from ragsage.core.scopes import Scope
from ragsage.management.restricted_keys import grant_of, mint
from tests.integration.api_harness import ApiServer, with_database
from tests.integration.worker_harness import Deployment

ACME = Scope("acme")


def _delegate(deployment: Deployment) -> NewKey:
    async def create(database: Any) -> NewKey:
        async with database.session(ACME) as session:
            sealer = Sealer(deployment.settings.sealing_keys)
            return await create_key(session, ACME, Role.DELEGATE, "product", (), sealer)

    return with_database(deployment.settings, create)


def test_the_app_role_gets_only_a_sealed_secret_that_signs_nothing(
    deployment: Deployment, api: ApiServer
) -> None:
    made = _delegate(deployment)

    async def as_app_role(database: Any) -> list[Any]:
        async with database.session(Scope("globex")) as session:
            rows = await session.execute(
                text("SELECT * FROM ragsage_find_signer('acme', :id)"), {"id": made.id}
            )
            found = [tuple(row) for row in rows]
        for column in ("signing_secret", "sealed_signing_secret"):
            with pytest.raises(ProgrammingError, match="permission denied"):
                async with database.session(ACME) as session:
                    await session.execute(text(f"SELECT {column} FROM ragsage_api_keys"))
        return found

    [(role, _principals, handed_over)] = with_database(deployment.settings, as_app_role)
    assert role == "delegate"
    assert made.signing_secret not in handed_over and not handed_over.startswith("rss_")
    # What the app role got signs a token the API refuses; the real secret's is accepted.
    grant = grant_of(["user:mallory"], 600)
    forged = mint(made.id, "acme", handed_over, grant)
    assert api.client(forged).get("/v1/key").status_code == 401
    genuine = mint(made.id, "acme", made.signing_secret, grant)
    assert api.client(genuine).get("/v1/key").json()["namespace"] == "acme"


def test_a_delegate_key_is_refused_without_a_sealing_key(running: Deployment) -> None:
    ragsage = str(Path(sys.executable).with_name("ragsage"))
    env = {
        name: value
        for name, value in running.env.items()
        if name not in ("RAGSAGE_SEALING_KEYS", "RAGSAGE_WEBHOOK_KEYS")
    }
    made = subprocess.run(
        [ragsage, "keys", "create", "--namespace", "acme", "--role", "delegate"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 2, made.stderr
    assert "RAGSAGE_SEALING_KEYS" in made.stderr and "rsk_" not in made.stdout
