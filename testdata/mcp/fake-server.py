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
         "stray", "impersonate"]
# A tool list that names the tool every test policy denies.
DENIED_LIST = {"tools": [{"name": "write_file", "inputSchema": {"type": "object"}}]}


def main():
    if "--die-at-start" in sys.argv[1:]:
        sys.exit(5)
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
