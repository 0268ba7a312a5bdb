"""Code over HTTP: results name their file lines, and a budget of words is filled.

A real Go file with one long function and a few short ones goes through the
queue; searches and answers come back from a served API over real Postgres.
"""

from __future__ import annotations

from collections import Counter

from tests.unit.parsing.fenced import code_lines

from .api_harness import ApiServer, make_key
from .test_api import wait_job
from .worker_harness import Deployment

STEP = """\tresp{n}, err := client.Do(req)
\tif err == nil && resp{n}.StatusCode == {status} {{
\t\twait{n} := resp{n}.Header.Get("Retry-After")
\t\tlog.Printf("attempt {n}: status {status}, backing off %s", wait{n})
\t\ttime.Sleep(backoff({n}))
\t}}"""
SOURCE = (
    'package fetch\n\nimport (\n\t"log"\n\t"net/http"\n\t"time"\n)\n\n'
    "// Get asks the server until it answers, backing off after each refusal.\n"
    "func Get(client *http.Client, req *http.Request) error {\n"
    + "\n".join(STEP.format(n=n, status=500 + n) for n in range(40))
    + "\n\treturn nil\n}\n\n"
    "// backoff is how long attempt n waits.\nfunc backoff(n int) time.Duration {\n"
    "\treturn time.Duration(n*n) * 100 * time.Millisecond\n}\n"
)
FILE_LINES = SOURCE.split("\n")


def _words(result: dict[str, object]) -> int:
    chunk = result["chunk"]
    assert isinstance(chunk, dict)
    return len(str(chunk["text"]).split()) + sum(
        len(part.split()) for part in chunk["heading_path"]
    )


def test_code_results_name_their_lines_and_fill_a_budget(
    running: Deployment, api: ApiServer
) -> None:
    client = api.client(make_key(running.settings, "acme"))
    accepted = client.post(
        "/v1/documents", files={"file": ("fetch/get.go", SOURCE.encode(), "text/x-go")}
    )
    assert wait_job(client, accepted.json()["job_id"])["state"] == "succeeded"

    plain = client.post("/v1/search", json={"query": "status 517 Retry-After", "top_k": 10})
    assert plain.status_code == 200, plain.text
    results = plain.json()["results"]
    assert results
    for result in results:
        first, last = result["chunk"]["metadata"]["lines"]
        assert code_lines(result["chunk"]["text"]) == FILE_LINES[first - 1 : last]

    for budget in (40, 120, 400):
        found = client.post(
            "/v1/search", json={"query": "status 517 Retry-After", "budget_tokens": budget}
        )
        assert found.status_code == 200, found.text
        chosen = found.json()["results"]
        assert chosen and sum(_words(r) for r in chosen) <= budget
        handed = Counter(
            n
            for r in chosen
            for n in range(
                r["chunk"]["metadata"]["lines"][0], r["chunk"]["metadata"]["lines"][1] + 1
            )
        )
        assert set(handed.values()) == {1}, "no line is handed over twice"
    tight = client.post(
        "/v1/search", json={"query": "status 517 Retry-After", "budget_tokens": 60}
    ).json()["results"]
    assert "resp17.StatusCode == 517" in tight[0]["chunk"]["text"]
    capped = client.post(
        "/v1/search", json={"query": "status Retry-After", "budget_tokens": 5000, "top_k": 1}
    ).json()["results"]
    assert len(capped) == 1

    refused = client.post("/v1/search", json={"query": "status", "budget_tokens": 0})
    assert refused.status_code == 422 and "budget_tokens" in refused.text

    answer = client.post("/v1/query", json={"question": "What does attempt 17 do on status 517?"})
    assert answer.status_code == 200, answer.text
    citations = answer.json()["citations"]
    assert citations and all(c["lines"] is not None for c in citations)
    for citation in citations:
        first, last = citation["lines"]
        assert 1 <= first <= last <= len(FILE_LINES)
        if citation["located"] == "sentence":
            assert citation["quote"].split("\n")[0].strip() in FILE_LINES[first - 1]
