"""``ragsage eval --backend postgres``: the real Postgres stores, a throwaway namespace."""

from __future__ import annotations

import json
import os
from pathlib import Path

import psycopg
import pytest

from ragsage.adapters.postgres import Database, PostgresConfig
from ragsage.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "eval"


@pytest.fixture
def env_for(pg_config: PostgresConfig, db: Database, monkeypatch: pytest.MonkeyPatch) -> str:
    """Point ``Settings.from_env()`` at the migrated test database."""
    assert pg_config.app_dsn is not None
    for name in list(os.environ):
        if name.startswith("RAGSAGE_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("RAGSAGE_DATABASE_URL", pg_config.dsn)
    monkeypatch.setenv("RAGSAGE_APP_DATABASE_URL", pg_config.app_dsn)
    monkeypatch.setenv("RAGSAGE_EMBEDDING_DIM", str(pg_config.embedding_dim))
    return pg_config.dsn


def _namespaces(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as connection:
        rows = connection.execute("SELECT DISTINCT namespace FROM ragsage_chunks").fetchall()
    return {row[0] for row in rows}


def test_postgres_backend_measures_and_cleans_up(
    env_for: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    saved = tmp_path / "pg.json"
    code = main(
        ["eval", str(FIXTURES / "qa-tiny"), "--backend", "postgres", "--retrieval", "lexical",
         "--no-cache", "--save", str(saved)]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    report = json.loads(saved.read_text())
    by_id = {q["id"]: q for q in report["questions"]}
    # Postgres full-text search finds the exact command at the top.
    assert by_id["q06"]["metrics"]["mrr"] == 1.0
    assert report["metrics"]["pass@10"] >= 0.8
    assert report["config"]["where"].startswith("postgres namespace eval-")
    assert report["timing"]["chunks"] > 0
    assert f"{report['metrics']['ndcg@10']:.3f}" in capsys.readouterr().out
    # The throwaway namespace is gone.
    assert _namespaces(env_for) == set()


def test_keep_leaves_the_namespace_in_place(
    env_for: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["eval", str(FIXTURES / "beir-tiny"), "--backend", "postgres", "--no-cache", "--keep"]
    )
    assert code == 0
    kept = _namespaces(env_for)
    assert len(kept) == 1 and next(iter(kept)).startswith("eval-")
    assert f"keeping namespace {next(iter(kept))!r}" in capsys.readouterr().err
