"""What one namespace may hold: each quota refuses with its message and stores nothing."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from sqlalchemy import text

from ragsage.adapters.postgres.namespaces import set_overrides
from ragsage.core.errors import QuotaExceeded
from ragsage.core.jobs import JobState, Upload
from ragsage.core.scopes import Scope
from ragsage.jobs.enqueue import Enqueuer
from ragsage.runtime import build_runtime

from .api_harness import ApiServer, make_key
from .worker_harness import Deployment

ACME, GLOBEX = Scope("acme"), Scope("globex")


def _memo(number: int, sections: int = 1) -> bytes:
    parts = [f"# Memo {number}\n"]
    for section in range(sections):
        parts.append(
            f"\n## Item {section}\n\nMemo {number} asks team {section} to file the quarterly "
            f"report {section} by Friday and to archive the drafts of item {section}.\n"
        )
    return "".join(parts).encode()


def _override(deployment: Deployment, scope: Scope, **values: int | None) -> None:
    async def apply() -> None:
        runtime = build_runtime(deployment.settings)
        try:
            async with runtime.database.owner_connection() as owner:
                variable = runtime.database.config.isolation_variable
                await set_overrides(owner, variable, scope, values)
        finally:
            await runtime.aclose()

    asyncio.run(apply())


def _held(deployment: Deployment, scope: Scope) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        runtime = build_runtime(deployment.settings)
        try:
            async with runtime.database.session(scope) as session:
                row = (
                    await session.execute(
                        text(
                            "SELECT (SELECT count(*) FROM ragsage_documents), "
                            "(SELECT count(*) FROM ragsage_jobs), "
                            "(SELECT count(*) FROM ragsage_blobs), "
                            "(SELECT coalesce(sum(size_bytes), 0) FROM ragsage_blobs)"
                        )
                    )
                ).one()
        finally:
            await runtime.aclose()
        return dict(zip(("documents", "jobs", "blobs", "bytes"), row, strict=True))

    return asyncio.run(read())


def _refused(enqueuer: Enqueuer, scope: Scope, name: str, data: bytes) -> QuotaExceeded:
    try:
        enqueuer.enqueue_document(scope.namespace, name, data=data)
    except QuotaExceeded as refusal:
        return refusal
    raise AssertionError(f"{name} was accepted")


def test_each_upload_quota_refuses_before_anything_is_stored(deployment: Deployment) -> None:
    enqueuer = deployment.enqueuer  # no worker: uploads stay queued
    _override(deployment, ACME, quota_queued_jobs=2)
    for number in (1, 2):
        enqueuer.enqueue_document(ACME.namespace, f"memo-{number}.md", data=_memo(number))
    before = _held(deployment, ACME)
    refusal = _refused(enqueuer, ACME, "memo-3.md", _memo(3))
    assert str(refusal) == "the namespace's queued jobs quota is 2 jobs and it holds 2; " + (
        "upload again once some have run"
    )
    assert _held(deployment, ACME) == before

    # The deployment's default applies where the namespace has no override.
    capped = Enqueuer(replace(deployment.settings, quota_documents=1, quota_bytes=400))
    try:
        capped.enqueue_document(GLOBEX.namespace, "first.md", data=_memo(1))
        first = _held(deployment, GLOBEX)
        refusal = _refused(capped, GLOBEX, "second.md", _memo(2))
        assert "documents quota is 1 documents and it holds 1" in str(refusal)
        # A new version of a document it holds is no new document: only bytes count.
        big = _refused(capped, GLOBEX, "first.md", _memo(1, sections=4))
        assert str(big).startswith("the namespace's stored bytes quota is 400 bytes and it holds")
        assert f"this file would add {len(_memo(1, sections=4)):,}" in str(big)
        assert _held(deployment, GLOBEX) == first
        # The bulk form answers a refused file in its place and stores the rest.
        _override(deployment, GLOBEX, quota_documents=0, quota_bytes=0)
        answers = capped.enqueue_documents(
            GLOBEX.namespace, [Upload("third.md", _memo(3)), Upload("fourth.md", _memo(4))]
        )
        assert [type(a).__name__ for a in answers] == ["UploadOutcome", "UploadOutcome"]
    finally:
        capped.close()


def test_an_api_upload_over_a_quota_is_a_403_naming_it(
    deployment: Deployment, api: ApiServer
) -> None:
    _override(deployment, ACME, quota_documents=1)
    client = api.client(make_key(deployment.settings, ACME.namespace))
    assert client.post("/v1/documents", files={"file": ("a.md", _memo(1))}).status_code == 202
    refused = client.post("/v1/documents", files={"file": ("b.md", _memo(2))})

    assert refused.status_code == 403
    assert refused.json()["error"] == {
        "code": "quota_exceeded",
        "message": "the namespace's documents quota is 1 documents and it holds 1",
    }
    assert [d["filename"] for d in client.get("/v1/documents").json()["documents"]] == ["a.md"]


def test_a_version_over_the_chunk_quota_fails_and_the_previous_one_stays(
    deployment: Deployment,
) -> None:
    deployment.worker().start()
    enqueuer = deployment.enqueuer
    first = enqueuer.enqueue_document(ACME.namespace, "memo.md", data=_memo(1, sections=2))
    job = deployment.wait(ACME.namespace, [str(first.job_id)])[str(first.job_id)]
    assert job.state is JobState.SUCCEEDED
    held = deployment.chunk_count(ACME.namespace)
    _override(deployment, ACME, quota_chunks=held + 2)

    longer = _memo(2, sections=120)  # many more chunks than two
    second = enqueuer.enqueue_document(ACME.namespace, "memo.md", data=longer)
    failed = deployment.wait(ACME.namespace, [str(second.job_id)])[str(second.job_id)]

    assert failed.state is JobState.FAILED
    assert failed.error is not None
    assert failed.error.startswith(
        f"memo.md: the namespace's chunks quota is {held + 2} chunks and it holds 0; memo.md "
        "would add "
    )
    assert failed.error.endswith("the document keeps its previous version")
    assert deployment.chunk_count(ACME.namespace) == held
    assert deployment.chunk_count(ACME.namespace, first.document_id) == held
