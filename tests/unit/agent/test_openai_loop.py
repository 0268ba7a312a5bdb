"""The chat loop from docs/agents.md, run with the OpenAI SDK against a scripted model."""

from __future__ import annotations

import json
from typing import Any

import httpx2
from openai import OpenAI

from ragsage.agent.tools import build_tools, prompt_section

from .corpus import sample


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


class ScriptedModel:
    """Asks for one search, then answers citing the first hit; records each request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        if len(self.requests) == 1:
            call = {
                "id": "call_1",
                "type": "function",
                "function": {"name": "rag_search", "arguments": '{"query": "paid holiday"}'},
            }
            return httpx2.Response(
                200, json=completion({"role": "assistant", "content": None, "tool_calls": [call]})
            )
        found = json.loads(body["messages"][-1]["content"])
        first = found["results"][0]
        text = f"{first['text']} [{first['citation']}]"
        return httpx2.Response(200, json=completion({"role": "assistant", "content": text}))


def test_the_documented_loop_answers_with_a_citation() -> None:
    tools = {tool.name: tool for tool in build_tools(sample())}
    model = ScriptedModel()
    with httpx2.Client(transport=httpx2.MockTransport(model)) as http:
        client = OpenAI(api_key="sk-test", base_url="http://model.test/v1", http_client=http)
        messages: list[Any] = [
            {"role": "system", "content": "Answer from the handbook.\n\n" + prompt_section()},
            {"role": "user", "content": "How many holiday days do I get?"},
        ]
        answer = None
        for _ in range(8):
            reply = client.chat.completions.create(
                model="scripted",
                messages=messages,
                tools=[tool.openai_schema() for tool in tools.values()],  # type: ignore[misc]
            )
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                answer = message.content
                break
            for call in message.tool_calls:
                assert call.type == "function"
                tool = tools[call.function.name]
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "content": tool(call.function.arguments),
                    }
                )

    assert answer == "Employees get 25 days of paid holiday each year. [1]"
    sent = model.requests[0]["tools"]
    assert [entry["function"]["name"] for entry in sent] == list(tools)
    assert sent[0]["function"]["parameters"]["required"] == ["query"]
    assert model.requests[1]["messages"][-1]["tool_call_id"] == "call_1"
