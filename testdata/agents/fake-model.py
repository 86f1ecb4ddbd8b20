#!/usr/bin/env python3
"""A scripted model endpoint for the real-agent tests (tests/real_agents.rs), on loopback only.

Usage: fake-model.py SCRIPT.json LOG.jsonl

It binds 127.0.0.1 on a free port and prints `PORT N` on stdout once it listens. It speaks just
enough of each agent's model API to hand the agent a scripted sequence of tool calls:
  - Anthropic Messages (Claude Code): POST /v1/messages, streaming server-sent events;
  - OpenAI Responses (Codex): POST .../responses, streaming server-sent events;
  - OpenAI Chat Completions (Copilot CLI's own providers): POST .../chat/completions, streaming;
  - Gemini generateContent (Gemini CLI): POST .../models/M:streamGenerateContent?alt=sse.
SCRIPT is {"turns": [CALL, CALL, ...], "final": "TEXT"}, each CALL {"name": ..., "input": {...}}
(and "subagents": [{"marker": TEXT, "turns": [...]}], the turns of a conversation whose user text
holds the marker: a subagent's, started with a prompt that holds it):
the answer to a conversation that already holds N tool results is turn N's call, and once every
call has its result, the final text; `{{PORT}}` in a call's input is the server's own port.
A request that offers the model no tools (a title, a summary) gets the final text. Every request is appended to LOG as one JSON line
{"method", "path", "results", "body"}, `results` the text of each tool result the conversation
holds, so the test can read what the agent sent back (a command's output, a hook's refusal).
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT = json.load(open(sys.argv[1]))
LOG = open(sys.argv[2], "a", buffering=1)
LOG_LOCK = threading.Lock()


PORT = [0]


def user_text(body):
    """The text of every user message of a conversation, in any of the four APIs."""
    out = []
    for m in (body.get("messages") or []):
        if isinstance(m, dict) and m.get("role") == "user":
            out.append(text_of(m.get("content")))
    for c in (body.get("contents") or []):
        if isinstance(c, dict) and c.get("role") == "user":
            out += [p.get("text", "") for p in c.get("parts", []) if isinstance(p, dict)]
    items = body.get("input")
    if isinstance(items, list):
        for i in items:
            if isinstance(i, dict) and i.get("role") == "user":
                out.append(text_of(i.get("content")))
    return "\n".join(out)


def step(results, body):
    """The call for a conversation with `results` tool results so far, or None for the end;
    `{{PORT}}` in its input is this server's own port. A conversation whose user text holds a
    subagent's marker (SCRIPT's `subagents`: [{"marker", "turns"}]) is that subagent's."""
    turns = SCRIPT.get("turns", [])
    said = user_text(body)
    for sub in SCRIPT.get("subagents", []):
        if sub["marker"] in said:
            turns = sub["turns"]
            break
    if results >= len(turns):
        return None
    return json.loads(json.dumps(turns[results]).replace("{{PORT}}", str(PORT[0])))


def sse(handler, events):
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Connection", "close")
    handler.end_headers()
    for name, data in events:
        if name:
            handler.wfile.write(f"event: {name}\n".encode())
        handler.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
    handler.wfile.flush()
    handler.close_connection = True


def send_json(handler, status, data):
    body = json.dumps(data).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


# --- Anthropic Messages ------------------------------------------------------------------------


def anthropic_results(body):
    count = 0
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            count += sum(1 for b in content if b.get("type") == "tool_result")
    return count


