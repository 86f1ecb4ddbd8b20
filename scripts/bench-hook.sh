#!/usr/bin/env bash
# What one sc-hook call costs as Claude Code runs it: a new process for each PreToolUse, under
# policies/claude-code.json, with a SQLite state and an audit log (issue 24's goal: under 5 ms a
# call). The median of N runs, alternating an untainted and a tainted session so that both the
# plain answer and the sandboxed rewrite are timed.
#
# Environment:
#   BENCH_HOOK_RUNS=N  runs (default 101)
#   BENCH_HOOK_POLICY=FILE  the policy (default policies/claude-code.json; it must confine a
#                      tainted session's Bash calls)
#   SC_HOOK=PATH       the binary (default: the dist build, else the release build, else one
#                      built now with the release profile)
# Prints markdown table rows.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
TARGET=${CARGO_TARGET_DIR:-target}
RUNS=${BENCH_HOOK_RUNS:-101}

say() { echo "bench-hook: $*" >&2; }

if [ -n "${SC_HOOK:-}" ]; then
  HOOK=$SC_HOOK
elif [ -x "$TARGET/dist/sc-hook" ]; then
  HOOK=$TARGET/dist/sc-hook
else
  if [ ! -x "$TARGET/release/sc-hook" ] || [ ! -x "$TARGET/release/sc-sandbox" ]; then
    say "building sc-hook and sc-sandbox (release)"
    $CARGO build --release --locked --bin sc-hook --bin sc-sandbox >&2
  fi
  HOOK=$TARGET/release/sc-hook
fi
POLICY=${BENCH_HOOK_POLICY:-$PWD/policies/claude-code.json}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sc-bench-hook.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/proj" "$WORK/home"

# A PreToolUse input for session $1 and tool $2 with input $3.
input() {
  printf '{"session_id":"%s","transcript_path":"/dev/null","cwd":"%s","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"%s","tool_input":%s,"tool_use_id":"toolu_bench"}' \
    "$1" "$WORK/proj" "$2" "$3"
}
# The pack taints the whole crew (`taintScope: "crew"`), so each session has a store of its own
# (beside its audit log). hook SESSION < input
hook() {
  HOME=$WORK/home "$HOOK" --policy "$POLICY" --home "$WORK/home" --audit "$WORK/$1.jsonl"
}
BASH_CALL=$(input plain Bash '{"command":"cargo test --locked","description":"tests"}')
TAINTED_CALL=$(input tainted Bash '{"command":"cargo test --locked","description":"tests"}')
# Taint the second session: a WebFetch's PostToolUse.
input tainted WebFetch '{"url":"https://example.com/"}' | hook tainted >/dev/null
printf '{"session_id":"tainted","transcript_path":"/dev/null","cwd":"%s","permission_mode":"default","hook_event_name":"PostToolUse","tool_name":"WebFetch","tool_input":{"url":"https://example.com/"},"tool_response":{"result":"page"},"tool_use_id":"toolu_bench"}' "$WORK/proj" | hook tainted >/dev/null

# The runs time what they say: the tainted call is rewritten, the other is not.
printf '%s' "$TAINTED_CALL" | hook tainted | grep -q updatedInput ||
  { say "the tainted session's call was not rewritten (is bubblewrap installed, sc-sandbox beside $HOOK?)"; exit 2; }
! printf '%s' "$BASH_CALL" | hook plain | grep -q updatedInput ||
  { say "the untainted session's call was rewritten"; exit 2; }

micros() {
  local start end
  start=$(date +%s%N)
  printf '%s' "$2" | hook "$1" >/dev/null
  end=$(date +%s%N)
  echo $(((end - start) / 1000))
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# The harness itself (a pipe into a process that reads its input): subtracted from both.
harness() {
  local start end
  start=$(date +%s%N)
  printf '%s' "$1" | cat >/dev/null
  end=$(date +%s%N)
  echo $(((end - start) / 1000))
}

base=() plain=() tainted=()
for _ in $(seq "$RUNS"); do
  base+=("$(harness "$BASH_CALL")")
  plain+=("$(micros plain "$BASH_CALL")")
  tainted+=("$(micros tainted "$TAINTED_CALL")")
done
ms() { awk -v us="$1" 'BEGIN { printf "%.2f ms", us / 1000 }'; }
base_median=$(printf '%s\n' "${base[@]}" | median)
plain_median=$(( $(printf '%s\n' "${plain[@]}" | median) - base_median ))
tainted_median=$(( $(printf '%s\n' "${tainted[@]}" | median) - base_median ))
verdict() { [ "$1" -lt 5000 ] && echo "met" || echo "NOT met"; }
echo "| the harness (\`printf … | cat\`), subtracted below (median of $RUNS) | $(ms "$base_median") | |"
echo "| sc-hook PreToolUse, \`Bash\`, untainted session (median of $RUNS) | $(ms "$plain_median") | goal < 5 ms: $(verdict "$plain_median") |"
echo "| sc-hook PreToolUse, \`Bash\`, tainted session, rewritten under sc-sandbox (median of $RUNS) | $(ms "$tainted_median") | goal < 5 ms: $(verdict "$tainted_median") |"
