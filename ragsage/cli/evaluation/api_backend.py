"""Indexing and searching through a running ragsage API.

Documents go up as multipart uploads to ``/v1/documents``; the API deduplicates
by content, so a dataset uploaded before is answered at once with the existing
document's id and nothing is processed twice.  Every job started is awaited
before the first question, and questions go to ``/v1/search``.  The namespace is
the API key's: other documents in it are real distractors, so evaluate in a
namespace of its own when the figures must match an in-process run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

from ragsage.cli.evaluation.backends import IndexedCorpus, source_of
from ragsage.core.chunks import Chunk, ChunkSection
from ragsage.core.urls import without_credentials
from ragsage.evaluation.datasets import Dataset
from ragsage.evaluation.errors import EvalBackendError
from ragsage.query import RetrievalOptions, RetrievalResult, SearchHit

_FINISHED = ("succeeded", "failed", "cancelled", "superseded")


@asynccontextmanager
async def through_api(
    dataset: Dataset,
    url: str,
    key: str,
    *,
    timeout: float = 900.0,
    poll_seconds: float = 0.25,
) -> AsyncIterator[IndexedCorpus]:
    """Upload ``dataset`` to the API at ``url`` (if not there already) and search it."""
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60.0) as client:
        started = time.perf_counter()
        mapping: dict[str, tuple[str, ...]] = {}
        jobs: dict[str, str] = {}
        for document in dataset.documents:
            source = source_of(document)
            reply = await _call(
                client,
                "POST",
                "/v1/documents",
                files={"file": (source.filename, source.content, source.media_type or "")},
            )
            engine_id = str(reply["document_id"])
            mapping[engine_id] = (*mapping.get(engine_id, ()), document.id)
            if reply.get("job_id") and reply.get("state") not in _FINISHED:
                jobs[str(reply["job_id"])] = document.id
        failures = await _wait(client, jobs, timeout, poll_seconds)
        elapsed = time.perf_counter() - started

        async def search(query: str, options: RetrievalOptions) -> RetrievalResult:
            body = await _call(
                client,
                "POST",
                "/v1/search",
                json={
                    "query": query,
                    "top_k": options.top_k,
                    "hybrid_alpha": options.hybrid_alpha,
                    "rerank": options.rerank,
                },
            )
            return _result(body)

        yield IndexedCorpus(
            search=search,
            document_ids=mapping,
            index_seconds=elapsed,
            chunks=None,  # the API does not say; its jobs do, one by one
            failures=failures,
            where=f"api {url}",
            embedding_model="(the server's)",
        )


async def _wait(
    client: httpx.AsyncClient, jobs: Mapping[str, str], timeout: float, poll: float
) -> list[str]:
    """Wait for every job to finish; the documents whose jobs did not succeed.

    Workers take jobs about in the order they were queued, so the oldest
    unfinished job is the one polled: asking after all of them every round
    made the client, not the workers, the busiest process on a small machine.
    """
    deadline = time.monotonic() + timeout
    failures = []
    for done, (job_id, document) in enumerate(jobs.items()):
        while True:
            job = await _call(client, "GET", f"/v1/jobs/{job_id}")
            if job["state"] in _FINISHED:
                if job["state"] != "succeeded":
                    failures.append(f"{document}: job {job['state']}: {job.get('error') or ''}")
                break
            if time.monotonic() > deadline:
                raise EvalBackendError(
                    f"{len(jobs) - done} upload jobs still unfinished after {timeout:.0f} s "
                    "(are workers running?)"
                )
            await asyncio.sleep(poll)
    return failures


# Refusals over a rate limit waited out before a call gives up: an evaluation is
# one client sending as fast as the server answers, which is what limits stop.
_RATE_LIMITED_TRIES = 30


async def _call(client: httpx.AsyncClient, method: str, path: str, **kwargs: Any) -> Any:
    for _ in range(_RATE_LIMITED_TRIES):
        try:
            response = await client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            shown = without_credentials(str(client.base_url))
            raise EvalBackendError(f"{method} {shown}{path} failed: {exc}") from exc
        if response.status_code != 429:
            break
        await asyncio.sleep(_retry_after(response))
    if response.status_code >= 400:
        try:
            message = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = response.text[:200]
        raise EvalBackendError(f"{method} {path}: HTTP {response.status_code}: {message}")
    return response.json()


def _retry_after(response: httpx.Response) -> float:
    try:
        return min(max(float(response.headers.get("Retry-After", "1")), 0.1), 30.0)
    except ValueError:
        return 1.0


def _result(body: Mapping[str, Any]) -> RetrievalResult:
    hits = []
    for item in body["results"]:
        raw = item["chunk"]
        chunk = Chunk(
            id=raw["id"],
            document_id=raw["document_id"],
            ordinal=int(raw["ordinal"]),
            text=raw["text"],
            embed_text=raw["text"],
            heading_path=tuple(raw.get("heading_path") or ()),
            source=raw.get("source") or "",
            metadata=raw.get("metadata") or {},
            sections=tuple(
                ChunkSection(tuple(part["heading_path"]), part["start"], part["end"])
                for part in raw.get("sections") or ()
            ),
        )
        hits.append(
            SearchHit(
                chunk=chunk,
                score=float(item["score"]),
                vector_score=item.get("vector_score"),
                keyword_score=item.get("keyword_score"),
                rerank_score=item.get("rerank_score"),
            )
        )
    return RetrievalResult(
        query=str(body.get("query", "")),
        hits=tuple(hits),
        total_found=int(body.get("total_found", len(hits))),
        timing_ms={str(k): float(v) for k, v in (body.get("timing_ms") or {}).items()},
    )
