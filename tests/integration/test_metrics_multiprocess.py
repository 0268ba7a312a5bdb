"""One scrape reports a whole unit: every gunicorn worker, every Celery pool child.

prometheus_client's multiprocess mode, set up by ``ragsage api`` and
``ragsage worker``: the processes of a unit share a directory of counts, and
whichever process answers the scrape sums them all.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil
from prometheus_client.parser import text_string_to_metric_families

from ragsage.core.keys import Role

from .api_harness import make_key
from .gunicorn_harness import free_port, start_gunicorn
from .worker_harness import POLL, Deployment

NAMESPACE = "metered"


def _samples(text: str, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and labels.items() <= sample.labels.items():
                total += sample.value
    return total


def _pids_with_counts(directory: Path) -> set[str]:
    return {path.stem.rpartition("_")[2] for path in directory.glob("counter_*.db")}


def test_with_two_gunicorn_workers_the_counter_equals_the_requests_sent(
    deployment: Deployment, tmp_path: Path
) -> None:
    shared = tmp_path / "api-metrics"
    env = {**deployment.env, "RAGSAGE_METRICS_DIR": str(shared)}
    server = start_gunicorn(env, tmp_path / "gunicorn.log", workers=2, threads=4)
    try:
        key = make_key(deployment.settings, NAMESPACE, Role.READ)
        headers = {"Authorization": f"Bearer {key}", "Connection": "close"}

        def one(_: int) -> int:
            # A new connection each time, so the kernel hands them to both workers.
            return httpx.get(f"{server.url}/v1/sources", headers=headers, timeout=30).status_code

        sent = 60
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(one, range(sent)))
        assert statuses == [200] * sent

        for _ in range(4):
            text = httpx.get(f"{server.url}/metrics", headers={"Connection": "close"}).text
            counted = _samples(text, "ragsage_http_requests_total", endpoint="/v1/sources")
            assert counted == sent, text
        assert "ragsage_queue_depth" in text and "ragsage_jobs" in text
        # And the requests really were split between the two workers.
        assert len(_pids_with_counts(shared)) == 2
    finally:
        server.stop()


def test_a_worker_serves_one_endpoint_counting_every_pool_child(
    deployment: Deployment, tmp_path: Path
) -> None:
    shared = tmp_path / "worker-metrics"
    port = free_port()
    worker = deployment.worker(
        RAGSAGE_METRICS_DIR=str(shared), RAGSAGE_WORKER_METRICS_PORT=str(port)
    )
    ragsage = str(Path(sys.executable).with_name("ragsage"))
    worker.start(command=[ragsage, "worker", "--concurrency", "2"])
    documents = 8
    outcomes = [
        deployment.enqueuer.enqueue_document(
            NAMESPACE, f"note-{n}.md", data=f"# Note {n}\n\n{'word ' * 400}{n}\n".encode()
        )
        for n in range(documents)
    ]
    jobs = deployment.wait(NAMESPACE, [str(o.job_id) for o in outcomes])
    assert {job.state.value for job in jobs.values()} == {"succeeded"}

    # The children count a job just after its row says succeeded; give them a moment.
    deadline = time.monotonic() + 10
    while True:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        done = _samples(text, "ragsage_worker_jobs_total", kind="ingest", outcome="succeeded")
        if done >= documents or time.monotonic() > deadline:
            break
        time.sleep(POLL)
    assert done == documents, text
    assert _samples(text, "ragsage_worker_stage_seconds_count", kind="ingest", stage="parse") == (
        documents
    )
    # Two children ran jobs, and this one port summed both.
    assert len(_pids_with_counts(shared)) == 2
    # The old scheme's per-child ports are gone: the worker's whole process tree listens
    # on this one port (asked of the tree itself: other tests' servers come and go nearby).
    assert worker.process is not None
    tree = psutil.Process(worker.process.pid)
    listening = {
        connection.laddr.port
        for process in (tree, *tree.children(recursive=True))
        for connection in process.net_connections(kind="tcp")
        if connection.status == psutil.CONN_LISTEN
    }
    assert listening == {port}
