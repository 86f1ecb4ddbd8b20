"""The Python SDK's client (the `mcp` package, pinned in python-requirements.txt) driving sc-mcp, for
tests/mcp_revisions.rs.

    py-client.py MODE PLAN -- SC_MCP_COMMAND...
    py-client.py MODE PLAN -- http://HOST:PORT/mcp    (Streamable HTTP; the bearer token in
                                                      $SC_MCP_TOKEN, the agent in $SC_MCP_AGENT)

MODE is the SDK's `mode`: `legacy` (the initialize handshake) or `2026-07-28` (stateless, every
request carrying its `_meta`; a held call comes back as `input_required`, and the SDK retries it).
PLAN is JSON: {"elicit": "accept"|"decline"|"none", "calls": [[TOOL, ARGS], …]}. With "none", the
client declares no elicitation. Prints one JSON report: the tools listed, each call's result or
error, and the elicitation messages the person was shown.
"""

import asyncio
import json
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
import os
import mcp_types as types


async def main() -> None:
    mode, plan = sys.argv[1], json.loads(sys.argv[2])
    command = sys.argv[sys.argv.index("--") + 1 :]
    asked = []

    async def elicit(context, params):
        asked.append({"message": params.message, "mode": getattr(params, "mode", None)})
        if plan["elicit"] == "accept":
            return types.ElicitResult(action="accept", content={"approve": True, "scope": "once"})
        return types.ElicitResult(action="decline")

    kwargs = {"mode": mode}
    if plan["elicit"] != "none":
        kwargs["elicitation_callback"] = elicit
    report = {"tools": None, "results": [], "asked": asked}
    if command[0].startswith("http://"):
        headers = {"Authorization": f"Bearer {os.environ['SC_MCP_TOKEN']}"}
        if os.environ.get("SC_MCP_AGENT"):
            headers["X-Agent"] = os.environ["SC_MCP_AGENT"]
        server = streamable_http_client(command[0], http_client=create_mcp_http_client(headers=headers))
    else:
        server = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(server, **kwargs) as client:
        tools = await client.list_tools()
        report["tools"] = sorted(tool.name for tool in tools.tools)
        for name, args in plan["calls"]:
            try:
                result = await client.call_tool(name, args)
                report["results"].append(
                    {
                        "isError": bool(result.is_error),
                        "text": " ".join(c.text for c in result.content if hasattr(c, "text")),
                    }
                )
            except Exception as err:  # a JSON-RPC error: the test reads it
                report["results"].append({"error": str(err)})
    print(json.dumps(report))


asyncio.run(main())
