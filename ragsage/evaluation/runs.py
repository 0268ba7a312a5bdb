"""Saved runs: writing a report to a file, and comparing two of them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ragsage.evaluation.errors import DatasetError
from ragsage.evaluation.runner import NDCG_K, EvalReport, QuestionResult
from ragsage.evaluation.tables import columns, describe, format_value

RUN_VERSION = 1
_TIE = 1e-9


def save_run(report: EvalReport, path: str | Path) -> Path:
    """Write ``report`` as JSON (config, aggregates, per-question metrics and rankings)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    body = {"version": RUN_VERSION, **report.to_dict()}
    target.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return target


def load_run(path: str | Path) -> EvalReport:
    source = Path(path)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(source, "no such run file") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(source, f"not a run file: invalid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or data.get("version") != RUN_VERSION:
        raise DatasetError(source, "not a ragsage eval run (missing or unknown version)")
    try:
        return EvalReport.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise DatasetError(source, f"corrupt run file ({exc!r})") from None


@dataclass(frozen=True, slots=True)
class Change:
    """One question's nDCG@10 in both runs."""

    question: QuestionResult
    before: float
    after: float

    @property
    def delta(self) -> float:
        return self.after - self.before


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two runs' shared metrics and per-question outcomes on nDCG@10 (B relative to A)."""

    a: EvalReport
    b: EvalReport
    wins: tuple[Change, ...]
    losses: tuple[Change, ...]
    ties: int
    only_in_one: int

    @property
    def metric_names(self) -> list[str]:
        shared = [name for name in self.a.metrics if name in self.b.metrics]
        return sorted(shared, key=_metric_order)


def compare(a: EvalReport, b: EvalReport) -> Comparison:
    """Pair the runs' questions by id; wins are questions where B beats A on nDCG@10."""
    key = f"ndcg@{NDCG_K}"
    before = {q.id: q for q in a.questions}
    wins, losses, ties, paired = [], [], 0, 0
    for question in b.questions:
        old = before.get(question.id)
        if old is None:
            continue
        paired += 1
        change = Change(question, old.metrics.get(key, 0.0), question.metrics.get(key, 0.0))
        if change.delta > _TIE:
            wins.append(change)
        elif change.delta < -_TIE:
            losses.append(change)
        else:
            ties += 1
    wins.sort(key=lambda c: (-c.delta, c.question.id))
    losses.sort(key=lambda c: (c.delta, c.question.id))
    unpaired = len(a.questions) + len(b.questions) - 2 * paired
    return Comparison(a, b, tuple(wins), tuple(losses), ties, unpaired)


def comparison_table(result: Comparison, *, show: int = 5) -> str:
    """The two runs side by side with deltas, then the biggest wins and losses."""
    lines = [f"A: {describe(result.a.config)}", f"B: {describe(result.b.config)}", ""]
    rows = [["metric", "A", "B", "delta"]]
    for name in result.metric_names:
        old, new = result.a.metrics[name], result.b.metrics[name]
        rows.append(
            [name, format_value(name, old), format_value(name, new), _delta(name, new - old)]
        )
    for name in ("p50_ms", "p95_ms"):
        if name in result.a.timing and name in result.b.timing:
            old, new = result.a.timing[name], result.b.timing[name]
            rows.append([f"latency {name[:3]} ms", f"{old:.1f}", f"{new:.1f}", f"{new - old:+.1f}"])
    lines.extend(columns(rows, (16, 10, 10, 10)))
    lines.append("")
    lines.append(
        f"per question on nDCG@{NDCG_K}: {len(result.wins)} wins, {len(result.losses)} losses, "
        f"{result.ties} ties (B against A)"
        + (f"; {result.only_in_one} questions in only one run" if result.only_in_one else "")
    )
    for title, changes in (("biggest wins", result.wins), ("biggest losses", result.losses)):
        if changes:
            lines.append(f"{title}:")
            for change in changes[:show]:
                lines.append(
                    f"  {change.delta:+.3f}  {change.before:.3f} -> {change.after:.3f}  "
                    f"[{change.question.id}] {_short(change.question.question)}"
                )
    return "\n".join(lines)


def _delta(name: str, value: float) -> str:
    return f"{value:+.0f}" if name.startswith("tokens") else f"{value:+.3f}"


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _metric_order(name: str) -> tuple[int, int]:
    family, _, k = name.partition("@")
    order = {"ndcg": 0, "recall": 1, "pass": 2, "mrr": 3, "tokens": 4}
    return order.get(family, 9), int(k) if k.isdigit() else 0
