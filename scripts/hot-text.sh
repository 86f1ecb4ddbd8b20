#!/usr/bin/env bash
# Writes link/hot-text.ld: the functions the program runs for the stages' stream (sc-gate,
# sc-approve, sc-exec) and for sc-hook's calls, which build.rs has the linker put side by side at the front of the code (`.text.hot`).
#
# Why: every tool is one program of about 20 MB, and the kernel maps a program's code in 64 KiB
# pieces around each page it runs, so a gate whose few hundred functions lie scattered among the
# others' (MCP, reports, the web card, Redis) maps megabytes it never runs. Side by side, the
# gate's stretch is about a megabyte and a half (the section is about 2.8 MB in all: a line
# without the hash covers every generic copy of its function, the other tools' copies too).
#
# How: the release program runs under valgrind's callgrind (a call-graph profiler; it lists
# every function that ran): sc-gate over examples/gen_calls' calls with its default rules and
# with the claude-code pack, sc-approve and sc-exec after it, and sc-hook's PreToolUse and PostToolUse calls, untainted and
# tainted, under the pack. Each function is named as its symbol is, without the hash rustc adds
# (which changes with the compiler, the profile and the crate's version), so one line covers
# every build of it; a function the program picks by the processor it runs on is named by hand
# (valgrind's processor lacks some extensions). The gate's own functions come first, then those
# both tools run, then the hook's own, so that each tool's lie in one stretch; each group is
# sorted. The gate's runs are made twice, as its two threads meet at different points from run
# to run: a few functions (a lock's contended path, say) still come and go between two runs of
# this script on the same code.
#
# Run it (`make hot-text`) after a change that renames or adds functions on these paths
# (tests/hot_text.rs says when too many lines no longer name a function). Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
TARGET=${CARGO_TARGET_DIR:-target}
OUT=link/hot-text.ld

say() { echo "hot-text: $*" >&2; }
command -v valgrind >/dev/null || { say "needs valgrind (Debian: apt-get install valgrind)"; exit 2; }

say "building the release program and examples/gen_calls"
$CARGO build --release --locked --bins --example gen_calls >&2
BIN=$TARGET/release

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sc-hot-text.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/proj" "$WORK/home" "$WORK/bin" "$WORK/cg/gate" "$WORK/cg/hook"
# The program picks its tool by the name it is started as; callgrind starts the named file.
cp "$BIN/sc-hook" "$WORK/bin/sc-hook"
for stage in sc-gate sc-approve sc-exec; do ln -s sc-hook "$WORK/bin/$stage"; done
cp "$BIN/sc-sandbox" "$WORK/bin/sc-sandbox"

# profile KIND NAME -- COMMAND...: COMMAND under callgrind, its functions in $WORK/cg/KIND/NAME.
profile() {
  local kind=$1 name=$2
  shift 3
  valgrind --tool=callgrind --demangle=no --dump-instr=no --compress-strings=no \
    --compress-pos=no --callgrind-out-file="$WORK/cg/$kind/$name" "$@" 2>"$WORK/$kind-$name.err" ||
    { say "$kind $name failed:"; cat "$WORK/$kind-$name.err" >&2; exit 1; }
}

POLICY=$PWD/policies/claude-code.json
"$BIN/examples/gen_calls" --seed 1 --count 2000 > "$WORK/calls.jsonl"
for run in 1 2; do
  profile gate "default-$run" -- "$WORK/bin/sc-gate" -q --audit "$WORK/gate-$run.jsonl" \
    < "$WORK/calls.jsonl" > /dev/null
  profile gate "pack-$run" -- "$WORK/bin/sc-gate" -q --policy "$POLICY" \
    --audit "$WORK/gate-pack-$run.jsonl" < "$WORK/calls.jsonl" > /dev/null
done
# The rest of the pipeline, as `make bench` runs it: sc-approve with no terminal (holds are
# declined), then sc-exec, on the gate's audit log.
"$WORK/bin/sc-gate" -q --audit "$WORK/pipeline.jsonl" < "$WORK/calls.jsonl" > "$WORK/verdicts.jsonl"
setsid -w valgrind --tool=callgrind --demangle=no --dump-instr=no --compress-strings=no \
  --compress-pos=no --callgrind-out-file="$WORK/cg/gate/approve" "$WORK/bin/sc-approve" --quiet \
  --audit "$WORK/pipeline.jsonl" < "$WORK/verdicts.jsonl" > "$WORK/approved.jsonl" 2>"$WORK/approve.err" ||
  { say "sc-approve failed:"; cat "$WORK/approve.err" >&2; exit 1; }
