"""The OpenAI-compatible chat endpoint, with the official ``openai`` package as the client.

A real API and a real worker; the bundled sample documents are uploaded
through the API first, as ``make run`` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest

from ragsage.core.keys import Role

from .api_harness import ApiServer, ingested, make_key
from .worker_harness import ROOT, Deployment

SAMPLES = ROOT / "examples" / "docs"


@pytest.fixture
def chat(running: Deployment, api: ApiServer) -> openai.OpenAI:
    key = make_key(running.settings, "acme", Role.READ)
    uploader = api.client(make_key(running.settings, "acme", Role.WRITE))
    for name in ("security-policy.md", "ragsage-overview.md", "operations-faq.txt"):
        path: Path = SAMPLES / name
        ingested(uploader, name, path.read_bytes(), media_type="text/plain")
    return openai.OpenAI(base_url=f"{api.url}/v1", api_key=key, max_retries=0, timeout=60)


def test_answers_whole_streamed_followed_up_and_not_found(chat: openai.OpenAI) -> None:
    question = "How long are database backups kept?"
    whole = chat.chat.completions.create(
        model="ragsage", messages=[{"role": "user", "content": question}]
    )
    text = whole.choices[0].message.content or ""
    assert "35 days" in text and "[1]" in text and "\n\nSources:\n[1] security-policy.md" in text
    assert whole.choices[0].finish_reason == "stop" and whole.model == "ragsage"
    citations: list[dict[str, Any]] = (whole.model_extra or {})["citations"]
    assert citations[0]["number"] == 1 and citations[0]["source"] == "security-policy.md"
    assert "35 days" in citations[0]["text"]
    # The citation names the section of the quoted sentence and where it is in the text.
    assert citations[0]["located"] == "sentence" and "35 days" in citations[0]["quote"]
    assert citations[0]["heading_path"][-1] == "Data retention"
    assert "Data retention" in text.split("Sources:")[1]
    assert whole.usage is not None and whole.usage.completion_tokens > 0
    assert whole.usage.total_tokens == whole.usage.prompt_tokens + whole.usage.completion_tokens

    pieces, last = [], None
    for chunk in chat.chat.completions.create(
        model="ragsage", messages=[{"role": "user", "content": question}], stream=True
    ):
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
        last = chunk
    assert last is not None and last.choices[0].finish_reason == "stop"
    assert "".join(pieces) == text
    assert [(c["source"], c["quote"]) for c in (last.model_extra or {})["citations"]] == [
        (c["source"], c["quote"]) for c in citations
    ]
    # Without the Sources list, the citations still come as data.
    bare = chat.chat.completions.create(
        model="ragsage",
        messages=[{"role": "user", "content": question}],
        extra_body={"sources": False},
    )
    assert "Sources:" not in (bare.choices[0].message.content or "")
    assert (bare.model_extra or {})["citations"]

    # A follow-up is answered from the conversation it continues.
    follow_up = chat.chat.completions.create(
        model="ragsage",
        messages=[
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "How long are database backups kept?"},
            {"role": "assistant", "content": "Backups are kept for 35 days [1]."},
            {"role": "user", "content": [{"type": "text", "text": "Are they encrypted?"}]},
        ],
    )
    text = follow_up.choices[0].message.content or ""
    assert "encrypted at rest" in text
    assert (follow_up.model_extra or {})["citations"][0]["source"] == "security-policy.md"

    # What the documents cannot answer is an ordinary answer that says so.
    reply = chat.chat.completions.create(
        model="ragsage",
        messages=[{"role": "user", "content": "What is the boiling point of tungsten carbide?"}],
    )
    assert (reply.model_extra or {})["not_found"] is True
    assert (reply.model_extra or {})["citations"] == []
    assert "Sources:" not in (reply.choices[0].message.content or "")


def test_the_client_raises_its_own_errors(deployment: Deployment, api: ApiServer) -> None:
    # No worker and no documents: every one of these is refused before anything is read.
    key = make_key(deployment.settings, "acme", Role.READ)
    chat = openai.OpenAI(base_url=f"{api.url}/v1", api_key=key, max_retries=0, timeout=60)
    assert [model.id for model in chat.models.list()] == ["ragsage"]
    stranger = openai.OpenAI(base_url=f"{api.url}/v1", api_key="rsk_wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        stranger.chat.completions.create(
            model="ragsage", messages=[{"role": "user", "content": "hello"}]
        )
    with pytest.raises(openai.NotFoundError) as unknown:
        chat.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert unknown.value.code == "model_not_found"
    for bad in (
        {"messages": []},
        {"messages": [{"role": "assistant", "content": "no question"}]},
        {"messages": [{"role": "user", "content": "hi"}], "n": 2},
        {"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]},
    ):
        with pytest.raises(openai.BadRequestError):
            chat.chat.completions.create(model="ragsage", **bad)  # type: ignore[call-overload]
