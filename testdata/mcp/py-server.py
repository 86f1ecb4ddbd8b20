"""A small MCP server on the Python SDK (the `mcp` package, pinned in python-requirements.txt), over
stdio, for tests/mcp_revisions.rs: notes kept as files in the folder given as its argument."""

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


server.run()
