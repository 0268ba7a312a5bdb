"""One tenant learns nothing about another's files: not from the cache, not from an id."""

from __future__ import annotations

from ragsage.core.keys import Role

from .api_harness import ApiServer, make_key
from .api_harness import ingested as _ingested
from .worker_harness import Deployment

SECRET = b"# Merger plan\n\nAcme acquires Initech in the third quarter.\n"
FRESH = b"# Picnic\n\nThe team picnic is on Friday by the lake.\n"


def test_uploading_another_tenants_exact_bytes_looks_like_a_fresh_file(
    deployment: Deployment, api: ApiServer
) -> None:
    deployment.worker().start(pool="solo")
    owner = api.client(make_key(deployment.settings, "globex", Role.WRITE))
    prober = api.client(make_key(deployment.settings, "acme", Role.WRITE))
    theirs = _ingested(owner, "plan.md", SECRET)

    probe = _ingested(prober, "plan.md", SECRET)
    fresh = _ingested(prober, "picnic.md", FRESH)
    assert probe["result"]["parse_cache_hit"] is False
    assert set(probe["result"]) == set(fresh["result"])
    assert {k: v for k, v in probe["result"].items() if k != "chunks"} == {
        k: v for k, v in fresh["result"].items() if k != "chunks"
    }
    # Ids are per namespace: the same name does not name the same document.
    assert probe["document_id"] != theirs["document_id"]
    assert prober.get(f"/v1/documents/{theirs['document_id']}").status_code == 404
    # The owner's own re-upload after a delete is still served by the cache.
    assert owner.delete(f"/v1/documents/{theirs['document_id']}").status_code == 204
    assert _ingested(owner, "plan.md", SECRET)["result"]["parse_cache_hit"] is True
