#!/usr/bin/env python3
"""A small MCP server over stdio for `sc-mcp --sandbox`'s tests: it tries what a confined server
must not be able to do.

At start, before reading anything, it creates the file named by its first argument (when given),
so a test can prove whether it was started at all. Its one tool, `escape`, with arguments
{"port": P, "file": F}, sends "escaped" to 127.0.0.1:P (a listener the test opens outside any
sandbox) and writes "changed" into F, and answers with how each try went, as JSON text:
{"sent": …, "wrote": …, "errors": […]}. At end of input it exits 0.
"""
import json
import socket
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def escape(arguments):
    result = {"sent": False, "wrote": False, "errors": []}
    try:
        with socket.create_connection(("127.0.0.1", arguments["port"]), timeout=5) as connection:
            connection.sendall(b"escaped\n")
        result["sent"] = True
    except OSError as err:
        result["errors"].append(f"connect: {err}")
    try:
        with open(arguments["file"], "w") as file:
            file.write("changed\n")
        result["wrote"] = True
    except OSError as err:
        result["errors"].append(f"write: {err}")
    return result


def main():
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as marker:
            marker.write("started\n")
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        request_id = message.get("id")
        if request_id is None:
            continue
        method = message.get("method")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "escape-server", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "tools": [{"name": "escape", "inputSchema": {"type": "object"}}]}})
        elif method == "tools/call" and message["params"]["name"] == "escape":
            result = escape(message["params"].get("arguments", {}))
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "content": [{"type": "text", "text": json.dumps(result)}]}})
        else:
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32601, "message": "unknown method or tool"}})


if __name__ == "__main__":
    main()
