"""One-time sign-in codes: a link to the web page that signs in once, never a key in a URL.

``ragsage up`` and ``ragsage keys sign-in-link`` print a link of the form
``http://host/#code=<code>``; the page sends the code to ``POST /v1/sign-in``
and gets the key it stands for.  What makes a code safe to print:

* It is the key and a random code id, sealed (Fernet: encrypted, authenticated
  and dated) with a key derived from the operator's sealing keys
  (``RAGSAGE_SEALING_KEYS``) for sign-in codes alone.  Only whoever holds the
  sealing keys can make one; the link shows no key to a shoulder or a
  screenshot; and a stored secret's ciphertext cannot pass for a code, nor a
  code for one.
* It works for :data:`CODE_LIFETIME_SECONDS` after it was made, by its own date.
* It works once: the first exchange marks its id as used (in Redis, for
  longer than the code could be accepted), and every later one is refused.

A forged, mistyped or random code fails when it is opened, with no Redis or
database work: opening is a MAC check in this process.  The API and the
command line share this module: the API exchanges, the command line makes.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Protocol

from ragsage.core.errors import MarksUnavailable
from ragsage.core.sealing import DatedSeals

CODE_LIFETIME_SECONDS = 15 * 60
# A code made on a machine whose clock runs ahead of this one's by up to this
# much is still taken (``ragsage keys sign-in-link`` may run elsewhere).
CLOCK_SKEW_SECONDS = 60
# A code stands for any key, a restricted key (up to 16,384 characters) included.
MAX_CODE_CHARS = 24_000
# The mark outlives every moment at which its code could still be accepted,
# on this server or on one whose clock differs by the skew.
USED_MARK_SECONDS = CODE_LIFETIME_SECONDS + 2 * CLOCK_SKEW_SECONDS
USED_PREFIX = "ragsage:sign-in:used:"
_PURPOSE = "ragsage sign-in code v1"
_VERSION = 1


class SignInRefused(Exception):
    """A code that signs nobody in; the message says why, in words for the person holding it."""

    reason = "invalid"


class CodeNotIssued(SignInRefused):
    """Not a code this deployment made: random, cut short, or sealed with other keys."""


class CodeExpired(SignInRefused):
    reason = "expired"


class CodeUsed(SignInRefused):
    reason = "used"


class SignInUnavailable(Exception):
    """Where used codes are marked could not be reached; the code is still unused."""


class UsedCodes(Protocol):
    """Where the ids of exchanged codes are marked (the broker's Redis, :class:`FirstMarks`)."""

    def first(self, name: str, keep_for: int) -> bool:
        """Mark ``name``; True if this call marked it first.

        Raises :class:`~ragsage.core.errors.MarksUnavailable` when the
        store cannot say: a code is never taken as unused on a guess.
        """
        ...

    def close(self) -> None:
        """Let go of the connection, if one was opened."""
        ...


@dataclass(frozen=True, slots=True)
class OpenedCode:
    code_id: str
    key: str
    made_at: int


class SignInCodes:
    """Makes and opens the sign-in codes of one deployment (its sealing keys)."""

    def __init__(self, sealer: DatedSeals) -> None:
        self._sealer = sealer.derived(_PURPOSE)
        self.lifetime = CODE_LIFETIME_SECONDS

    @property
    def minutes(self) -> int:
        """The lifetime in whole minutes, as the printed links say it."""
        return max(1, self.lifetime // 60)

    def make(self, key: str, now: float | None = None) -> str:
        """A code standing for ``key``, dated ``now`` (default: this moment)."""
        if not key or len(key) > MAX_CODE_CHARS // 2:
            raise ValueError("a sign-in code stands for one API key or restricted key")
        made_at = int(time.time() if now is None else now)
        # The id, not the code's text, is what is marked used: the same sealed
        # bytes can be written more than one way (base64 padding dropped, say).
        payload = json.dumps({"v": _VERSION, "id": secrets.token_urlsafe(16), "key": key})
        return self._sealer.seal_at(payload, made_at)

    def open(self, code: str, now: float | None = None) -> OpenedCode:
        """The key ``code`` stands for, if it is a live code of this deployment.

        Marks nothing: :meth:`exchange` is what uses a code up.
        """
        if not code or len(code) > MAX_CODE_CHARS:
            raise CodeNotIssued(_NOT_ISSUED)
        opened = self._sealer.open_dated(code.strip())
        if opened is None:
            raise CodeNotIssued(_NOT_ISSUED)
        text, made_at = opened
        try:
            payload = json.loads(text)
            found = OpenedCode(str(payload["id"]), str(payload["key"]), made_at)
        except (ValueError, KeyError, TypeError):
            # Sealed with our keys, yet not a code: never made by this module.
            raise CodeNotIssued(_NOT_ISSUED) from None
        at = time.time() if now is None else now
        if made_at > at + CLOCK_SKEW_SECONDS:
            raise CodeNotIssued(
                f"this sign-in code is dated {round(made_at - at)} seconds ahead of the "
                "server's clock; the clocks of the machine that made it and of the server "
                "disagree"
            )
        if at - made_at > self.lifetime:
            raise CodeExpired(
                f"this sign-in code has expired: a code works for {self.minutes} minutes "
                "after it is made. Ask for a new link, or sign in with the key itself"
            )
        return found

    def exchange(self, code: str, used: UsedCodes, now: float | None = None) -> str:
        """The key ``code`` stands for, the first time it is asked; refused ever after."""
        found = self.open(code, now)
        try:
            first = used.first(found.code_id, USED_MARK_SECONDS)
        except MarksUnavailable as exc:
            raise SignInUnavailable(
                "the sign-in service cannot record that a code was used right now; "
                "the code is still good: try again shortly"
            ) from exc
        if not first:
            raise CodeUsed(
                "this sign-in code has already been used: a code signs in once. "
                "Ask for a new link, or sign in with the key itself"
            )
        return found.key


def sign_in_link(base_url: str, code: str) -> str:
    """The web page's address that signs in with ``code`` (in the fragment: never sent)."""
    return f"{base_url.rstrip('/')}/#code={code}"


_NOT_ISSUED = (
    "this sign-in code is not valid: it was not made by this server, or the link was cut "
    "short when it was copied"
)
