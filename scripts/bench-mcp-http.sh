#!/usr/bin/env bash
# What `sc-mcp --listen` adds to an allowed tools/call (issue 32's goal: p50 under 1 ms, p99 under
# 3 ms on two cores): the same `echo` call to the hermetic fake server (testdata/mcp/fake-server.py)
# made directly over its stdio, and through sc-mcp's Streamable HTTP listener (one kept-alive
# connection, the policy allowing it, an audit log written), alternating; the added latency is
# through minus direct, as percentiles of each.
#
# Environment:
#   BENCH_MCP_HTTP_CALLS=N  calls each way (default 1000, after 50 to warm up)
#   SC_MCP=PATH             the binary (default: the dist build, else the release build, else one
#                           built now with the release profile)
# Prints one markdown table row.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
TARGET=${CARGO_TARGET_DIR:-target}
CALLS=${BENCH_MCP_HTTP_CALLS:-1000}

if [ -n "${SC_MCP:-}" ]; then
  MCP=$SC_MCP
elif [ -x "$TARGET/dist/sc-mcp" ]; then
  MCP=$TARGET/dist/sc-mcp
else
  if [ ! -x "$TARGET/release/sc-mcp" ]; then
    echo "bench-mcp-http: building sc-mcp (release)" >&2
    $CARGO build --release --locked --bin sc-mcp --bin sc-hook >&2
  fi
  MCP=$TARGET/release/sc-mcp
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sc-bench-mcp-http.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "bench-mcp-http-token" > "$WORK/token"

python3 - "$MCP" "$WORK" "$CALLS" <<'PY'
import http.client, json, os, subprocess, sys, time

mcp, work, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
server = ["python3", "testdata/mcp/fake-server.py"]
listener = subprocess.Popen(
    [mcp, "--listen", "127.0.0.1:0", "--token-file", f"{work}/token", "--quiet",
     "--policy", "testdata/mcp/fake-policy.json", "--agent", "crew",
     "--audit", f"{work}/audit.jsonl", "--", *server],
    stderr=subprocess.PIPE, text=True, env={**os.environ, "XDG_STATE_HOME": work})
line = listener.stderr.readline()
host, port = line.split("http://")[1].split("/mcp")[0].rsplit(":", 1)
direct = subprocess.Popen(server, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
connection = http.client.HTTPConnection(host, int(port))
headers = {"Authorization": "Bearer bench-mcp-http-token", "Content-Type": "application/json",
           "Accept": "application/json, text/event-stream"}

def call(n):
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"n": n}}})

def through(n):
    start = time.perf_counter()
    connection.request("POST", "/mcp", call(n), headers)
    body = connection.getresponse().read()
    took = time.perf_counter() - start
    assert b'"result"' in body, body
    return took

def straight(n):
    start = time.perf_counter()
    direct.stdin.write(call(n) + "\n")
    direct.stdin.flush()
    answer = direct.stdout.readline()
    took = time.perf_counter() - start
    assert '"result"' in answer, answer
    return took

for n in range(50):
    through(n); straight(n)
t, d = [], []
for n in range(50, 50 + calls):
    t.append(through(n)); d.append(straight(n))
listener.kill(); direct.kill()

def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] * 1000

added50 = pct(t, 0.5) - pct(d, 0.5)
added99 = pct(t, 0.99) - pct(d, 0.99)
print(f"| sc-mcp --listen, an allowed tools/call (added to the server's own) | "
      f"p50 {added50:.2f} ms, p99 {added99:.2f} ms | through {pct(t, 0.5):.2f}/{pct(t, 0.99):.2f} ms, "
      f"direct {pct(d, 0.5):.2f}/{pct(d, 0.99):.2f} ms (p50/p99), {calls} calls |")
PY
