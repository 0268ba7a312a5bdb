"""Definitions, lines and windows on the code set, family by family and split by split.

    python bench/studies/code_windows.py [--dataset .ragsage/eval/code] [--windows 256 192]
                                         [--out runs/code-windows] [--table-only]

``bench/stack.py``'s ``local_stack`` starts an embedded Postgres (and Redis),
migrated; each reading is indexed and asked every question of the set with
``ragsage eval --backend postgres --embedder local`` (the embedding cache
under ``.ragsage/eval-cache`` is shared, so a second run embeds only texts it
has not seen): ``definitions``
(windows off), ``lines`` and one run per ``--windows`` size.  The runs are saved
under ``--out``; the table gives, for each family and split, the answers found
within 330 / 660 / 1,320 words (headings counted) and the language-averaged
share at 660.  ``--table-only`` prints the table of runs saved before.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = ("developer", "behaviour", "behaviour-2", "doc-comment", "span", "handwritten")
BUDGETS = (330, 660, 1320)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=ROOT / ".ragsage/eval/code")
    parser.add_argument("--windows", type=int, nargs="*", default=[256, 192])
    parser.add_argument("--out", type=Path, default=ROOT / "runs/code-windows")
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args()
    setups = {"definitions": ["--code-window", "0"], "lines": ["--code-chunking", "lines"]}
    setups |= {f"windows-{n}": ["--code-window", str(n)] for n in args.windows}
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.table_only:
        _run_all(args.dataset, args.out, setups)
    runs = {
        name: args.out / f"{name}.json" for name in setups if (args.out / f"{name}.json").exists()
    }
    print(_table(args.dataset, runs))
    return 0


def _run_all(dataset: Path, out: Path, setups: dict[str, list[str]]) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    from stack import local_stack, migrate

    with local_stack("codewindows") as stack:
        settings = stack.settings
        migrate(settings)
        env = {
            **os.environ,
            "RAGSAGE_DATABASE_URL": settings.database_url,
            "RAGSAGE_APP_DATABASE_URL": settings.app_database_url,
            "RAGSAGE_EMBEDDING_DIM": str(settings.embedding_dim),
            "PYTHONPATH": str(ROOT),
        }
        ragsage = Path(sys.executable).with_name("ragsage")
        for name, flags in setups.items():
            saved = out / f"{name}.json"
            command = [str(ragsage), "eval", str(dataset), "--backend", "postgres"]
            command += ["--embedder", "local", *flags, "--save", str(saved)]
            print(f"{name}: {' '.join(command[1:])}", flush=True)
            subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)


def _table(dataset: Path, runs: dict[str, Path]) -> str:
    splits = {}
    for line in (dataset / "questions.jsonl").read_text().splitlines():
        record = json.loads(line)
        splits[record["id"]] = record["split"]
    loaded = {name: json.loads(path.read_text())["questions"] for name, path in runs.items()}
    header = f"{'family':<12}{'split':<6}" + "".join(f"{name:>28}" for name in loaded)
    lines = [
        f"answers found within {' / '.join(map(str, BUDGETS))} words (language average at 660)"
    ]
    lines += [header, "-" * len(header)]
    for family in FAMILIES:
        for split in ("dev", "test"):
            row = f"{family:<12}{split:<6}"
            for questions in loaded.values():
                chosen = [
                    q for q in questions if q["family"] == family and splits[q["id"]] == split
                ]
                if not chosen:
                    row += f"{'-':>28}"
                    continue
                found = [sum(q["metrics"][f"budget@{b}"] for q in chosen) for b in BUDGETS]
                by_kind: dict[str, list[float]] = defaultdict(list)
                for q in chosen:
                    by_kind[q["kind"]].append(q["metrics"]["budget@660"])
                average = sum(sum(v) / len(v) for v in by_kind.values()) / len(by_kind)
                counts = "/".join(f"{n:.0f}" for n in found)
                row += f"{counts + f' of {len(chosen)}':>20} ({average:.3f})"
            lines.append(row)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
