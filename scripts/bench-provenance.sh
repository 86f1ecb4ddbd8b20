#!/usr/bin/env bash
# sc-gate on a stream with value provenance: task records, untrusted reads, result records of
# about 4 KiB each and the sends that follow them, under testdata/provenance/policy.json. For the
# lead to fold into `make bench`; run alone it prints lines/s and peak memory.
#
#   scripts/bench-provenance.sh [SC_GATE] [AGENTS]
#
# SC_GATE defaults to target/dist/sc-gate (what `make bench` builds); AGENTS (default 500) each
# get one task, 8 reads with their results and 8 sends (4 carrying a link from a result: held; 4
# carrying nothing from them: allowed): 25 lines and about 28 KiB of untrusted text an agent,
# all of it kept (each agent's bound is 1 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
GATE=${1:-target/dist/sc-gate}
AGENTS=${2:-500}
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
python3 - "$AGENTS" >"$DIR/stream.jsonl" <<'PY'
import json, sys
agents = int(sys.argv[1])
filler = "The quarterly planning thread went on about budgets, venues and the offsite agenda. " * 40
for a in range(agents):
    agent = f"agent-{a}"
    print(json.dumps({"kind": "task", "agent": agent, "source": "user",
                      "instruction": f"Summarise channel {a} and send it to lead{a}@corp.example"}))
    for r in range(8):
        print(json.dumps({"agent": agent, "tool": "read_channel_messages",
                          "args": {"channel": f"c{a}-{r}"}, "source": "user"}))
        text = f"{filler} Visit https://portal-{a}-{r}.example.com/doc/{r} ref INV-{a}-{r}."
        print(json.dumps({"kind": "result", "agent": agent, "tool": "read_channel_messages",
                          "output": {"messages": [{"from": "bot", "text": text}]}}))
    for s in range(8):
        body = (f"See portal-{a}-{s}.example.com/doc/{s}" if s % 2 == 0
                else "The thread agreed on the agenda; nothing else to do.")
        print(json.dumps({"agent": agent, "tool": "send_email",
                          "args": {"to": f"lead{a}@corp.example", "subject": "Summary", "body": body},
                          "source": "agent"}))
PY
LINES=$(wc -l <"$DIR/stream.jsonl")
BYTES=$(wc -c <"$DIR/stream.jsonl")
START=$(date +%s.%N)
/usr/bin/time -f '%M' -o "$DIR/rss" "$GATE" --quiet --audit "$DIR/audit.jsonl" \
  --policy testdata/provenance/policy.json "$DIR/stream.jsonl" >"$DIR/out.jsonl"
END=$(date +%s.%N)
python3 - "$DIR/out.jsonl" "$LINES" "$BYTES" "$START" "$END" "$(cat "$DIR/rss")" <<'PY'
import json, sys
out, lines, size, start, end, rss = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
decisions = {}
for line in open(out):
    record = json.loads(line)
    if "decision" in record and record.get("call", {}).get("tool") == "send_email":
        decisions[record["decision"]] = decisions.get(record["decision"], 0) + 1
seconds = end - start
print(f"provenance stream: {lines} lines ({size / 2**20:.1f} MiB) in {seconds:.2f} s, "
      f"{lines / seconds:,.0f} lines/s, peak RSS {rss / 1024:.0f} MiB; sends: {decisions}")
PY
