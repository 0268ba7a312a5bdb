"""Access lists inside a namespace, probed over every endpoint a key (or the web page) calls.

Five documents of one namespace carry different lists; keys bound to six
principal sets ask every read endpoint about every document, including
keyword-only searches (the privileged keyword function) and questions whose
best matches they may not read.  Nothing of a document a key may not read may
reach it: no passage, citation, count, id or word.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ragsage.adapters.postgres.keys import create_key
from ragsage.adapters.sealing import Sealer
from ragsage.core.keys import NewKey, Role
from ragsage.core.scopes import Scope
from ragsage.management.restricted_keys import grant_of, mint

from .api_harness import ApiServer, with_database
from .worker_harness import POLL, Deployment

NAMESPACE = "acme"
# Each document holds one word no other holds, and all share "quarterly".
DOCUMENTS: dict[str, tuple[list[str] | None, str]] = {
    "hr.md": (["group:hr"], "severance zircon"),
    "sales.md": (["group:sales"], "pipeline quokka"),
    "legal.md": (["group:legal", "group:hr"], "litigation basilisk"),
    "ceo.md": (["user:ceo@example.com"], "acquisition pangolin"),
    "open.md": (None, "cafeteria narwhal"),
}
PRINCIPAL_SETS = [
    {"group:hr"},
    {"group:sales"},
    {"group:legal"},
    {"user:ceo@example.com"},
    {"group:sales", "group:legal"},
    {"group:nobody"},
]


def _text(name: str, words: str) -> bytes:
    first, second = words.split()
    return (
        f"# {name}\n\nThe quarterly review covers {first} in depth. Every {second} entry "
        f"records the {first} figures of the quarter, and the {second} ledger lists them.\n\n"
        f"## Details\n\nOur quarterly {second} notes keep the {first} plan for the board.\n"
    ).encode()


def _key(deployment: Deployment, role: Role, principals: set[str] | None = None) -> str:
    async def create(database: Any) -> str:
        scope = Scope(NAMESPACE)
        async with database.session(scope) as session:
            sealer = Sealer(deployment.settings.sealing_keys)
            made = await create_key(session, scope, role, "probe", sorted(principals or ()), sealer)
            return made.key

    return with_database(deployment.settings, create)


def _upload(client: httpx.Client, name: str, access: list[str] | None, **extra: Any) -> Any:
    form: dict[str, str] = {"external_id": extra.pop("external_id", name)}
    if access is not None:
        form["access"] = json.dumps(access)
    return client.post(
        "/v1/documents", files={"file": (name, _text(name, extra.pop("words", "x y")))}, data=form
    )


@pytest.fixture
def corpus(deployment: Deployment, api: ApiServer) -> Iterator[dict[str, Any]]:
    """Every document ingested by an unbound writer; returns names → ids, chunk ids, job ids."""
    deployment.worker().start(pool="solo")
    writer = api.client(_key(deployment, Role.WRITE))
    documents: dict[str, str] = {}
    jobs: dict[str, str] = {}
    for name, (access, words) in DOCUMENTS.items():
        form = {} if access is None else {"access": json.dumps(access)}
        reply = writer.post(
            "/v1/documents", files={"file": (name, _text(name, words), "text/markdown")}, data=form
        )
        assert reply.status_code == 202, reply.text
        jobs[name] = reply.json()["job_id"]
        documents[name] = reply.json()["document_id"]
    for job_id in jobs.values():
        _wait(writer, job_id)
    chunks: dict[str, list[str]] = {}
    for name, (_, words) in DOCUMENTS.items():
        found = writer.post("/v1/search", json={"query": words, "top_k": 20}).json()["results"]
        chunks[name] = sorted(
            {r["chunk"]["id"] for r in found if r["chunk"]["document_id"] == documents[name]}
        )
        assert chunks[name], f"the unbound writer finds {name}"
    yield {"writer": writer, "documents": documents, "chunks": chunks, "jobs": jobs}


def _wait(client: httpx.Client, job_id: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = client.get(f"/v1/jobs/{job_id}").json()["state"]
        if state == "succeeded":
            return
        assert state in ("queued", "running")
        time.sleep(POLL)
    raise AssertionError(f"job {job_id} did not finish")


def _readable(principals: set[str] | None) -> set[str]:
    return {
        name
        for name, (access, _) in DOCUMENTS.items()
        if principals is None or access is None or principals & set(access)
    }


def _words_of(names: set[str]) -> set[str]:
    return {word for name in names for word in DOCUMENTS[name][1].split()}


def _stream(client: httpx.Client, question: str) -> tuple[str, list[dict[str, Any]]]:
    """The streamed answer's text and every event's data."""
    reply = client.post("/v1/query", json={"question": question, "stream": True})
    assert reply.status_code == 200, reply.text
    events = [
        json.loads(line[len("data: ") :])
        for line in reply.text.splitlines()
        if line.startswith("data: ")
    ]
    return "".join(e.get("text", "") for e in events if isinstance(e, dict)), events


def _without_query(event: Any) -> Any:
    return {k: v for k, v in event.items() if k != "query"} if isinstance(event, dict) else event


class _Probe:
    """One key's view, checked against what it may read."""

    def __init__(self, client: httpx.Client, corpus: dict[str, Any], readable: set[str]) -> None:
        self.client, self.corpus, self.readable = client, corpus, readable
        self.ids: dict[str, str] = corpus["documents"]
        self.allowed = {self.ids[name] for name in readable}
        self.hidden = set(self.ids) - readable

    def clean(self, payload: Any) -> None:
        """Nothing of a hidden document in ``payload``: no id, no name, no word."""
        body = json.dumps(payload)
        for name in self.hidden:
            assert self.ids[name] not in body, f"{name}'s id reached the key"
            assert name not in body, f"{name}'s name reached the key"
        for word in _words_of(self.hidden):
            assert word not in body, f"{word!r} reached the key"

    def listings(self) -> None:
        client = self.client
        listed = client.get("/v1/documents").json()
        assert {d["id"] for d in listed["documents"]} == self.allowed
        self.clean(listed)
        for name, document_id in self.ids.items():
            one = client.get(f"/v1/documents/{document_id}")
            assert one.status_code == (200 if name in self.readable else 404), name
        jobs = client.get("/v1/jobs").json()
        assert {j["document_id"] for j in jobs["jobs"]} == self.allowed
        self.clean(jobs)
        for name, job_id in self.corpus["jobs"].items():
            expected = 200 if name in self.readable else 404
            assert client.get(f"/v1/jobs/{job_id}").status_code == expected
        assert set(client.get("/v1/sources").json()["sources"]) == self.readable
        for name, chunk_ids in self.corpus["chunks"].items():
            for chunk_id in chunk_ids:
                fetched = client.get(f"/v1/chunks/{chunk_id}", params={"above": 3, "below": 3})
                assert fetched.status_code == (200 if name in self.readable else 404), chunk_id
                if fetched.status_code == 200:
                    self.clean(fetched.json())

    def searches(self) -> None:
        readable_chunks = sum(len(self.corpus["chunks"][n]) for n in self.readable)
        for name, (_, words) in DOCUMENTS.items():
            for alpha in (0.3, 0.0, 1.0):  # hybrid, keyword only (the definer function), dense
                body = {"query": words, "top_k": 10, "hybrid_alpha": alpha, "chunks_above": 2}
                found = self.client.post("/v1/search", json=body).json()
                documents = {r["chunk"]["document_id"] for r in found["results"]}
                assert documents <= self.allowed
                assert found["total_found"] <= readable_chunks
                if name in self.readable and alpha == 0.0:
                    assert self.ids[name] in documents
                self.clean(found["results"])

    def answers(self) -> None:
        for _, words in DOCUMENTS.values():
            answer = self.client.post("/v1/query", json={"question": f"What about {words}?"})
            assert {c["document_id"] for c in answer.json()["citations"]} <= self.allowed
            self.clean({"answer": answer.json()["answer"], "citations": answer.json()["citations"]})
            text, events = _stream(self.client, f"What do we know of {words}?")
            self.clean(text)
            # The question itself is echoed back; nothing else may hold its words.
            self.clean([_without_query(event) for event in events])
        common = self.client.post("/v1/search", json={"query": "quarterly review", "top_k": 50})
        assert {r["chunk"]["document_id"] for r in common.json()["results"]} == self.allowed


