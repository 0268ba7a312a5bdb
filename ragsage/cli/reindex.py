"""``ragsage reindex``: a re-index into another embedding model, followed to its switch.

With ``--gate`` the new generation is held, scored against the live one on a
dataset, and switched only if recall@10 does not fall by more than the margin.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from tqdm import tqdm

from ragsage.core.errors import InvalidRequest

# Kept here rather than imported: registering the command must stay cheap.
GATE_MARGIN = 0.02
# Exit status when the gate refuses a switch (1 is failed documents, 2 bad input).
GATE_REFUSED = 3


def reindex_command(args: argparse.Namespace) -> int:
    """``ragsage reindex``: start, follow, gate, roll back or report a re-index."""
    from ragsage.jobs.enqueue import default_enqueuer

    _check_gate_flags(args)
    enqueuer = default_enqueuer()
    if args.gate:
        return _gated_reindex(args, enqueuer)
    namespaces = enqueuer.namespaces() if args.all else [args.namespace]
    if args.status:
        for namespace in namespaces:
            _print_status(namespace, enqueuer.reindex.status(namespace))
        return 0
    if args.rollback or args.drop_previous:
        return _maintain(enqueuer, namespaces, rollback=args.rollback, force=args.force)
    kind = args.embedder or enqueuer.settings.embedder
    started: dict[str, int] = {}
    for namespace in namespaces:
        generation, sent = enqueuer.reindex.start(
            namespace, embedder=kind, model=args.embedding_model, dim=args.dim
        )
        started[namespace] = generation
        print(
            f"{namespace}: generation {generation} building with {args.embedding_model}; "
            f"{sent} documents queued"
        )
    if args.no_wait:
        return 0
    outcomes = _follow_reindex(enqueuer, started, args.timeout)
    return 0 if all(outcome == "active" for outcome in outcomes.values()) else 1


def _check_gate_flags(args: argparse.Namespace) -> None:
    gate_only = {
        "--force": args.force and not args.rollback,
        "--gate-margin": args.gate_margin is not None,
        "--gate-retrieval": args.gate_retrieval is not None,
        "--gate-split": args.gate_split is not None,
    }
    if not args.gate:
        used = [flag for flag, given in gate_only.items() if given]
        if used:
            raise InvalidRequest(f"{', '.join(used)}: only meaningful with --gate DATASET")
        return
    if args.all:
        raise InvalidRequest("--gate needs --namespace: a dataset describes one namespace")
    if not args.embedding_model:
        raise InvalidRequest("--gate goes with --embedding-model (the model to switch to)")
    if args.no_wait:
        raise InvalidRequest("--gate waits for the new generation, so it excludes --no-wait")


def _gated_reindex(args: argparse.Namespace, enqueuer: Any) -> int:
    """Re-index held, evaluate both generations, then switch or refuse."""
    from ragsage.core.scopes import Scope
    from ragsage.evaluation.datasets import load_dataset
    from ragsage.jobs import gate
    from ragsage.runtime import build_runtime

    namespace, scope = args.namespace, Scope(args.namespace)
    margin = GATE_MARGIN if args.gate_margin is None else args.gate_margin
    gate.passes(0.0, 0.0, margin)
    dataset = load_dataset(args.gate, split=args.gate_split)
    runtime = build_runtime(enqueuer.settings)
    try:
        match = enqueuer.run(gate.match_namespace(runtime, scope, dataset))
        print(
            f"{namespace}: gate dataset {dataset.name!r}: {match.matched} of "
            f"{len(dataset.documents)} documents found, {len(match.questions)} questions"
        )
        for missing in match.missing:
            print(f"  not in the namespace: {missing}", file=sys.stderr)
        if match.skipped:
            plural = "" if match.skipped == 1 else "s"
            print(f"  {match.skipped} question{plural} about them skipped", file=sys.stderr)
        kind = args.embedder or enqueuer.settings.embedder
        generation, sent = enqueuer.reindex.start(
            namespace, embedder=kind, model=args.embedding_model, dim=args.dim, held=True
        )
        print(
            f"{namespace}: generation {generation} building with {args.embedding_model} "
            f"(held for the gate); {sent} documents queued"
        )
        outcome = _follow_reindex(enqueuer, {namespace: generation}, args.timeout, held=True)
        if outcome[namespace] == "active":
            print(f"{namespace}: it was activated outside the gate; not judged", file=sys.stderr)
        if outcome[namespace] != "complete":
            return 1
        live = {g["id"]: g for g in enqueuer.reindex.status(namespace)}
        active = next(g for g in live.values() if g["state"] == "active")
        retrieval = args.gate_retrieval or "hybrid"
        verdict = enqueuer.run(
            gate.judge_switch(
                runtime,
                scope,
                active=active["id"],
                building=generation,
                match=match,
                margin=margin,
                retrieval=retrieval,
            )
        )
    finally:
        enqueuer.run(runtime.aclose())
    print(
        f"{namespace}: {len(match.questions)} questions, {retrieval} retrieval; "
        f"active: {_label(active)}; new: {_label(live[generation])}"
    )
    print(gate.verdict_table(verdict, ("active", "new")))
    enqueuer.reindex.record_gate(
        namespace,
        generation,
        {
            "dataset": dataset.name,
            "questions": len(match.questions),
            "retrieval": retrieval,
            "metric": gate.GATE_METRIC,
            "active": verdict.active.metrics[gate.GATE_METRIC],
            "new": verdict.building.metrics[gate.GATE_METRIC],
            "drop": verdict.drop,
            "margin": margin,
            "passed": verdict.passed,
            "forced": bool(args.force and not verdict.passed),
        },
    )
    if verdict.passed or args.force:
        enqueuer.reindex.activate_held(namespace, generation)
        why = "passed the gate" if verdict.passed else "forced past the gate"
        print(f"{namespace}: switched to generation {generation} ({why})")
        return 0
    print(
        f"{namespace}: refused: recall@10 fell by {verdict.drop:.4f}, more than the margin "
        f"{margin:.4f}. Generation {generation} is left building and serves nothing; either "
        f"discard it with `ragsage reindex --namespace {namespace} --rollback`, or activate it "
        "anyway by re-running this command with --force.",
        file=sys.stderr,
    )
    return GATE_REFUSED


def _label(generation: dict[str, Any]) -> str:
    return (
        f"generation {generation['id']} ({generation['embedder']}/{generation['embedding_model']})"
    )


def _follow_reindex(
    enqueuer: Any, started: dict[str, int], timeout: float, *, held: bool = False
) -> dict[str, str]:
    """Wait for each building generation to switch in, or (``held``) to be complete.

    Returns each namespace's outcome: active, complete, failed, gone or timeout.
    """
    deadline = time.monotonic() + timeout
    return {
        namespace: _follow_one(enqueuer, namespace, generation, deadline, held=held)
        for namespace, generation in started.items()
    }


def _follow_one(
    enqueuer: Any, namespace: str, generation: int, deadline: float, *, held: bool
) -> str:
    with tqdm(unit="doc", desc=namespace, disable=not sys.stderr.isatty()) as bar:
        while True:
            rows = enqueuer.reindex.status(namespace)
            row = next((g for g in rows if g["id"] == generation), None)
            if row is None:
                print(
                    f"{namespace}: generation {generation} is gone (rolled back?)", file=sys.stderr
                )
                return "gone"
            bar.total = row["total"]
            bar.n = row["done"]
            bar.refresh()
            if row["state"] == "active":
                print(f"{namespace}: switched to generation {generation}")
                return "active"
            if held and row["complete"]:
                return "complete"
            if row["pending"] == 0 and row["failed"]:
                print(
                    f"{namespace}: {row['failed']} documents failed; generation "
                    f"{generation} was not activated:",
                    file=sys.stderr,
                )
                for failure in row["failures"]:
                    print(f"  {failure['filename']}: {failure['error']}", file=sys.stderr)
                return "failed"
            if time.monotonic() >= deadline:
                print(
                    f"{namespace}: generation {generation} is still building; follow it with "
                    f"`ragsage reindex --namespace {namespace} --status`",
                    file=sys.stderr,
                )
                return "timeout"
            time.sleep(0.5)


def _maintain(enqueuer: Any, namespaces: list[str], *, rollback: bool, force: bool) -> int:
    for namespace in namespaces:
        if rollback:
            generation = enqueuer.reindex.rollback(namespace, force=force)
            model = generation.embedding_model
            print(f"{namespace}: generation {generation.id} ({model}) is active")
        else:
            freed = enqueuer.reindex.drop_previous(namespace)
            print(f"{namespace}: dropped retired generations, freeing {freed} chunks")
    return 0


def _print_status(namespace: str, generations: list[dict[str, Any]]) -> None:
    print(f"{namespace}:")
    for g in generations:
        progress = f"{g['done']}/{g['total']} done" if g["state"] == "building" else ""
        if g.get("awaiting_gate"):
            progress = "complete, awaiting gate"
        failed = f", {g['failed']} failed" if g["failed"] else ""
        print(
            f"  {g['id']:>3}  {g['state']:<8}  {g['embedder']}/{g['embedding_model']} "
            f"({g['embedding_dim']}d)  {g['chunks']} chunks  {progress}{failed}"
        )
