"""What ragsage needs to know to own a pool against one Postgres database."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ragsage.core.errors import ConfigurationError

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_SETTING = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")
# A memory size as Postgres reads one, for a SET that cannot take a parameter.
_MEMORY = re.compile(r"[1-9][0-9]{0,6}(kB|MB|GB)")
# What a width's shared HNSW graph may be built on: full or half precision.
HNSW_TYPES = ("vector", "halfvec")
# pgvector's HNSW index accepts at most 2,000 dimensions for the vector type.
MAX_INDEXED_DIM = 2000


def safe_identifier(name: str) -> str:
    """Return ``name`` if it is a plain SQL identifier, else raise ValueError.

    Identifiers have no bind form in SQL, so the few that reach statement text
    (the app role, the text-search configuration) pass through here at the
    point of interpolation.
    """
    if not _IDENTIFIER.fullmatch(name):
        raise ValueError(f"not a plain SQL identifier: {name!r}")
    return name


def safe_setting_name(name: str) -> str:
    """Return ``name`` if it is a custom setting (``prefix.name``), else raise ValueError.

    Postgres only accepts unknown settings that carry a dotted prefix, so a bad
    name fails here, when the config is built, instead of as a policy that
    silently matches nothing.
    """
    if not _SETTING.fullmatch(name):
        raise ValueError(f"not a qualified custom setting name (prefix.name): {name!r}")
    return name


@functools.lru_cache(maxsize=16)  # named in every transaction's preamble
def principals_variable_for(isolation_variable: str) -> str:
    """The setting carrying a session's principals: beside the namespace's, same prefix."""
    return isolation_variable.rsplit(".", 1)[0] + ".principals"


def async_url(dsn: str) -> str:
    """The SQLAlchemy URL for ``dsn`` on the async psycopg 3 driver."""
    scheme, sep, rest = dsn.partition("://")
    if not sep or scheme not in {"postgres", "postgresql", "postgresql+psycopg"}:
        raise ConfigurationError("the database URL must start with postgresql://")
    return f"postgresql+psycopg://{rest}"


def dsn_user(dsn: str) -> str | None:
    """The user name a DSN logs in as, if it names one."""
    return urlsplit(dsn.replace("+psycopg", "")).username


def redact(dsn: str) -> str:
    """``dsn`` with any password replaced, for messages and logs."""
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


@dataclass(frozen=True, slots=True)
class PostgresConfig:
    """Connection, isolation and schema settings for ragsage's Postgres storage.

    ``dsn`` connects as the owner of ragsage's tables and is used for migrations
    only; a service that runs no migration is given ``app_dsn`` alone, and never
    holds the owner's password.  ``app_dsn`` logs in as ``app_role``: a role that owns nothing and
    cannot bypass Row-Level Security, which is how scoped work should connect.
    Without an ``app_dsn``, scoped work falls back to ``SET LOCAL ROLE`` from an
    owner connection — weaker, because SQL running in that transaction could
    ``RESET ROLE`` back to the owner; use it only where nothing untrusted runs.

    ``isolation_variable`` is the transaction-local setting carrying the
    namespace that every table's policy compares rows against;
    :attr:`principals_variable`, beside it, carries whom the session reads for.
    ``embedding_dim`` is the width of new namespaces' vectors, and
    ``embedding_widths`` the other widths a namespace may be re-indexed into:
    each width has its own HNSW index, built by :meth:`Database.migrate` and
    never by a request.  ``text_search_config`` the configuration the stored lexical
    column is built with; changing either on an existing install is a
    :class:`~ragsage.adapters.postgres.SchemaMismatch`, not a silent misconfiguration.
    """

    dsn: str = field(default="", repr=False)
    app_dsn: str | None = field(default=None, repr=False)
    app_role: str = "ragsage_app"
    isolation_variable: str = "ragsage.namespace"
    embedding_dim: int = 1024
    embedding_widths: tuple[int, ...] = ()
    text_search_config: str = "english"
    pool_size: int = 5
    max_overflow: int = 5
    pool_pre_ping: bool = False
    statement_timeout_ms: int = 30_000
    # A sparser graph built with a shorter candidate list, walked with a longer
    # one (the defaults from migration 27 until 35): on the 7,946 chunks of the
    # 242 Debian pages, m 12 / ef_construction 40 costs 60% of the insert CPU of
    # m 16 / 64 (HNSW upkeep was half of Postgres's
    # share of an ingestion).  Walked with ef_search 100 it finds 0.87 of the exact
    # top 10 there (0.86 before, with 40), but on the python-docs dev set dense
    # nDCG@10 fell 0.005 and recall@20 0.02; with 160 both are back (0.571 and
    # 0.788 against 0.571 and 0.785), for about 0.3 ms more per dense search.
    # Storage migration 27 records the build parameters on indexes built earlier.
    # Streaming replicas that may answer searches (ragsage.adapters.postgres.replicas):
    # app-role URLs, each taken out of rotation while it lags more than
    # replica_max_lag seconds behind the primary or does not answer.
    replica_dsns: tuple[str, ...] = field(default=(), repr=False)
    replica_max_lag: float = 5.0
    # ef_construction went back to 64 (storage migration 35): on source code a
    # graph linked through a list of 40 found 0.84-0.85 of the exact top ten at
    # ef_search 160, and some definitions at no ef_search; with 64, 0.90-0.91, and
    # the code set's behaviour questions were answered as with exact ranking
    # (docs/retrieval.md, "Dense recall").  m stays 12: memory is unchanged.
    hnsw_m: int = 12
    hnsw_ef_construction: int = 64
    ef_search: int = 160
    # What the shared graph of each width holds: "vector" (4 bytes a dimension)
    # or "halfvec" (2).  On a million chunks halfvec's graph took 494 MB against
    # 963, found as many of the exact ten (0.73 / 0.69 against 0.71 / 0.71 for
    # two tenants walking it) and walked slightly faster (5.3 ms against 6.1);
    # vector stays the default, so an upgrade rebuilds nothing.  Changing it
    # rebuilds each width's graph at the next migrate (docs/scaling.md).
    hnsw_type: str = "vector"
    # A namespace whose live generation holds at least graph_rows chunks of a
    # width gets an HNSW graph of its own (ragsage.adapters.postgres.graphs; 0:
    # never).  Walking the shared graph, a large namespace is found with too
    # little recall (0.64 of the exact ten for 200,000 chunks of a million), and
    # a mid-size one is ranked exactly, row by row (24 ms for 12,000 chunks); on
    # a graph of its own, 0.97 and 1.00, with dense searches of 17 and 5.6 ms
    # (docs/scaling.md).  Its own graph is denser than the shared one and walked
    # with a longer list: m 24, ef_construction 200, ef_search 400 (at 250 the
    # largest found 0.95 in 12 ms).  It is dropped when the namespace falls below
    # half the threshold.
    graph_rows: int = 10_000
    graph_m: int = 24
    graph_ef_construction: int = 200
    graph_ef_search: int = 400
    # maintenance_work_mem for one graph's build: the largest namespace's graph
    # (232 MB for 200,000 chunks of 384 dimensions) is built fastest in memory.
    graph_build_memory: str = "1GB"

    @property
    def principals_variable(self) -> str:
        return principals_variable_for(self.isolation_variable)

    def __post_init__(self) -> None:
        try:
            safe_identifier(self.app_role)
            safe_setting_name(self.isolation_variable)
            safe_identifier(self.text_search_config)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from exc
        self._check_urls()
        if not 1 <= self.embedding_dim <= MAX_INDEXED_DIM:
            raise ConfigurationError(
                f"embedding_dim must be between 1 and {MAX_INDEXED_DIM}, got {self.embedding_dim}"
            )
        for width in self.embedding_widths:
            if not 1 <= width <= MAX_INDEXED_DIM:
                raise ConfigurationError(
                    f"every embedding width must be between 1 and {MAX_INDEXED_DIM}, got {width}"
                )
        if self.pool_size < 1 or self.max_overflow < 0:
            raise ConfigurationError("pool_size must be positive and max_overflow not negative")
        if self.statement_timeout_ms < 1:
            raise ConfigurationError("statement_timeout_ms must be positive")
        if not (2 <= self.hnsw_m <= 100 and 4 <= self.hnsw_ef_construction <= 1000):
            raise ConfigurationError("hnsw_m must be 2-100 and hnsw_ef_construction 4-1000")
        if not 1 <= self.ef_search <= 1000:
            raise ConfigurationError(f"ef_search must be between 1 and 1000, got {self.ef_search}")
        if self.hnsw_type not in HNSW_TYPES:
            raise ConfigurationError(
                f"hnsw_type must be one of {', '.join(HNSW_TYPES)}, got {self.hnsw_type!r}"
            )
        self._check_graphs()

    def _check_graphs(self) -> None:
        if self.graph_rows < 0:
            raise ConfigurationError(f"graph_rows must not be negative, got {self.graph_rows}")
        if not (2 <= self.graph_m <= 100 and 4 <= self.graph_ef_construction <= 1000):
            raise ConfigurationError("graph_m must be 2-100 and graph_ef_construction 4-1000")
        if not 1 <= self.graph_ef_search <= 1000:
            raise ConfigurationError(
                f"graph_ef_search must be between 1 and 1000, got {self.graph_ef_search}"
            )
        if _MEMORY.fullmatch(self.graph_build_memory) is None:
            raise ConfigurationError(
                "graph_build_memory is a Postgres memory size such as 512MB or 2GB, "
                f"got {self.graph_build_memory!r}"
            )

    def _check_urls(self) -> None:
        if not self.dsn and self.app_dsn is None:
            raise ConfigurationError("give the owner's URL, the app role's URL, or both")
        if self.dsn:
            async_url(self.dsn)
        for replica in self.replica_dsns:
            async_url(replica)
            if dsn_user(replica) != self.app_role:
                raise ConfigurationError(
                    f"a replica URL logs in as {dsn_user(replica)!r}; searches there run as "
                    f"the app role, {self.app_role!r}"
                )
        if self.replica_max_lag <= 0:
            raise ConfigurationError("replica_max_lag must be positive")
        if self.app_dsn is not None:
            async_url(self.app_dsn)
            user = dsn_user(self.app_dsn)
            if user != self.app_role:
                raise ConfigurationError(
                    f"the app database URL logs in as {user!r}, but app_role is {self.app_role!r}"
                )

    @property
    def widths(self) -> tuple[int, ...]:
        """Every vector width this install indexes, narrowest first."""
        return tuple(sorted({*self.embedding_widths, self.embedding_dim}))

    @property
    def has_owner(self) -> bool:
        """True when the owner's credentials were given (migrations, DDL)."""
        return bool(self.dsn)

    @property
    def uses_app_login(self) -> bool:
        """True when scoped work logs in as the app role rather than switching to it."""
        return self.app_dsn is not None

    @property
    def scoped_dsn(self) -> str:
        """The login scoped work connects with: the app role's, else the owner's."""
        return self.dsn if self.app_dsn is None else self.app_dsn
