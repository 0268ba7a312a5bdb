"""Webhook secrets: made, sealed with the operator's key, and used to sign deliveries.

A secret is ``whsec_`` and 32 random bytes in base64, the form Standard
Webhooks libraries (``standardwebhooks``, ``svix``) take as is.  It is shown
once, when it is made; the database holds it sealed with Fernet under the
operator's key (``RAGSAGE_WEBHOOK_KEYS``: one or more Fernet keys, the first
sealing, every one opening, so the operator can rotate it).  A delivery is
signed by ``standardwebhooks`` over ``id.timestamp.body``; while an endpoint's
secret rotation is in its grace period, the header carries both signatures.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from datetime import datetime

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from standardwebhooks.webhooks import Webhook as StandardWebhook

from ragsage.core.errors import ConfigurationError

SECRET_PREFIX = "whsec_"
KEYS_VARIABLE = "RAGSAGE_WEBHOOK_KEYS"


def new_secret() -> str:
    """A fresh signing secret, in the form receivers' libraries expect."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def new_operator_key() -> str:
    """A fresh Fernet key for ``RAGSAGE_WEBHOOK_KEYS``."""
    return Fernet.generate_key().decode("ascii")


class Sealer:
    """Seals and opens endpoint secrets with the operator's keys."""

    def __init__(self, keys: str) -> None:
        parts = [part.strip() for part in keys.split(",") if part.strip()]
        if not parts:
            raise ConfigurationError(
                f"webhooks need {KEYS_VARIABLE}: one or more Fernet keys, comma-separated "
                "(`ragsage webhooks new-operator-key` makes one)"
            )
        try:
            self._fernet = MultiFernet([Fernet(part.encode("ascii")) for part in parts])
        except (ValueError, UnicodeEncodeError):
            # The message must not echo the value: it is a secret.
            raise ConfigurationError(
                f"{KEYS_VARIABLE} must be Fernet keys (32 bytes in url-safe base64), "
                "comma-separated"
            ) from None

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode("ascii")).decode("ascii")

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode("ascii")).decode("ascii")
        except InvalidToken:
            raise ConfigurationError(
                f"an endpoint's secret was sealed with a key {KEYS_VARIABLE} no longer holds"
            ) from None


def sign(secrets_in_use: Sequence[str], message_id: str, sent_at: datetime, body: bytes) -> str:
    """The ``webhook-signature`` header: one ``v1,`` signature per secret, space-separated."""
    return " ".join(
        StandardWebhook(secret).sign(message_id, sent_at, body) for secret in secrets_in_use
    )
