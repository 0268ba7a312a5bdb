"""The code dataset through a running API: definitions against lines, real names against .txt.

    python bench/studies/eval_code_api.py [--dataset .ragsage/eval/code] [--split test]
                                  [--embedders hashing local] [--out runs/code]

For each embedder, four stacks are started one after another with
``ragsage up`` (embedded Postgres and Redis, one worker, the API; each in a
fresh data folder, so nothing is shared or deduplicated between them):

* ``definitions`` — the shipped reading (``RAGSAGE_CODE_CHUNKING=definitions``),
  files uploaded under their real names;
* ``lines`` — every source file one code block cut by lines (the plain reading);
* ``lines-200`` — the same at 200-token chunks, whose top 10 holds about as many
  tokens as a top 10 of definitions: the comparison at an equal token budget;
* ``as-text`` — the shipped reading, every file uploaded as ``text/plain`` with
  its extension replaced by ``.txt`` (the detector has to find the language).

Each is asked the split's questions with hybrid, keyword-only and dense-only
retrieval (``ragsage eval --backend api``); the runs are saved under ``--out``
and compared with ``ragsage eval --compare`` (paired bootstrap over languages).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAGSAGE = Path(sys.executable).with_name("ragsage")
SETUPS = {
    "definitions": ({"RAGSAGE_CODE_CHUNKING": "definitions"}, []),
    "lines": ({"RAGSAGE_CODE_CHUNKING": "lines"}, []),
    # Lines at about the tokens a top 10 of definitions hands over: an equal budget.
    "lines-200": (
        {
            "RAGSAGE_CODE_CHUNKING": "lines",
            "RAGSAGE_CHUNK_SIZE": "200",
            "RAGSAGE_CHUNK_OVERLAP": "24",
        },
        [],
    ),
    "as-text": ({"RAGSAGE_CODE_CHUNKING": "definitions"}, ["--upload-as-text"]),
}
MODES = ("hybrid", "lexical", "dense")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, default=Path(".ragsage/eval/code"))
    parser.add_argument("--split", default="test")
    parser.add_argument("--embedders", nargs="+", default=["hashing", "local"])
    parser.add_argument("--setups", nargs="+", default=list(SETUPS), choices=list(SETUPS))
    parser.add_argument("--out", type=Path, default=Path("runs/code"))
    parser.add_argument("--port", type=int, default=8731)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for embedder in args.embedders:
        for setup in args.setups:
            environment, flags = SETUPS[setup]
            env = {**os.environ, **environment, "RAGSAGE_EMBEDDER": embedder}
            with _stack(env, args.port) as key:
                for mode in MODES:
                    saved = args.out / f"{embedder}-{setup}-{mode}.json"
                    command = [
                        str(RAGSAGE), "eval", str(args.dataset), "--split", args.split,
                        "--backend", "api", "--api-url", f"http://127.0.0.1:{args.port}",
                        "--retrieval", mode, "--api-timeout", "3600", "--save", str(saved),
                        *flags,
                    ]  # fmt: skip
                    print(f"== {embedder} {setup} {mode}", flush=True)
                    subprocess.run(command, env={**env, "RAGSAGE_API_KEY": key}, check=True)
        for mode in MODES:
            pairs = (
                ("lines", "definitions"),
                ("lines-200", "definitions"),
                ("definitions", "as-text"),
            )
            for base, other in pairs:
                first = args.out / f"{embedder}-{base}-{mode}.json"
                second = args.out / f"{embedder}-{other}-{mode}.json"
                if first.exists() and second.exists():
                    print(f"\n== {embedder} {mode}: {base} (A) against {other} (B)", flush=True)
                    subprocess.run([str(RAGSAGE), "eval", "--compare", str(first), str(second)])
    return 0


class _stack:
    """``ragsage up`` in a fresh data folder, stopped (and the folder removed) on exit."""

    def __init__(self, env: dict[str, str], port: int) -> None:
        self.env, self.port = env, port
        self.data = Path(tempfile.mkdtemp(prefix="ragsage-code-eval-"))

    def __enter__(self) -> str:
        command = [
            str(RAGSAGE), "up", "--data-dir", str(self.data), "--port", str(self.port),
            "--no-samples",
        ]  # fmt: skip
        log = (self.data / "up.log").open("w")
        self.process = subprocess.Popen(
            command, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + 300
        while "API ready" not in (self.data / "up.log").read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"ragsage up failed:\n{(self.data / 'up.log').read_text()}")
            time.sleep(1)
        return (self.data / "api-key").read_text().strip()

    def __exit__(self, *exc: object) -> None:
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        shutil.rmtree(self.data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
