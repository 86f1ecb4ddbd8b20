#!/usr/bin/env python3
"""A small, hermetic MCP server over stdio for sc-mcp's fault tests.

Every line it reads is appended to the file named by FAKE_MCP_LOG (when set), so a test can
prove what did and did not reach the server. Its tools misbehave on purpose:

  echo         answers with its arguments as text
  write_file   answers like echo (the tests' policy denies it, so it must never be called)
  crash        exits with status 3 without answering (a crash mid-call)
  garbage      writes a line that is not JSON, then answers like echo
  dup_answer   answers with a duplicate `result` key (a message no strict reader accepts)
  hang         never answers
  shout        writes a line to stderr, then answers like echo
  both         answers with both a `result` and an `error`
  stray        writes answers nobody asked for (its id as a string, an id never sent, a null id,
               a message that is both a request and an answer, a batch), then the real answer
               with its integer id written as a float, then answers the same id again
  impersonate  sends the client an `elicitation/create` of its own with the id sc-mcp gives its
               first question (`sc-mcp-elicit-1`) and a cancellation naming that id, then
               answers like echo

`tools/list` with `params.cursor` "tools-as-object" answers with `tools` as an object.

`--die-at-start` exits with status 5 before reading anything.

`--modern-only` speaks MCP 2026-07-28 only: `initialize` is refused with -32022 naming 2026-07-28,
`server/discover` answers, a request without `_meta["io.modelcontextprotocol/protocolVersion"]`
and `…/clientCapabilities` is refused with -32602, each result has `resultType`, and the tool
`ask` answers `input_required` (the server's own retry). `--modern-only=die-at-discover` exits
with status 4 on `server/discover`; `--modern-only=discover-legacy` answers it naming 2025-11-25
only.
At end of input it exits 0.
"""
import json
import os
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text_result(request_id, text):
    send({"jsonrpc": "2.0", "id": request_id,
          "result": {"content": [{"type": "text", "text": text}]}})


TOOLS = ["echo", "write_file", "crash", "garbage", "dup_answer", "hang", "shout", "both",
         "stray", "impersonate", "cased_answer"]
# A tool list that names the tool every test policy denies.
DENIED_LIST = {"tools": [{"name": "write_file", "inputSchema": {"type": "object"}}]}


MODERN_KEYS = ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities")


def modern_only(message, request_id, behaviour):
    """Answers what a 2026-07-28-only server answers differently; True when it did."""
    method = message.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request_id, "error": {
            "code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": message["params"].get("protocolVersion")}}})
        return True
    meta = (message.get("params") or {}).get("_meta") or {}
    if any(key not in meta for key in MODERN_KEYS):
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32602, "message": "the request has no 2026-07-28 envelope"}})
        return True
    if method == "server/discover":
        if behaviour == "die-at-discover":
            sys.exit(4)
        versions = ["2025-11-25"] if behaviour == "discover-legacy" else ["2026-07-28"]
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "resultType": "complete", "supportedVersions": versions,
            "capabilities": {"tools": {}}, "ttlMs": 0, "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake-modern", "version": "2"}}}})
        return True
    if method == "tools/call" and message["params"]["name"] == "ask":
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "resultType": "input_required", "requestState": "server-state",
            "inputRequests": {"q": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "?", "requestedSchema": {"type": "object"}}}}}})
        return True
    return False


def main():
    if "--die-at-start" in sys.argv[1:]:
        sys.exit(5)
    modern = next((arg for arg in sys.argv[1:] if arg.startswith("--modern-only")), None)
    behaviour = modern.partition("=")[2] if modern else None
    if modern:
        global send
        plain_send = send

        def send(message):
            result = message.get("result") if isinstance(message, dict) else None
            if isinstance(result, dict):
                result.setdefault("resultType", "complete")
            plain_send(message)
    log_path = os.environ.get("FAKE_MCP_LOG")
    print("fake-mcp: ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        if log_path:
            with open(log_path, "a") as log:
                log.write(line if line.endswith("\n") else line + "\n")
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method = message.get("method")
        request_id = message.get("id")
        if request_id is None:
            continue  # a notification or a response
        if modern and modern_only(message, request_id, behaviour):
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-mcp", "version": "1"}}})
        elif method == "tools/list" and (message.get("params") or {}).get("cursor") == "tools-as-object":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "tools": {name: {"inputSchema": {"type": "object"}} for name in TOOLS}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {
                "tools": [{"name": name, "inputSchema": {"type": "object"}} for name in TOOLS]}})
        elif method == "tools/call":
            name = message["params"]["name"]
            arguments = message["params"].get("arguments", {})
            echoed = json.dumps(arguments, sort_keys=True)
            if name == "crash":
                sys.exit(3)
            elif name == "garbage":
                sys.stdout.write("this is not JSON-RPC\n")
                text_result(request_id, echoed)
            elif name == "cased_answer":
                # Keys a case-blind client reads otherwise: `Content` beside `content`.
                send({"jsonrpc": "2.0", "id": request_id,
                      "result": {"content": [{"type": "text", "text": "shown"}],
                                 "Content": [{"type": "text", "text": "hidden"}]}})
            elif name == "dup_answer":
                sys.stdout.write('{"jsonrpc":"2.0","id":%s,"result":{"content":[]},"result":{"isError":true}}\n'
                                 % json.dumps(request_id))
                sys.stdout.flush()
            elif name == "both":
                send({"jsonrpc": "2.0", "id": request_id,
                      "result": {"content": [{"type": "text", "text": "ran"}]},
                      "error": {"code": -32000, "message": "did not run"}})
            elif name == "stray":
                send({"jsonrpc": "2.0", "id": str(request_id), "result": DENIED_LIST})
                send({"jsonrpc": "2.0", "id": 424242, "result": DENIED_LIST})
                send({"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "stray"}})
                send({"jsonrpc": "2.0", "id": request_id, "method": "tools/list",
                      "result": DENIED_LIST})
                send([{"jsonrpc": "2.0", "id": 434343, "result": DENIED_LIST}])
                sys.stdout.write('{"jsonrpc":"2.0","id":%d.0,"result":{"content":'
                                 '[{"type":"text","text":"the real answer"}]}}\n' % request_id)
                send({"jsonrpc": "2.0", "id": request_id, "result": DENIED_LIST})
            elif name == "hang":
                pass
            elif name == "impersonate":
                send({"jsonrpc": "2.0", "id": "sc-mcp-elicit-1", "method": "elicitation/create",
                      "params": {"message": "Run this call?", "requestedSchema": {
                          "type": "object",
                          "properties": {"approve": {"type": "boolean", "title": "Run this call?"}},
                          "required": ["approve"]}}})
                send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": "sc-mcp-elicit-1", "reason": "the server says so"}})
                text_result(request_id, echoed)
            elif name == "shout":
                print("fake-mcp: shouting on stderr", file=sys.stderr, flush=True)
                text_result(request_id, echoed)
            else:
                text_result(request_id, echoed)
        else:
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32601, "message": "method not found: %s" % method}})


main()
