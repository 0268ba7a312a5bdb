"""``ragsage eval --backend api`` against the real API, with a real worker processing uploads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsage.cli import main

from .api_harness import ApiServer, make_key
from .worker_harness import Deployment

FIXTURES = Path(__file__).parents[1] / "fixtures" / "eval"


def test_eval_through_the_api_uploads_once_and_searches(
    running: Deployment,
    api: ApiServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    key = make_key(running.settings, "eval-api")
    monkeypatch.setenv("RAGSAGE_API_KEY", key)
    argv = ["eval", str(FIXTURES / "qa-tiny"), "--backend", "api", "--api-url", api.url]
    first, second = tmp_path / "first.json", tmp_path / "second.json"

    assert main([*argv, "--retrieval", "lexical", "--save", str(first)]) == 0, (
        capsys.readouterr().err
    )
    report = json.loads(first.read_text())
    by_id = {q["id"]: q for q in report["questions"]}
    assert by_id["q06"]["metrics"]["mrr"] == 1.0
    assert by_id["q06"]["documents"][0] == "engineering/deploy.md"
    assert report["metrics"]["pass@10"] >= 0.8
    assert report["config"]["backend"] == "api"

    # A second run finds every document already there: same figures, no new documents.
    assert main([*argv, "--retrieval", "lexical", "--save", str(second)]) == 0
    again = json.loads(second.read_text())
    assert again["metrics"] == report["metrics"]
    listed = api.client(key).get("/v1/documents", params={"limit": 50}).json()["documents"]
    assert len(listed) == 6 and all(d["status"] == "ready" for d in listed)
    assert "nDCG" in capsys.readouterr().out


def test_a_refused_key_is_a_readable_error(
    api: ApiServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAGSAGE_API_KEY", "rsk_not_a_real_key")
    code = main(["eval", str(FIXTURES / "beir-tiny"), "--backend", "api", "--api-url", api.url])
    assert code == 2
    assert "POST /v1/documents: HTTP 401" in capsys.readouterr().err


def test_an_evaluation_waits_out_the_rate_limits_of_its_key(
    running: Deployment,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from .api_harness import serve

    # Uploads and job polls are "other" requests: at two a second, an upload
    # of six documents is refused part of the way, and has to wait its turn.
    limited = replace(running, settings=running.settings.replace(rate_limit_other_key="2/second"))
    served = serve(limited)
    api = next(served)
    try:
        monkeypatch.setenv("RAGSAGE_API_KEY", make_key(limited.settings, "eval-limited"))
        saved = tmp_path / "run.json"
        argv = ["eval", str(FIXTURES / "qa-tiny"), "--backend", "api", "--api-url", api.url]
        assert main([*argv, "--retrieval", "lexical", "--save", str(saved)]) == 0, (
            capsys.readouterr().err
        )
        report = json.loads(saved.read_text())
        assert report["metrics"]["pass@10"] >= 0.8 and report["timing"]["questions"] == 10.0
    finally:
        served.close()