def _probe(api: ApiServer, key: str, corpus: dict[str, Any], readable: set[str]) -> None:
    probe = _Probe(api.client(key), corpus, readable)
    probe.listings()
    probe.searches()
    probe.answers()


def test_bound_keys_reach_nothing_of_documents_they_may_not_read_and_unbound_keys_all(
    deployment: Deployment, api: ApiServer, corpus: dict[str, Any]
) -> None:
    for principals in PRINCIPAL_SETS:
        key = _key(deployment, Role.READ, principals)
        _probe(api, key, corpus, _readable(principals))
    _probe(api, _key(deployment, Role.READ), corpus, set(DOCUMENTS))


def test_restricted_keys_reach_exactly_what_their_principals_allow(
    deployment: Deployment, api: ApiServer, corpus: dict[str, Any]
) -> None:
    async def create(database: Any) -> NewKey:
        scope = Scope(NAMESPACE)
        async with database.session(scope) as session:
            return await create_key(
                session,
                scope,
                Role.DELEGATE,
                "product",
                ["group:legal"],
                Sealer(deployment.settings.sealing_keys),
            )

    issuer = api.client(_key(deployment, Role.DELEGATE))
    for principals in PRINCIPAL_SETS:
        body = {"principals": sorted(principals), "expires_in": 600}
        issued = issuer.post("/v1/restricted-keys", json=body)
        assert issued.status_code == 201, issued.text
        _probe(api, issued.json()["key"], corpus, _readable(principals))
    # Minted offline under a delegate bound to one group: what that group reads.
    bound = with_database(deployment.settings, create)
    grant = grant_of(["group:legal"], 600)
    minted = mint(bound.id, NAMESPACE, bound.signing_secret, grant)
    _probe(api, minted, corpus, _readable({"group:legal"}))