profile gate exec -- "$WORK/bin/sc-exec" --quiet --audit "$WORK/pipeline.jsonl" \
  < "$WORK/approved.jsonl" > /dev/null

# A hook call: event $1 of session $2, tool $3 with input $4 (and a response for PostToolUse).
event() {
  local response=
  [ "$1" = PostToolUse ] && response=',"tool_response":{"result":"page"}'
  printf '{"session_id":"%s","transcript_path":"/dev/null","cwd":"%s","permission_mode":"default","hook_event_name":"%s","tool_name":"%s","tool_input":%s%s,"tool_use_id":"toolu_hot"}' \
    "$2" "$WORK/proj" "$1" "$3" "$4" "$response"
}
n=0
hook() { # SESSION EVENT TOOL INPUT
  n=$((n + 1))
  event "$2" "$1" "$3" "$4" | HOME=$WORK/home profile hook "$n-$2-$3" -- "$WORK/bin/sc-hook" \
    --policy "$POLICY" --home "$WORK/home" --audit "$WORK/$1.jsonl" > /dev/null
}
BASH='{"command":"cargo test --locked","description":"tests"}'
hook plain PreToolUse Bash "$BASH"
hook plain PreToolUse Read "{\"file_path\":\"$WORK/proj/README.md\"}"
hook plain PreToolUse WebFetch '{"url":"https://example.com/"}'
hook tainted PreToolUse WebFetch '{"url":"https://example.com/"}'
hook tainted PostToolUse WebFetch '{"url":"https://example.com/"}'
hook tainted PreToolUse Bash "$BASH"
hook tainted PreToolUse Bash "$BASH"
grep -q updatedInput <(event PreToolUse tainted Bash "$BASH" | HOME=$WORK/home "$WORK/bin/sc-hook" \
  --policy "$POLICY" --home "$WORK/home" --audit "$WORK/tainted.jsonl") ||
  { say "the tainted session's call was not rewritten (is bubblewrap installed?)"; exit 1; }

python3 - "$WORK/cg" > "$WORK/hot-text.ld" <<'EOF'
import os, re, sys

# A Rust symbol as rustc writes it: the path, then `17h` and a 16-digit hash, then `E`; or, in
# the newer scheme the standard library uses, with each crate's hash after `Cs`.
LEGACY = re.compile(r"^(_ZN.*)17h[0-9a-f]{16}E$")
V0 = re.compile(r"^_R[0-9A-Za-z_]+$")
CRATE_HASH = re.compile(r"Cs[0-9A-Za-z]+_")
# What valgrind cannot show: the program picks these by the processor it runs on (SHA-256 in
# the SHA extensions), while valgrind's processor has none.
BY_PROCESSOR = ["_ZN4sha26sha2563x86*"]

def pattern(symbol):
    m = LEGACY.match(symbol)
    if m:
        return m.group(1) + "17h*"
    if V0.match(symbol):
        return CRATE_HASH.sub("Cs*_", symbol) + "*"
    return None

def ran(kind):
    names = set()
    folder = os.path.join(sys.argv[1], kind)
    for file in os.listdir(folder):
        for line in open(os.path.join(folder, file)):
            if line.startswith("fn="):
                name = pattern(line[3:].strip())
                if name:
                    names.add(name)
    return names

gate, hook = ran("gate") | set(BY_PROCESSOR), ran("hook") | set(BY_PROCESSOR)
groups = [
    ("the stages' stream (sc-gate, sc-approve, sc-exec)", gate - hook),
    ("both tools", gate & hook),
    ("sc-hook's calls", hook - gate),
]
print("/* Written by scripts/hot-text.sh: run it again, never edit by hand. The functions the")
print("   program runs for sc-gate's stream and sc-hook's calls, put side by side at the front of")
print("   the code (see build.rs). */")
print("SECTIONS")
print("{")
print("  .text.hot : {")
for title, names in groups:
    print(f"    /* {title}: {len(names)} */")
    for name in sorted(names):
        # A function the compiler finds cold is put in `.text.unlikely.NAME`.
        print(f"    *(.text.{name} .text.unlikely.{name})")
print("  }")
print("}")
print("INSERT BEFORE .text;")
print(f"hot-text: {len(gate | hook)} functions: {len(gate & hook)} both, "
      f"{len(hook - gate)} the hook's own, {len(gate - hook)} the stages' own", file=sys.stderr)
EOF
mkdir -p link
mv "$WORK/hot-text.ld" "$OUT"
say "wrote $OUT"
