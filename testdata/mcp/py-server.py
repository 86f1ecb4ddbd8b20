"""A small MCP server on the Python SDK (the `mcp` package, pinned in python-requirements.txt), for
tests/mcp_revisions.rs and tests/mcp_http.rs: notes kept as files in the folder given as its argument.

    py-server.py FOLDER            over stdio
    py-server.py FOLDER --http     over Streamable HTTP on a free loopback port, printed as its URL
                                   on stdout; every request must carry `Authorization: Bearer
                                   $PY_SERVER_TOKEN` (else 401)
    py-server.py FOLDER --modern-only
                                   over stdio, speaking 2026-07-28 only: the SDK's own serving loop
                                   for that revision, which refuses `initialize` (-32022) and every
                                   request without the per-request `_meta` keys
    py-server.py FOLDER --http --modern-only
                                   over Streamable HTTP, speaking 2026-07-28 only: a POST without
                                   `MCP-Protocol-Version: 2026-07-28` is refused (400, -32022); the
                                   SDK checks `Mcp-Method`/`Mcp-Name` against the body
"""

import os
import pathlib
import sys

from mcp.server.mcpserver import MCPServer

ROOT = pathlib.Path(sys.argv[1]).resolve()
server = MCPServer("py-notes")


def _inside(name: str) -> pathlib.Path:
    path = (ROOT / name).resolve()
    if ROOT not in path.parents:
        raise ValueError(f"{name} is outside the notes folder")
    return path


@server.tool()
def read_note(name: str) -> str:
    """Reads a note."""
    return _inside(name).read_text()


@server.tool()
def write_note(name: str, text: str) -> str:
    """Writes a note."""
    _inside(name).write_text(text)
    return f"wrote {name}"


@server.tool()
def delete_note(name: str) -> str:
    """Deletes a note."""
    _inside(name).unlink()
    return f"deleted {name}"


def serve_http(modern_only: bool) -> None:
    import json
    import socket

    import uvicorn

    app = server.streamable_http_app()
    expected = f"Bearer {os.environ['PY_SERVER_TOKEN']}".encode()
    refusal = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
        "code": -32022, "message": "Unsupported protocol version",
        "data": {"supported": ["2026-07-28"]}}}).encode()

    async def guarded(scope, receive, send):
        headers = dict(scope["headers"]) if scope["type"] == "http" else {}
        if scope["type"] == "http" and headers.get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"no token"})
            return
        if modern_only and scope["type"] == "http" and (
                headers.get(b"mcp-protocol-version") != b"2026-07-28" or scope["method"] != "POST"):
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": refusal})
            return
        await app(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    uvicorn.Server(uvicorn.Config(guarded, log_level="warning", lifespan="on")).run(sockets=[sock])


def serve_modern_only() -> None:
    import anyio

    from mcp.server.runner import _serve_modern_stream
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            async with lowlevel.lifespan(lowlevel) as state:
                await _serve_modern_stream(
                    lowlevel, read_stream, write_stream, lifespan_state=state, raise_exceptions=False
                )

    anyio.run(main)


if sys.argv[2:] == ["--http"]:
    serve_http(modern_only=False)
elif sys.argv[2:] == ["--http", "--modern-only"]:
    serve_http(modern_only=True)
elif sys.argv[2:] == ["--modern-only"]:
    serve_modern_only()
else:
    server.run()
