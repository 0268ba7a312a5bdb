"""The operator's sealing key: every stored secret is sealed with it, and keys carry its check.

``RAGSAGE_SEALING_KEYS`` holds one or more Fernet keys, comma-separated; the
first seals, every one opens, so the operator rotates by putting a new key
first and keeps an old one listed while anything sealed with it is stored,
and while keys checked under it are in use.  The variable's earlier name,
``RAGSAGE_WEBHOOK_KEYS``, is still read.

Two uses:

* :meth:`Sealer.seal` / :meth:`Sealer.open`: secrets the database must hold
  but the app role must never read in plaintext (webhook endpoints' signing
  secrets, delegate keys' signing secrets).
* :meth:`Sealer.check` / :meth:`Sealer.checks`: a short MAC over a new API
  key's id and secret, made with a key derived from each sealing key, so the
  API tells a key it issued from a forged or random one before any lookup.

A use with a sealed form of its own (the web page's one-time sign-in codes)
takes :meth:`Sealer.derived`: keys derived for that purpose alone, so what it
seals and what is stored sealed can never be passed off as each other.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from functools import cached_property

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from ragsage.core.errors import ConfigurationError

SEALING_VARIABLE = "RAGSAGE_SEALING_KEYS"
# Bytes of MAC a key carries: 128 bits, far beyond guessing, 22 characters.
CHECK_BYTES = 16
_CHECK_PURPOSE = b"ragsage api-key check v1"


def new_operator_key() -> str:
    """A fresh Fernet key for ``RAGSAGE_SEALING_KEYS``."""
    return Fernet.generate_key().decode("ascii")


class SealedWithAnotherKey(ConfigurationError):
    """A stored secret was sealed with a key the sealing keys no longer hold."""


class Sealer:
    """Seals and opens stored secrets, and checks keys, with the operator's keys."""

    def __init__(self, keys: str) -> None:
        parts = [part.strip() for part in keys.split(",") if part.strip()]
        if not parts:
            raise ConfigurationError(
                f"{SEALING_VARIABLE} is not set: one or more Fernet keys, comma-separated "
                "(`ragsage webhooks new-operator-key` makes one)"
            )
        try:
            self._keys = [Fernet(part.encode("ascii")) for part in parts]
            self._raw = [base64.urlsafe_b64decode(part.encode("ascii")) for part in parts]
        except (ValueError, UnicodeEncodeError):
            # The message must not echo the value: it is a secret.
            raise ConfigurationError(
                f"{SEALING_VARIABLE} must be Fernet keys (32 bytes in url-safe base64), "
                "comma-separated"
            ) from None
        self._fernet = MultiFernet(self._keys)

    def __repr__(self) -> str:
        return f"Sealer({len(self._keys)} keys)"

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode("utf-8")).decode("ascii")

    def open(self, sealed: str, what: str = "a stored secret") -> str:
        try:
            return self._fernet.decrypt(sealed.encode("ascii")).decode("utf-8")
        except (InvalidToken, UnicodeEncodeError):
            raise SealedWithAnotherKey(
                f"{what} was sealed with a key {SEALING_VARIABLE} no longer holds"
            ) from None

    def derived(self, purpose: str) -> Sealer:
        """A sealer whose keys are derived from these for ``purpose`` alone.

        Without it a sealed value of one use would open as one of another: a
        stored secret's ciphertext, read from a backup, handed to the route
        that opens sign-in codes would come back in plaintext.
        """
        keys = (base64.urlsafe_b64encode(key) for key in self._derive(purpose.encode()))
        return Sealer(",".join(key.decode("ascii") for key in keys))

    def _derive(self, purpose: bytes) -> list[bytes]:
        """One 32-byte key per sealing key, for ``purpose`` alone, in the same order."""
        return [hmac.new(raw, purpose, hashlib.sha256).digest() for raw in self._raw]

    def seal_at(self, secret: str, when: int) -> str:
        """``secret`` sealed with the first key, dated ``when`` (seconds since the epoch)."""
        return self._fernet.encrypt_at_time(secret.encode("utf-8"), when).decode("ascii")

    def open_dated(self, sealed: str) -> tuple[str, int] | None:
        """What ``sealed`` holds and when it was sealed; None if none of the keys sealed it.

        None, not an error: for a value a stranger may send (a sign-in code),
        one that does not open is the expected case, not a misconfiguration.
        """
        try:
            token = sealed.encode("ascii")
            opened = self._fernet.decrypt(token).decode("utf-8")
            return opened, self._fernet.extract_timestamp(token)
        except (InvalidToken, UnicodeError):
            return None

    @cached_property
    def _check_keys(self) -> list[bytes]:
        return self._derive(_CHECK_PURPOSE)

    def check(self, message: str) -> str:
        """The check new keys carry: a MAC of ``message`` under the first key, 22 characters."""
        return _mac(self._check_keys[0], message)

    def checks(self, message: str, check: str) -> bool:
        """Whether ``check`` is the MAC of ``message`` under any of the keys."""
        return any(hmac.compare_digest(_mac(key, message), check) for key in self._check_keys)


def _mac(key: bytes, message: str) -> str:
    digest = hmac.new(key, message.encode("utf-8"), hashlib.sha256).digest()[:CHECK_BYTES]
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def sealer_or_none(keys: str) -> Sealer | None:
    """A :class:`Sealer` for ``keys``, or None when none are configured."""
    return Sealer(keys) if keys.strip() else None
