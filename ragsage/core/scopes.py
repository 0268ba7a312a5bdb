"""Scopes: the tenant a piece of work belongs to, and the principals it reads for.

The namespace and principal patterns live here so the API's schema can say to
clients exactly what a scope accepts.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ragsage.core.errors import InvalidRequest

NAMESPACE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$"
_NAMESPACE = re.compile(NAMESPACE_PATTERN)
# A principal is an opaque name such as ``group:sales`` or ``user:ana@example.com``.
# No comma (the session setting lists them comma-separated) and no leading ``*``
# (the setting's mark for a session bound to no principal).
PRINCIPAL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:@+/=#-]{0,199}$"
_PRINCIPAL = re.compile(PRINCIPAL_PATTERN)
MAX_PRINCIPALS = 64


def _principals_problem(names: frozenset[Any], what: str) -> str | None:
    """What is wrong with a set of principal names, or None."""
    for name in names:
        if not isinstance(name, str) or not _PRINCIPAL.fullmatch(name):
            return (
                f"{what} holds {name!r}: a principal name is 1-200 characters of letters, "
                "digits and _ . : @ + / = # -, starting with a letter or digit"
            )
    if len(names) > MAX_PRINCIPALS:
        return f"{what} names {len(names)} principals; at most {MAX_PRINCIPALS}"
    return None


def check_principals(names: Any, what: str = "an access list") -> frozenset[str]:
    """``names`` as a set of valid principal names, or InvalidRequest naming the bad one."""
    if isinstance(names, str) or not isinstance(names, (list, tuple, set, frozenset)):
        raise InvalidRequest(f"{what} must be a list of principal names")
    found = frozenset(names)
    problem = _principals_problem(found, what)
    if problem is not None:
        raise InvalidRequest(problem)
    return found


@dataclass(frozen=True, slots=True)
class Scope:
    """The tenant a piece of work belongs to, and whom it reads for.

    ``principals`` None is a session bound to no principal: it reads every
    document of the namespace (workers, the CLI, unbound keys).  A set binds
    it: it reads only documents whose access list is empty or names one of
    them, which the database enforces (docs/tenants.md, "Access lists").
    """

    namespace: str
    principals: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if not _NAMESPACE.fullmatch(self.namespace):
            raise ValueError(
                "namespace must be 1-128 characters of letters, digits, '_', '.', ':' or '-', "
                f"starting with a letter or digit; got {self.namespace!r}"
            )
        if self.principals is not None:
            if not self.principals:
                raise ValueError("a bound scope names at least one principal")
            problem = _principals_problem(self.principals, "a scope's principals")
            if problem is not None:
                raise ValueError(problem)

    @property
    def bound(self) -> bool:
        return self.principals is not None

    def unbound(self) -> Scope:
        """The same namespace, read for no principal in particular."""
        return Scope(self.namespace)


def scope_for(namespace: str, principals: Collection[str] | None = None) -> Scope:
    """The scope a caller names, bound to ``principals`` when given (docs/access.md).

    A malformed namespace or principal name is the caller's error: InvalidRequest.
    """
    try:
        return Scope(namespace, None if principals is None else frozenset(principals))
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
