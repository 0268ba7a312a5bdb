"""Webhook secrets: made, sealed with the operator's key, and used to sign deliveries.

A secret is ``whsec_`` and 32 random bytes in base64, the form Standard
Webhooks libraries (``standardwebhooks``, ``svix``) take as is.  It is shown
once, when it is made; the database holds it sealed under the operator's
sealing key (:mod:`ragsage.adapters.sealing`).  A delivery is
signed by ``standardwebhooks`` over ``id.timestamp.body``; while an endpoint's
secret rotation is in its grace period, the header carries both signatures.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from datetime import datetime

from standardwebhooks.webhooks import Webhook as StandardWebhook

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """A fresh signing secret, in the form receivers' libraries expect."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def sign(secrets_in_use: Sequence[str], message_id: str, sent_at: datetime, body: bytes) -> str:
    """The ``webhook-signature`` header: one ``v1,`` signature per secret, space-separated."""
    return " ".join(
        StandardWebhook(secret).sign(message_id, sent_at, body) for secret in secrets_in_use
    )
