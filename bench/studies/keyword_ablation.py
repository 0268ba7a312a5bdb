"""Keyword-search ablations on an evaluation namespace, for bench/RESULTS.md.

    RAGSAGE_DATABASE_URL=... ragsage eval DATASET --backend postgres --keep ...
    RAGSAGE_DATABASE_URL=... python bench/studies/keyword_ablation.py DATASET \\
        --namespace eval-xxxx --variant shipped|headings-x10|no-identifiers|before \\
        [--alpha 0.0] [--split dev]

Rewrites the keyword index of the whole database to the variant (the search
function, and for ``no-identifiers``/``before`` the generated column), then
evaluates the kept namespace's questions through the normal query engine.  It
changes the schema, so point it only at a throwaway evaluation database; run
``--variant shipped`` to put the shipped form back.  ``RAGSAGE_FUSION`` and
``RAGSAGE_KEYWORD_WEIGHTING`` pick fusion and keyword weighting as usual.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics

from sqlalchemy import text

from ragsage.adapters.parsing.tokens import make_token_counter
from ragsage.adapters.postgres import migrations
from ragsage.adapters.postgres.config import PostgresConfig
from ragsage.core.identity import content_hash
from ragsage.core.scopes import Scope
from ragsage.evaluation.datasets import load_dataset
from ragsage.evaluation.runner import evaluate
from ragsage.query import RetrievalOptions, RetrievalResult
from ragsage.runtime import build_runtime
from ragsage.settings import Settings

SHIPPED_WEIGHTS = "{0.1, 0.2, 0.4, 0.1}"
HEADINGS_X10 = "{0.1, 0.2, 0.4, 1.0}"
WITH_IDENTIFIERS = "ragsage_identifier_words(query_text)"


def variant_statements(config: PostgresConfig, variant: str) -> list[str]:
    """Migration 7's keyword column and today's keyword search function, edited into ``variant``.

    The function is made again whole, so ``shipped`` puts the shipped form back.
    """
    column = [
        s
        for s in migrations.migration_statements(config, from_version=6, to_version=7)
        if "lexical" in s and "ragsage_lexical_search" not in s
    ]
    function = [
        s
        for s in migrations.function_statements(config, version=migrations.LATEST_VERSION)
        if "ragsage_keyword_search(" in s
    ]
    edited = []
    for statement in [*column, *function]:
        if variant in ("headings-x10", "before"):
            statement = statement.replace(SHIPPED_WEIGHTS, HEADINGS_X10)
        if variant in ("no-identifiers", "before"):
            statement = statement.replace(f"query_text || ' ' || {WITH_IDENTIFIERS}", "query_text")
            if "ADD COLUMN lexical" in statement:
                statement = (
                    "ALTER TABLE ragsage_chunks ADD COLUMN lexical tsvector GENERATED ALWAYS AS ("
                    f"setweight(to_tsvector('{config.text_search_config}'::regconfig, headings), "
                    f"'A') || setweight(to_tsvector('{config.text_search_config}'::regconfig, "
                    "text), 'D')) STORED"
                )
        edited.append(statement)
    return [*edited, "ANALYZE ragsage_chunks"]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("--namespace", required=True, help="kept by 'ragsage eval --keep'")
    parser.add_argument(
        "--variant", choices=("shipped", "headings-x10", "no-identifiers", "before")
    )
    parser.add_argument("--alpha", type=float, default=0.0, help="dense weight (0 = keyword only)")
    parser.add_argument("--split", default="dev")
    args = parser.parse_args()

    settings = Settings.from_env()
    runtime = build_runtime(settings)
    try:
        if args.variant:
            async with runtime.database.owner_connection() as connection:
                for statement in variant_statements(runtime.database.config, args.variant):
                    await connection.execute(text(statement))
                await connection.commit()
        dataset = load_dataset(args.dataset, split=args.split)
        scope = Scope(args.namespace)
        engine = await runtime.query_engine_for(scope)
        mapping: dict[str, list[str]] = {}
        for document in dataset.documents:
            found = await engine.document_store.find_by_hash(scope, content_hash(document.content))
            if found is not None:
                mapping.setdefault(found.id, []).append(document.id)

        async def search(query: str, options: RetrievalOptions) -> RetrievalResult:
            return await engine.search(scope, query, options)

        report = await evaluate(
            search,
            dataset.questions,
            ks=(5, 10, 20),
            options=RetrievalOptions(hybrid_alpha=args.alpha, rerank=False),
            document_ids=mapping,
            count_tokens=make_token_counter(),
        )
        metrics = report.metrics
        latency = statistics.median(q.latency_ms for q in report.questions)
        print(
            f"{args.variant or 'as is'} alpha={args.alpha} fusion={settings.fusion} "
            f"weighting={settings.keyword_weighting}: "
            + " ".join(
                f"{name}={metrics[name]:.3f}"
                for name in ("ndcg@10", "recall@10", "mrr", "tokens@10")
                if name in metrics
            )
            + f" p50={latency:.1f}ms"
        )
    finally:
        await runtime.aclose()


if __name__ == "__main__":
    asyncio.run(main())