def test_a_bound_key_writes_only_within_its_principals(
    deployment: Deployment, api: ApiServer, corpus: dict[str, Any]
) -> None:
    sales = api.client(_key(deployment, Role.WRITE, {"group:sales", "user:sam"}))
    ids, jobs = corpus["documents"], corpus["jobs"]
    for beyond in (["group:hr"], ["group:sales", "group:hr"], []):
        refused = _upload(sales, "memo.md", beyond)
        assert refused.status_code == 403, beyond
        assert refused.json()["error"]["code"] == "forbidden"
    mine = _upload(sales, "memo.md", None, words="forecast wombat")
    assert mine.status_code == 202, mine.text
    _wait(sales, mine.json()["job_id"])
    own = sales.get(f"/v1/documents/{mine.json()['document_id']}").json()
    assert own["access"] == ["group:sales", "user:sam"]  # its own principals by default
    narrowed = sales.patch(f"/v1/documents/{own['id']}", json={"access": ["user:sam"]})
    assert narrowed.status_code == 200 and narrowed.json()["access"] == ["user:sam"]
    assert (
        sales.patch(f"/v1/documents/{own['id']}", json={"access": ["group:hr"]}).status_code == 403
    )
    # A document it cannot read is absent to it, whatever it tries.
    hr = ids["hr.md"]
    absent = sales.get("/v1/documents/doc_absent").json()
    for reply in (
        sales.patch(f"/v1/documents/{hr}", json={"access": ["group:sales"]}),
        sales.delete(f"/v1/documents/{hr}"),
        sales.post(f"/v1/jobs/{jobs['hr.md']}/cancel"),
        sales.post(f"/v1/jobs/{jobs['hr.md']}/retry"),
    ):
        assert reply.status_code == 404 and reply.json()["error"]["code"] == "not_found"
    assert absent["error"]["code"] == "not_found"
    # Nor can it replace one by naming its external id.
    taken = _upload(sales, "hr.md", ["group:sales"], external_id="hr.md")
    assert taken.status_code == 409 and taken.json()["error"]["code"] == "conflict"
    writer = corpus["writer"]
    assert writer.get(f"/v1/documents/{hr}").json()["access"] == ["group:hr"]
    assert writer.get(f"/v1/documents/{hr}").json()["status"] == "ready"
    # What it may read, it may delete.
    assert sales.delete(f"/v1/documents/{ids['sales.md']}").status_code == 204
    assert writer.get(f"/v1/documents/{ids['sales.md']}").status_code == 404