def anthropic(handler, body, n):
    call = step(anthropic_results(body), body) if body.get("tools") else None
    if call is None:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": SCRIPT.get("final", "done")}
        stop = "end_turn"
    else:
        block = {"type": "tool_use", "id": f"toolu_{n:04d}", "name": call["name"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(call["input"])}
        stop = "tool_use"
    message = {
        "id": f"msg_{n:04d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "fake"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    if not body.get("stream"):
        full = dict(block)
        if call is None:
            full["text"] = delta["text"]
        else:
            full["input"] = call["input"]
        message.update(content=[full], stop_reason=stop)
        return send_json(handler, 200, message)
    sse(
        handler,
        [
            ("message_start", {"type": "message_start", "message": message}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ],
    )


# --- OpenAI Responses --------------------------------------------------------------------------


def responses_results(body):
    items = body.get("input", [])
    if not isinstance(items, list):
        return 0
    return sum(1 for i in items if isinstance(i, dict) and i.get("type") in ("function_call_output", "custom_tool_call_output"))


def responses(handler, body, n):
    call = step(responses_results(body), body) if body.get("tools") else None
    rid = f"resp_{n:04d}"
    if call is None:
        text = SCRIPT.get("final", "done")
        item = {
            "type": "message",
            "id": f"msg_{n:04d}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    else:
        item = {
            "type": "function_call",
            "id": f"fc_{n:04d}",
            "call_id": f"call_{n:04d}",
            "name": call["name"],
            "arguments": json.dumps(call["input"]),
            "status": "completed",
        }
    base = {"id": rid, "object": "response", "model": body.get("model", "fake"), "output": []}
    done = dict(base, status="completed", output=[item],
                usage={"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                       "total_tokens": 15})
    sse(
        handler,
        [
            ("response.created", {"type": "response.created", "response": dict(base, status="in_progress")}),
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": done}),
        ],
    )


# --- OpenAI Chat Completions -------------------------------------------------------------------


def chat_results(body):
    return sum(1 for m in body.get("messages", []) if m.get("role") == "tool")


def chat(handler, body, n):
    call = step(chat_results(body), body) if body.get("tools") else None
    if call is None:
        delta = {"role": "assistant", "content": SCRIPT.get("final", "done")}
        finish = "stop"
    else:
        delta = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "index": 0,
                    "id": f"call_{n:04d}",
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["input"])},
                }
                if not isinstance(call["input"], str)
                # A freeform (custom) tool's call: its input is the text itself.
                else {
                    "index": 0,
                    "id": f"call_{n:04d}",
                    "type": "custom",
                    "custom": {"name": call["name"], "input": call["input"]},
                }
            ],
        }
        finish = "tool_calls"
    chunk = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 0,
             "model": body.get("model", "fake")}
    if not body.get("stream"):
        message = dict(delta)
        return send_json(handler, 200, dict(chunk, object="chat.completion", choices=[
            {"index": 0, "message": message, "finish_reason": finish}],
            usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}))
    sse(
        handler,
        [
            (None, dict(chunk, choices=[{"index": 0, "delta": delta, "finish_reason": None}])),
            (None, dict(chunk, choices=[{"index": 0, "delta": {}, "finish_reason": finish}],
                        usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})),
        ],
    )
    handler.wfile.write(b"data: [DONE]\n\n")


# --- Gemini generateContent --------------------------------------------------------------------


def gemini_results(body):
    count = 0
    for content in body.get("contents", []):
        count += sum(1 for p in content.get("parts", []) if "functionResponse" in p)
    return count


def gemini(handler, body, stream):
    offered = any(t.get("functionDeclarations") for t in body.get("tools", []) or [])
    call = step(gemini_results(body), body) if offered else None
    if call is None:
        part = {"text": SCRIPT.get("final", "done")}
    else:
        part = {"functionCall": {"name": call["name"], "args": call["input"]}}
    answer = {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "fake",
    }
    if stream:
        sse(handler, [(None, answer)])
    else:
        send_json(handler, 200, answer)


def text_of(content):
    """A tool result's text: a string, a list of text blocks, or any JSON (as JSON)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) and "text" in b for b in content):
        return "".join(b["text"] for b in content)
    return json.dumps(content)


def tool_results(body):
    """The text of every tool result the conversation holds, in order, in any of the four APIs."""
    if not isinstance(body, dict):
        return []
    found = []
    for message in body.get("messages", []) or []:
        content = message.get("content")
        if message.get("role") == "tool":
            found.append(text_of(content))
        elif isinstance(content, list):
            found += [text_of(b.get("content")) for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    items = body.get("input")
    if isinstance(items, list):
        found += [text_of(i.get("output")) for i in items
                  if isinstance(i, dict) and i.get("type") in ("function_call_output", "custom_tool_call_output")]
    for content in body.get("contents", []) or []:
        found += [text_of(p["functionResponse"].get("response")) for p in content.get("parts", []) if "functionResponse" in p]
    return found


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    count = 0
    count_lock = threading.Lock()

    def log_message(self, *args):
        pass

    def record(self, body):
        entry = {"method": self.command, "path": self.path, "results": tool_results(body), "body": body}
        with LOG_LOCK:
            LOG.write(json.dumps(entry) + "\n")

    def do_GET(self):
        self.record(None)
        send_json(self, 404, {"error": {"message": "not served by the fake model", "type": "not_found"}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        self.record(body)
        with Handler.count_lock:
            Handler.count += 1
            n = Handler.count
        path = self.path.split("?")[0]
        if path.endswith("/messages/count_tokens"):
            return send_json(self, 200, {"input_tokens": 10})
        if path.endswith("/messages"):
            return anthropic(self, body, n)
        if path.endswith("/responses"):
            return responses(self, body, n)
        if path.endswith("/chat/completions"):
            return chat(self, body, n)
        if ":streamGenerateContent" in path:
            return gemini(self, body, True)
        if ":generateContent" in path:
            return gemini(self, body, False)
        if ":countTokens" in path:
            return send_json(self, 200, {"totalTokens": 10})
        send_json(self, 404, {"error": {"message": "not served by the fake model", "type": "not_found"}})


def exit_on_stdin_eof():
    """The test holds this server's stdin: when the test ends, however it ends, the server ends."""
    sys.stdin.buffer.read()
    os._exit(0)


def main():
    threading.Thread(target=exit_on_stdin_eof, daemon=True).start()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    PORT[0] = server.server_address[1]
    print(f"PORT {PORT[0]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
