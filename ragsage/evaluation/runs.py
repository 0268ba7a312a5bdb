"""Saved runs: writing a report to a file, and comparing two of them."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragsage.evaluation.errors import DatasetError
from ragsage.evaluation.judging import BUDGETS
from ragsage.evaluation.runner import NDCG_K, EvalReport, QuestionResult
from ragsage.evaluation.tables import columns, describe, format_value

RUN_VERSION = 1
_TIE = 1e-9
BOOTSTRAP_ROUNDS = 10_000


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
    # Per metric: B - A, and its 95% paired-bootstrap interval.
    intervals: dict[str, tuple[float, float, float]] = field(default_factory=dict)

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
    intervals = {}
    for name in (f"ndcg@{NDCG_K}", f"recall@{NDCG_K}", "recall@5", "mrr", *BUDGET_METRICS):
        if name in a.metrics and name in b.metrics:
            pairs, files = _pairs(a, b, name)
            intervals[name] = paired_bootstrap(pairs, clusters=files)
    return Comparison(a, b, tuple(wins), tuple(losses), ties, unpaired, intervals)


BUDGET_METRICS = tuple(f"budget@{budget}" for budget in BUDGETS)


def _pairs(
    a: EvalReport, b: EvalReport, name: str
) -> tuple[list[tuple[str, float, float]], list[str]]:
    """Each shared question's (kind, A, B), and the file holding its answer."""
    before = {q.id: q for q in a.questions}
    shared = [q for q in b.questions if q.id in before]
    pairs = [
        (q.kind or "", before[q.id].metrics.get(name, 0.0), q.metrics.get(name, 0.0))
        for q in shared
    ]
    return pairs, [q.source or q.id for q in shared]


def paired_bootstrap(
    pairs: list[tuple[str, float, float]],
    *,
    rounds: int = BOOTSTRAP_ROUNDS,
    seed: int = 0,
    clusters: Sequence[str] | None = None,
) -> tuple[float, float, float]:
    """B - A averaged over kinds, and its 95% interval by a stratified paired bootstrap.

    Each kind (a language, a question family) weighs the same, so a big
    family cannot carry a small one; every round redraws each kind's
    questions with replacement, keeping each question's A and B together.
    With ``clusters`` (one per pair, say the file holding the answer), whole
    clusters are redrawn instead: questions about one file are not
    independent, and resampling them one by one would claim too narrow an
    interval.
    """
    strata: dict[str, dict[str, list[float]]] = {}
    for index, (kind, old, new) in enumerate(pairs):
        cluster = clusters[index] if clusters is not None else str(index)
        strata.setdefault(kind, {}).setdefault(cluster, []).append(new - old)
    if not strata:
        return 0.0, 0.0, 0.0
    groups = [list(by_cluster.values()) for by_cluster in strata.values()]

    def macro(samples: list[list[list[float]]]) -> float:
        means = []
        for drawn in samples:
            deltas = [delta for cluster in drawn for delta in cluster]
            means.append(sum(deltas) / len(deltas))
        return sum(means) / len(means)

    generator = random.Random(seed)
    draws = sorted(
        macro([generator.choices(group, k=len(group)) for group in groups]) for _ in range(rounds)
    )
    low = draws[int(0.025 * (rounds - 1))]
    high = draws[int(0.975 * (rounds - 1))]
    return macro(groups), low, high


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
    if result.intervals:
        lines.append("B - A averaged over kinds, with its 95% paired-bootstrap interval:")
        for name, (delta, low, high) in result.intervals.items():
            verdict = "above zero" if low > 0 else "below zero" if high < 0 else "spans zero"
            lines.append(f"  {name:<10} {delta:+.3f}  [{low:+.3f}, {high:+.3f}]  {verdict}")
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
    order = {"ndcg": 0, "recall": 1, "pass": 2, "mrr": 3, "budget": 4, "tokens": 5}
    return order.get(family, 9), int(k) if k.isdigit() else 0
