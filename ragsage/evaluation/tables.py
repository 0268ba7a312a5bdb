"""Plain-text tables of evaluation reports, for a terminal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragsage.evaluation.runner import NDCG_K, EvalReport

ROWS = (("ndcg", "nDCG"), ("recall", "recall"), ("pass", "Pass"), ("tokens", "tokens"))


def format_value(name: str, value: float) -> str:
    return f"{value:.0f}" if name.startswith("tokens") else f"{value:.3f}"


def describe(config: dict[str, Any]) -> str:
    """One line saying what was measured and how."""
    parts = [
        f"dataset {config.get('dataset', '?')} ({config.get('format', '?')}"
        + (f", split {config['split']})" if config.get("split") else ")"),
        f"backend {config.get('backend', '?')}",
        f"embedder {config.get('embedding_model', '?')}",
        f"retrieval {config.get('retrieval', '?')} (alpha {_alpha(config)})",
        f"rerank {'on' if config.get('rerank') else 'off'}",
    ]
    if config.get("chunk_size"):
        parts.append(f"chunks {config['chunk_size']}/{config.get('chunk_overlap', '?')} tokens")
    return " · ".join(parts)


def _alpha(config: dict[str, Any]) -> str:
    # A run saved before the engine could choose the weight says '?' instead.
    if "hybrid_alpha" not in config:
        return "?"
    alpha = config["hybrid_alpha"]
    return "chosen by the engine" if alpha is None else str(alpha)


def report_table(report: EvalReport) -> str:
    """The metric × k table, MRR, the per-kind breakdown and the timings."""
    ks = report.ks
    lines = [describe(report.config), ""]
    lines.append(f"{'metric':<8}" + "".join(f"{'@' + str(k):>9}" for k in ks))
    for key, label in ROWS:
        cells = []
        for k in ks:
            value = report.metrics.get(f"{key}@{k}")
            cells.append("-" if value is None else format_value(key, value))
        lines.append(f"{label:<8}" + "".join(f"{cell:>9}" for cell in cells))
    budgets = [name for name in sorted(report.metrics, key=_budget) if name.startswith("budget@")]
    if budgets:
        found = "  ".join(f"{name[7:]}: {report.metrics[name]:.3f}" for name in budgets)
        lines.append(f"found within a token budget (whitespace tokens)  {found}")
    depth = report.config.get("mrr_depth") or report.config.get("top_k")
    lines.append(f"{'MRR':<8}{report.metrics.get('mrr', 0.0):>9.3f}   (cut at rank {depth})")
    if report.by_kind:
        lines.extend(["", _kinds(report)])
    lines.extend(["", _timing(report)])
    return "\n".join(lines)


def _budget(name: str) -> int:
    _, _, size = name.partition("@")
    return int(size) if size.isdigit() else 0


def _kinds(report: EvalReport) -> str:
    deepest = max(report.ks)
    budget = "budget@660" if "budget@660" in report.metrics else None
    header = (
        f"{'kind':<16}{'n':>5}{f'nDCG@{NDCG_K}':>10}{'MRR':>8}"
        f"{f'recall@{deepest}':>12}{f'tokens@{deepest}':>12}"
        + (f"{'found@660t':>12}" if budget else "")
    )
    rows = [header]
    for kind, metrics in sorted(report.by_kind.items()):
        count = sum(1 for q in report.questions if q.kind == kind)
        rows.append(
            f"{kind[:15]:<16}{count:>5}{metrics.get(f'ndcg@{NDCG_K}', 0.0):>10.3f}"
            f"{metrics.get('mrr', 0.0):>8.3f}{metrics.get(f'recall@{deepest}', 0.0):>12.3f}"
            f"{metrics.get(f'tokens@{deepest}', 0.0):>12.0f}"
            + (f"{metrics.get(budget, 0.0):>12.3f}" if budget else "")
        )
    return "\n".join(rows)


def _timing(report: EvalReport) -> str:
    t = report.timing
    index = ""
    if "index_s" in t:
        chunks = f", {int(t['chunks'])} chunks" if "chunks" in t else ""
        index = f"index {t['index_s']:.1f} s ({int(t.get('documents', 0))} documents{chunks}) · "
    return (
        f"{len(report.questions)} questions · {index}queries {t.get('query_s', 0.0):.1f} s · "
        f"latency p50 {t.get('p50_ms', 0.0):.1f} ms, p95 {t.get('p95_ms', 0.0):.1f} ms"
    )


def columns(rows: Sequence[Sequence[str]], widths: Sequence[int]) -> list[str]:
    """Rows of cells, the first left-aligned and the rest right-aligned."""
    out = []
    for row in rows:
        first, *rest = row
        out.append(
            f"{first:<{widths[0]}}"
            + "".join(f"{cell:>{w}}" for cell, w in zip(rest, widths[1:], strict=True))
        )
    return out
