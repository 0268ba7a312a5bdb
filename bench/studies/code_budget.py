"""ragsage against the plain baseline on the code set, at equal token budgets, per family.

    python bench/studies/code_budget.py [--dataset .ragsage/eval/code] [--split dev [test]]
                                [--families developer behaviour doc-comment handwritten]
                                [--label shipped] [--env NAME=VALUE ...] [--out runs/code-budget]

Starts ``ragsage up`` with offline defaults (plus any ``--env`` settings) in a
fresh data folder, uploads the code set through the API under the files' real
names, and asks each family's questions of the split (``ragsage eval --backend
api``); then asks the same questions of the plain baseline (``ragsage eval
--backend baseline``, run once and kept), and prints, per family, what each
finds within 330, 660 and 1,320 whitespace tokens of results and nDCG@10, with
the paired bootstrap's 95% interval for ragsage minus the baseline, resampled
by file and averaged over languages.  ``--as-text`` uploads every file as
``.txt`` instead.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

# Run as a script, this folder (bench/studies/) is on sys.path: its sibling imports directly.
from eval_code_api import RAGSAGE, _stack

from ragsage.evaluation.runs import compare, load_run

FAMILIES = ("developer", "behaviour", "doc-comment", "handwritten")
SHOWN = ("budget@330", "budget@660", "budget@1320", "ndcg@10")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=Path(".ragsage/eval/code"))
    parser.add_argument("--split", nargs="+", default=["dev"], help="one index, asked each")
    parser.add_argument("--families", nargs="+", default=list(FAMILIES))
    parser.add_argument("--label", default="shipped", help="names this run's files")
    parser.add_argument("--env", nargs="*", default=[], metavar="NAME=VALUE")
    parser.add_argument("--as-text", action="store_true", help="upload every file as .txt")
    parser.add_argument("--out", type=Path, default=Path("runs/code-budget"))
    parser.add_argument("--port", type=int, default=8731)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    extra = dict(item.split("=", 1) for item in args.env)
    flags = ["--upload-as-text"] if args.as_text else []
    env = {**os.environ, **extra}
    with _stack(env, args.port) as key:
        for split in args.split:
            for family in args.families:
                saved = args.out / f"{args.label}-{family}-{split}.json"
                _eval(args, split, family, saved, ["--backend", "api", "--api-url",
                      f"http://127.0.0.1:{args.port}", "--api-timeout", "3600", *flags],
                      {**env, "RAGSAGE_API_KEY": key})  # fmt: skip
    for split in args.split:
        for family in args.families:
            baseline = args.out / f"baseline-{family}-{split}.json"
            if not baseline.exists():
                _eval(args, split, family, baseline, ["--backend", "baseline", *flags], env)
        _print(args, split)
    return 0


def _print(args: argparse.Namespace, split: str) -> None:
    print(f"\n{args.label} against the plain baseline, split {split}"
          f"{' (uploaded as .txt)' if args.as_text else ''}:")  # fmt: skip
    print(f"{'family':<13}{'n':>5}  " + "".join(f"{name:>36}" for name in SHOWN))
    for family in args.families:
        base = load_run(args.out / f"baseline-{family}-{split}.json")
        ours = load_run(args.out / f"{args.label}-{family}-{split}.json")
        result = compare(base, ours)
        cells = []
        for name in SHOWN:
            delta, low, high = result.intervals[name]
            cells.append(
                f"{ours.metrics[name]:.3f} vs {base.metrics[name]:.3f} "
                f"{delta:+.3f} [{low:+.3f},{high:+.3f}]"
            )
        print(f"{family:<13}{len(ours.questions):>5}  " + "".join(f"{c:>36}" for c in cells))
        by_language = {
            kind: round(values["budget@660"] - base.by_kind[kind]["budget@660"], 3)
            for kind, values in sorted(ours.by_kind.items())
        }
        print(f"{'':<20}budget@660 by language, ragsage - baseline: {json.dumps(by_language)}")


def _eval(
    args: argparse.Namespace,
    split: str,
    family: str,
    saved: Path,
    backend: list[str],
    env: dict[str, str],
) -> None:
    command = [
        str(RAGSAGE), "eval", str(args.dataset), "--split", split, "--family", family,
        "--save", str(saved), *backend,
    ]  # fmt: skip
    print(f"== {saved.stem}", flush=True)
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    sys.exit(main())
