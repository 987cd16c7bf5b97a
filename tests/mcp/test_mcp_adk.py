"""A google-adk `LlmAgent` takes factledger's tools through `McpToolset` (stdio, `factledger mcp`
launched by ADK) and a scripted model, with no network, calls `recall`: the stored value reaches
the model as the tool's answer."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncGenerator

import pytest

pytest.importorskip("google.adk")
pytest.importorskip("mcp")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams  # noqa: E402
from google.genai import types  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from tests.mcp.helpers import FACTLEDGER, SEVEN, cli, new_ledger  # noqa: E402


class RecallingLlm(BaseLlm):
    """Calls the MCP `recall` tool once, then answers with what the tool returned."""

    model: str = "scripted-recaller"
    offered: list = []
    answers: list = []

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        self.offered.extend(llm_request.tools_dict)
        answers = [part.function_response for content in llm_request.contents
                   for part in (content.parts or []) if part.function_response]
        if not answers:
            call = types.FunctionCall(name="recall", args={"query": "where do I live?"})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
            return
        self.answers.extend(a.model_dump(mode="json", exclude_none=True) for a in answers)
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="You live in Lisbon.")]))


def test_an_adk_agent_recalls_through_mcp_toolset(tmp_path):
    db = new_ledger(tmp_path)
    cli(db, "observe", "--app", "mealkit", "--user", "priya", "--predicate", "home_city", "--value", "Lisbon",
        "--quote", "I live in Lisbon", "--session", "s1", "--event-id", "e1", "--said-at", "2026-11-01")
    toolset = McpToolset(connection_params=StdioConnectionParams(server_params=StdioServerParameters(
        command=FACTLEDGER, args=["--db", str(db), "mcp", "--app", "mealkit", "--user", "priya"],
        env=dict(os.environ)), timeout=60))
    model = RecallingLlm(offered=[], answers=[])

    async def turn() -> str:
        agent = LlmAgent(name="agent", model=model, instruction="Use the memory.", tools=[toolset])
        sessions = InMemorySessionService()
        runner = Runner(app_name="mealkit", agent=agent, session_service=sessions)
        live = await sessions.create_session(app_name="mealkit", user_id="priya")
        final = ""
        try:
            async for event in runner.run_async(user_id="priya", session_id=live.id, new_message=types.Content(
                    role="user", parts=[types.Part(text="where do I live?")])):
                if event.content and event.content.parts and event.content.parts[0].text:
                    final = event.content.parts[0].text
        finally:
            await toolset.close()
        return final

    final = asyncio.run(turn())
    assert SEVEN <= set(model.offered)
    (answer,) = model.answers
    assert answer["name"] == "recall"
    assert "home_city = Lisbon" in json.dumps(answer["response"])
    assert final == "You live in Lisbon."