def test_a_changed_list_holds_for_the_next_request_on_every_chunk(
    deployment: Deployment, api: ApiServer, corpus: dict[str, Any]
) -> None:
    sales = api.client(_key(deployment, Role.READ, {"group:sales"}))
    writer, hr = corpus["writer"], corpus["documents"]["hr.md"]

    def found() -> set[str]:
        reply = sales.post("/v1/search", json={"query": "severance zircon", "top_k": 20})
        return {
            r["chunk"]["id"] for r in reply.json()["results"] if r["chunk"]["document_id"] == hr
        }

    assert found() == set()
    assert writer.patch(f"/v1/documents/{hr}", json={"access": ["group:sales"]}).status_code == 200
    assert found() == set(corpus["chunks"]["hr.md"])
    assert sales.get(f"/v1/jobs/{corpus['jobs']['hr.md']}").status_code == 200
    assert writer.patch(f"/v1/documents/{hr}", json={"access": ["group:hr"]}).status_code == 200
    assert found() == set()
    assert sales.get(f"/v1/jobs/{corpus['jobs']['hr.md']}").status_code == 404


def test_a_bound_key_changes_what_it_reads_even_when_others_read_it_too(
    deployment: Deployment, api: ApiServer, corpus: dict[str, Any]
) -> None:
    legal = api.client(_key(deployment, Role.WRITE, {"group:legal"}))
    writer, both = corpus["writer"], corpus["documents"]["legal.md"]  # legal and hr read it
    # A new version without a list keeps [group:hr, group:legal], beyond this key's own.
    again = _upload(legal, "legal.md", None, words="litigation gryphon", external_id="legal.md")
    assert again.status_code == 202, again.text
    _wait(legal, again.json()["job_id"])
    assert writer.get(f"/v1/documents/{both}").json()["access"] == ["group:hr", "group:legal"]
    retried = legal.post(f"/v1/jobs/{corpus['jobs']['legal.md']}/retry")
    assert retried.status_code == 409  # a succeeded job: refused as for any key, not a 500


def test_an_upload_naming_a_list_never_changes_another_documents_list(
    deployment: Deployment, api: ApiServer, corpus: dict[str, Any]
) -> None:
    sales = api.client(_key(deployment, Role.WRITE, {"group:sales"}))
    words = DOCUMENTS["open.md"][1]
    # The open document's very bytes, uploaded under another name with a list.
    copy = sales.post(
        "/v1/documents",
        files={"file": ("copy.md", _text("open.md", words), "text/markdown")},
        data={"access": json.dumps(["group:sales"])},
    )
    assert copy.status_code == 202, copy.text
    assert copy.json()["document_id"] != corpus["documents"]["open.md"]
    _wait(sales, copy.json()["job_id"])
    opened = corpus["writer"].get(f"/v1/documents/{corpus['documents']['open.md']}").json()
    assert opened["access"] == []  # still open to the whole namespace


def test_a_quota_refusal_tells_a_bound_key_no_count(
    deployment: Deployment, api: ApiServer, corpus: dict[str, Any]
) -> None:
    import asyncio

    from ragsage.adapters.postgres.namespaces import set_overrides
    from ragsage.runtime import build_runtime

    async def limit() -> None:
        runtime = build_runtime(deployment.settings)
        try:
            async with runtime.database.owner_connection() as owner:
                variable = runtime.database.config.isolation_variable
                await set_overrides(owner, variable, Scope(NAMESPACE), {"quota_documents": 5})
        finally:
            await runtime.aclose()

    asyncio.run(limit())
    sales = api.client(_key(deployment, Role.WRITE, {"group:sales"}))
    refused = _upload(sales, "more.md", None, words="extra yak")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "quota_exceeded"
    assert "it is full" in refused.json()["error"]["message"]
    assert "holds" not in refused.json()["error"]["message"]
    unbound = _upload(corpus["writer"], "more.md", None, words="extra yak")
    assert "it holds 5" in unbound.json()["error"]["message"]
