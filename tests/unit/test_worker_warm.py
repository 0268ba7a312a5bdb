"""The worker's main process loads what its pool children would each load on a first job."""

from __future__ import annotations

import json

from tests.unit.fresh_python import run_fresh

# After the warm-up the process forks, as Celery's prefork pool does; the child
# counts a chunk's tokens and reports whether that had to load an encoding.
_FORKED_CHILD = """
import gc, json, os
from ragsage.adapters.parsing.tokens import load_encoding, make_token_counter
from ragsage.core.cores import cores_per_process, usable_cores
from worker.process import warm_before_fork

warm_before_fork(2)
read, write = os.pipe()
if os.fork() == 0:
    before = load_encoding.cache_info().misses
    tokens = make_token_counter()("Chunks are counted in tokens of cl100k_base.")
    report = {"tokens": tokens, "loads": load_encoding.cache_info().misses - before,
              "frozen": gc.get_freeze_count(), "threads": cores_per_process(),
              "cores": usable_cores()}
    os.write(write, json.dumps(report).encode())
    os._exit(0)
os.close(write)
os.wait()
print(os.read(read, 4096).decode())
"""


def test_a_pool_child_counts_tokens_without_loading_the_encoding_again() -> None:
    report = json.loads(run_fresh(_FORKED_CHILD).stdout)
    assert report["tokens"] > 5
    assert report["loads"] == 0
    # The objects made while starting up sit outside the collector's rounds.
    assert report["frozen"] > 10_000
    # Two pool children split the cores: each sizes its thread pools to half.
    assert report["threads"] == max(1, report["cores"] // 2)


def test_without_the_warm_up_the_first_count_loads_the_encoding() -> None:
    # The control: the check above can tell a warmed child from a cold one.
    cold = _FORKED_CHILD.replace("warm_before_fork(2)\n", "", 1)
    report = json.loads(run_fresh(cold).stdout)
    assert report["loads"] == 1
    assert report["threads"] == report["cores"]
