"""Retrieval tools for LLM agents, over the engine in-process or a running ragsage API.

``ragsage.agent.tools`` (standard library only) defines the tools; the HTTP backend and
the MCP server are imported explicitly, since they need httpx and the ``mcp`` SDK.
"""

from ragsage.agent.tools import Tool, ToolBackend, build_tools, prompt_section

__all__ = ["Tool", "ToolBackend", "build_tools", "prompt_section"]
