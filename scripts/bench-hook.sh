#!/usr/bin/env bash
# What one sc-hook call costs as Claude Code runs it: a new process for each PreToolUse, under
# policies/claude-code.json, with a SQLite state and an audit log, in the profile `cargo install`
# builds (issue 34's goals: at most 3 ms, within 4.5x a spawn of /bin/true; a rewrite at most
# 5 ms). The median of N rounds, each spawning /bin/true, an untainted and a tainted session's
# call in turn, so that both the plain answer and the sandboxed rewrite are timed.
#
# Environment:
#   BENCH_HOOK_RUNS=N  runs of each (default 41)
#   BENCH_HOOK_POLICY=FILE  the policy (default policies/claude-code.json; it must confine a
#                      tainted session's Bash calls)
#   SC_HOOK=PATH       the binary (default: the release build, what `cargo install` builds,
#                      built now when missing)
# Prints markdown table rows.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
TARGET=${CARGO_TARGET_DIR:-target}
RUNS=${BENCH_HOOK_RUNS:-41}

say() { echo "bench-hook: $*" >&2; }

if [ -n "${SC_HOOK:-}" ]; then
  HOOK=$SC_HOOK
else
  if [ ! -x "$TARGET/release/sc-hook" ] || [ ! -x "$TARGET/release/sc-sandbox" ]; then
    say "building sc-hook and sc-sandbox (release)"
    $CARGO build --release --locked --bins >&2
  fi
  HOOK=$TARGET/release/sc-hook
fi
POLICY=${BENCH_HOOK_POLICY:-$PWD/policies/claude-code.json}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sc-bench-hook.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/proj" "$WORK/home"
PROFILE=$(basename "$(dirname "$HOOK")")
# The nine programs as `cargo install` leaves them: copied into a folder of their own. The copy is
# what users run, and it starts faster than the linker's own output file: a program read from
# the pages the linker wrote through its memory map took 0.4-0.8 ms longer to start (alternating
# runs of the same bytes, 2026-12-02), until those pages left the page cache.
mkdir "$WORK/bin"
for name in sc-gate sc-approve sc-exec sc-report sc-mcp sc-hook sc-state sc-sandbox sc-inbox; do
  cp "$(dirname "$HOOK")/$name" "$WORK/bin/$name"
done
HOOK=$WORK/bin/sc-hook

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

printf '%s' "$BASH_CALL" > "$WORK/plain.json"
printf '%s' "$TAINTED_CALL" > "$WORK/tainted.json"
# Alternating rounds of /bin/true (the floor: spawning a program that does nothing), the untainted
# call and the tainted one, each spawned without a shell (scripts/spawn-times.py).
args=(--policy "$POLICY" --home "$WORK/home" --audit)
times=$(HOME=$WORK/home python3 scripts/spawn-times.py "$RUNS" \
  "true=$WORK/plain.json" -- /bin/true ";;" \
  "plain=$WORK/plain.json" -- "$HOOK" "${args[@]}" "$WORK/plain.jsonl" ";;" \
  "tainted=$WORK/tainted.json" -- "$HOOK" "${args[@]}" "$WORK/tainted.jsonl")
us() { awk -v name="$1" '$1 == name { print $2 }' <<<"$times"; }
true_us=$(us true) plain_us=$(us plain) tainted_us=$(us tainted)
ms() { awk -v us="$1" 'BEGIN { printf "%.2f ms", us / 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f×", a / b }'; }
verdict() { [ "$1" -le "$2" ] && echo "met" || echo "NOT met"; }
echo "| \`/bin/true\` spawned (the floor; median of $RUNS, alternating) | $(ms "$true_us") | |"
echo "| sc-hook PreToolUse \`Bash\`, untainted session ($PROFILE; median of $RUNS) | $(ms "$plain_us") = $(ratio "$plain_us" "$true_us") /bin/true | goal ≤ 3 ms: $(verdict "$plain_us" 3000); ≤ 4.5× /bin/true: $(verdict "$((plain_us * 10))" "$((true_us * 45))") |"
echo "| sc-hook PreToolUse \`Bash\`, tainted session, rewritten under sc-sandbox ($PROFILE; median of $RUNS) | $(ms "$tainted_us") = $(ratio "$tainted_us" "$true_us") /bin/true | goal ≤ 5 ms: $(verdict "$tainted_us" 5000) |"
