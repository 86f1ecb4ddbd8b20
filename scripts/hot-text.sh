#!/usr/bin/env bash
# Writes link/hot-text.ld: the functions the program runs for the stages' stream (sc-gate,
# sc-approve, sc-exec), for sc-report over their log and for sc-hook's calls, which build.rs has the linker put side by side at the front of the code (`.text.hot`).
#
# Why: every tool is one program of about 20 MB, and the kernel maps a program's code in 64 KiB
# pieces around each page it runs, so a gate whose few hundred functions lie scattered among the
# others' (MCP, reports, the web card, Redis) maps megabytes it never runs. Side by side, the
# gate's stretch is about a megabyte and a half (the section is about 2.8 MB in all: a line
# without the hash covers every generic copy of its function, the other tools' copies too).
#
# How: the program, as the release profile builds it (what `cargo install` gives) and as the dist
# profile does (what `make bench` measures: fat LTO inlines differently), runs under valgrind's
# callgrind (a call-graph profiler; it lists every function that ran): sc-gate over
# examples/gen_calls' calls with its default rules and with the claude-code pack, sc-approve and
# sc-exec after it, sc-report and `sc-report --verify` over their log, and sc-hook's PreToolUse
# and PostToolUse calls, untainted and tainted, under the pack. Each function is named as its
# symbol is, without the hash rustc adds (which changes with the compiler, the profile and the
# crate's version), so one line covers every build of it; a function the program picks by the
# processor it runs on is named by hand (valgrind's processor lacks some extensions).
#
# The order: each function belongs to the set of tools that ran it, and the sets are laid out in
# the reflected Gray code of the tools (a tool's bit, in or out), so that consecutive sets differ
# by one tool and each tool's functions fall in a few stretches rather than everywhere; of the
# orders of the tools, the one that leaves the fewest stretches is taken, each tool's weighted
# (WEIGHTS: the kernel maps 64 KiB around each page a tool runs, so each stretch costs a piece or
# two). Within a set the
# names are sorted. The gate's runs are made twice, as its two threads meet at different points
# from run to run: a few functions (a lock's contended path, say) still come and go between two
# runs of this script on the same code.
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

PROFILES=${HOT_TEXT_PROFILES:-release dist}
TOOLS="gate approve exec report hook"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sc-hot-text.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# profile KIND NAME -- COMMAND...: COMMAND under callgrind, its functions in $CG/KIND/NAME.
profile() {
  local kind=$1 name=$2
  shift 3
  valgrind --tool=callgrind --demangle=no --dump-instr=no --compress-strings=no \
    --compress-pos=no --callgrind-out-file="$CG/$kind/$name" "$@" 2>"$RUN/$kind-$name.err" ||
    { say "$kind $name failed:"; cat "$RUN/$kind-$name.err" >&2; exit 1; }
}

# A hook call: event $1 of session $2, tool $3 with input $4 (and a response for PostToolUse).
event() {
  local response=
  [ "$1" = PostToolUse ] && response=',"tool_response":{"result":"page"}'
  printf '{"session_id":"%s","transcript_path":"/dev/null","cwd":"%s","permission_mode":"default","hook_event_name":"%s","tool_name":"%s","tool_input":%s%s,"tool_use_id":"toolu_hot"}' \
    "$2" "$RUN/proj" "$1" "$3" "$4" "$response"
}
hook() { # SESSION EVENT TOOL INPUT
  n=$((n + 1))
  event "$2" "$1" "$3" "$4" | HOME=$RUN/home profile hook "$build-$n-$2-$3" -- "$RUN/bin/sc-hook" \
    --policy "$POLICY" --home "$RUN/home" --audit "$RUN/$1.jsonl" > /dev/null
}

POLICY=$PWD/policies/claude-code.json
BASH='{"command":"cargo test --locked","description":"tests"}'
CG=$WORK/cg
for tool in $TOOLS; do mkdir -p "$CG/$tool"; done
mkdir -p "$WORK/nm"
for build in $PROFILES; do
  say "building the $build program and examples/gen_calls"
  # The programs alone, as `cargo install` and `make dist` build them: built with an example,
  # they would have its dev-dependencies' features, and other names for their generic copies.
  $CARGO build --profile "$build" --locked --bins >&2
  $CARGO build --profile "$build" --locked --example gen_calls >&2
  BIN=$TARGET/$build
  RUN=$WORK/$build
  mkdir -p "$RUN/proj" "$RUN/home" "$RUN/bin"
  # The program picks its tool by the name it is started as; callgrind starts the named file.
  cp "$BIN/sc-hook" "$RUN/bin/sc-hook"
  nm --defined-only "$BIN/sc-hook" > "$WORK/nm/$build"
  for stage in sc-gate sc-approve sc-exec sc-report; do ln -s sc-hook "$RUN/bin/$stage"; done
  cp "$BIN/sc-sandbox" "$RUN/bin/sc-sandbox"
  "$BIN/examples/gen_calls" --seed 1 --count 2000 > "$RUN/calls.jsonl"
  for run in 1 2; do
    profile gate "$build-default-$run" -- "$RUN/bin/sc-gate" -q --audit "$RUN/gate-$run.jsonl" \
      < "$RUN/calls.jsonl" > /dev/null
    profile gate "$build-pack-$run" -- "$RUN/bin/sc-gate" -q --policy "$POLICY" \
      --audit "$RUN/gate-pack-$run.jsonl" < "$RUN/calls.jsonl" > /dev/null
  done
  # The rest of the pipeline, as `make bench` runs it: sc-approve with no terminal (holds are
  # declined), then sc-exec, on the gate's audit log, then sc-report over that log.
  "$RUN/bin/sc-gate" -q --audit "$RUN/pipeline.jsonl" < "$RUN/calls.jsonl" > "$RUN/verdicts.jsonl"
  setsid -w valgrind --tool=callgrind --demangle=no --dump-instr=no --compress-strings=no \
    --compress-pos=no --callgrind-out-file="$CG/approve/$build" "$RUN/bin/sc-approve" --quiet \
    --audit "$RUN/pipeline.jsonl" < "$RUN/verdicts.jsonl" > "$RUN/approved.jsonl" 2>"$RUN/approve.err" ||
    { say "sc-approve failed:"; cat "$RUN/approve.err" >&2; exit 1; }
  profile exec "$build" -- "$RUN/bin/sc-exec" --quiet --audit "$RUN/pipeline.jsonl" \
    < "$RUN/approved.jsonl" > /dev/null
  profile report "$build" -- "$RUN/bin/sc-report" "$RUN/pipeline.jsonl" > /dev/null
  profile report "$build-verify" -- "$RUN/bin/sc-report" --verify "$RUN/pipeline.jsonl" > /dev/null

  n=0
  hook plain PreToolUse Bash "$BASH"
  hook plain PreToolUse Read "{\"file_path\":\"$RUN/proj/README.md\"}"
  hook plain PreToolUse WebFetch '{"url":"https://example.com/"}'
  hook tainted PreToolUse WebFetch '{"url":"https://example.com/"}'
  hook tainted PostToolUse WebFetch '{"url":"https://example.com/"}'
  hook tainted PreToolUse Bash "$BASH"
  hook tainted PreToolUse Bash "$BASH"
  grep -q updatedInput <(event PreToolUse tainted Bash "$BASH" | HOME=$RUN/home "$RUN/bin/sc-hook" \
    --policy "$POLICY" --home "$RUN/home" --audit "$RUN/tainted.jsonl") ||
    { say "the tainted session's call was not rewritten (is bubblewrap installed?)"; exit 1; }
done

# The static C library the program is linked with (build.rs), whose objects are listed by file.
LIBC_A=$(${CC:-cc} -print-file-name=libc.a)
python3 - "$WORK/cg" "$LIBC_A" "$WORK/nm" > "$WORK/hot-text.ld" <<'EOF'
import os, re, sys

# A Rust symbol as rustc writes it: the path, then `17h` and a 16-digit hash, then `E`; or, in
# the newer scheme the standard library uses, with each crate's hash after `Cs`.
LEGACY = re.compile(r"^(_ZN.*)17h[0-9a-f]{16}E$")
V0 = re.compile(r"^_R[0-9A-Za-z_]+$")
CRATE_HASH = re.compile(r"Cs[0-9A-Za-z]+_")
# What valgrind cannot show: the program picks these by the processor it runs on (SHA-256 in
# the SHA extensions), while valgrind's processor has none.
BY_PROCESSOR = ["_ZN4sha26sha2563x86*"]

def without_hash(symbol):
    m = LEGACY.match(symbol)
    return m.group(1) + "17h*" if m else None

# A generic function has a copy for each set of types it is used with, all of one name but for
# the hash: most of those copies run in no tool here, and a line without the hash would put them
# all among the hot code (a hash table's `reserve_rehash` alone is 120 KB of copies). So a
# function of which a profiled program holds more than one copy is named with its hash: that
# line names the copy in one profile's build of one compiler, and goes stale with either (the
# copy is then laid out as any other function, nothing worse).
copies = {}
in_program = set()
for build in os.listdir(sys.argv[3]):
    held = {}
    for line in open(os.path.join(sys.argv[3], build)):
        symbol = line.rsplit(" ", 1)[-1].strip()
        in_program.add(symbol)
        name = without_hash(symbol)
        if name:
            held[name] = held.get(name, 0) + 1
    for name, count in held.items():
        copies[name] = max(copies.get(name, 0), count)

def pattern(symbol):
    name = without_hash(symbol)
    if name:
        return name if copies.get(name, 0) <= 1 else symbol
    if V0.match(symbol):
        return CRATE_HASH.sub("Cs*_", symbol) + "*"
    return None

# The static C library's functions are not each in a section of their own: an object of it
# (`malloc.o`) is listed whole, by file. Its string functions come in one object a processor
# (`memmove-avx-unaligned-erms.o`, picked when the program starts); valgrind's processor has
# AVX2 but not AVX-512, so beside each one it ran, the same function's AVX-512 objects
# (`evex`, `avx512`) are listed too.
C_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
libc_objects = {}
if os.path.isfile(sys.argv[2]):
    import subprocess
    listing = subprocess.run(["nm", "-A", "--defined-only", sys.argv[2]], capture_output=True,
                             text=True, check=True).stdout
    for line in listing.splitlines():
        fields = line.rsplit(" ", 2)
        if len(fields) == 3 and fields[1] in "TtWwi":
            member = fields[0].split(":")[1]
            libc_objects.setdefault(fields[2], set()).add(member)
members = set().union(*libc_objects.values()) if libc_objects else set()

def siblings(member):
    family = member.split("-")[0]
    if "-" not in member or family + ".o" not in members:
        return {member}
    return {member} | {other for other in members
                       if other.startswith(family + "-")
                       and ("-evex" in other or "-avx512" in other)
                       and "-rtm" not in other and "no-vzeroupper" not in other}

def ran(kind):
    names = set()
    folder = os.path.join(sys.argv[1], kind)
    for file in os.listdir(folder):
        for line in open(os.path.join(folder, file)):
            if line.startswith("fn="):
                # `'2`: a function called again from within itself.
                symbol = re.sub(r"'[0-9]+$", "", line[3:].strip())
                name = pattern(symbol)
                if name:
                    names.add(name)
                elif C_NAME.match(symbol) and symbol in libc_objects:
                    for member in libc_objects[symbol]:
                        names.update("libc:" + one for one in siblings(member))
                elif C_NAME.match(symbol) and "." not in symbol and symbol in in_program:
                    # A C name in a section of its own: the program's `main`, and SQLite's
                    # functions (built a section each).
                    names.add(symbol)
    return names

from itertools import permutations

TOOLS = ["gate", "approve", "exec", "report", "hook"]
NAMES = {"gate": "sc-gate", "approve": "sc-approve", "exec": "sc-exec", "report": "sc-report",
         "hook": "sc-hook"}
runs = {tool: ran(tool) | set(BY_PROCESSOR) for tool in TOOLS}
every = set().union(*runs.values())
# Each function's set: the tools that ran it.
sets = {}
for name in every:
    sets.setdefault(frozenset(t for t in TOOLS if name in runs[t]), []).append(name)

def gray_rank(order, members):
    # The position of the code (a bit a tool, in `order`, first bit first) in the reflected
    # Gray code: its binary decoding.
    bit, rank = 0, 0
    for tool in order:
        bit ^= tool in members
        rank = rank * 2 + bit
    return rank

def laid_out(order):
    return sorted(sets, key=lambda members: gray_rank(order, members))

# What a tool's stretch costs, as weights: sc-hook starts on every tool call of every agent, and
# its start is the latency a person waits for; sc-gate's and sc-approve's peaks are the figures
# the issue holds; sc-exec and sc-report have room.
WEIGHTS = {"hook": 4, "gate": 2, "approve": 2, "exec": 1, "report": 1}

def stretches(layout, weights=None):
    # How many runs of consecutive sets each tool's functions make, summed over the tools
    # (each weighted, when weights are given).
    count = 0
    for tool in TOOLS:
        inside = [tool in members for members in layout]
        runs = sum(1 for i, now in enumerate(inside) if now and (i == 0 or not inside[i - 1]))
        count += runs * (weights or {}).get(tool, 1)
    return count

best = min(permutations(TOOLS),
           key=lambda order: (stretches(laid_out(order), WEIGHTS), stretches(laid_out(order)), order))
layout = laid_out(best)
print("/* Written by scripts/hot-text.sh: run it again, never edit by hand. The functions the")
print("   program runs for sc-gate's stream, sc-approve, sc-exec, sc-report and sc-hook's calls,")
print("   put side by side at the front of the code (see build.rs), each set of tools that runs")
print(f"   them in one stretch, in the Gray code of {', '.join(NAMES[t] for t in best)}. */")
print("SECTIONS")
print("{")
print("  .text.hot : {")
for members in layout:
    names = sets[members]
    title = ", ".join(NAMES[t] for t in TOOLS if t in members)
    print(f"    /* {title}: {len(names)} */")
    for name in sorted(names):
        if name.startswith("libc:"):
            print(f"    *libc.a:{name[5:]}(.text .text.*)")
        else:
            # A function the compiler finds cold is put in `.text.unlikely.NAME`.
            print(f"    *(.text.{name} .text.unlikely.{name})")
print("  }")
print("}")
print("INSERT BEFORE .text;")
print(f"hot-text: {len(every)} functions in {len(sets)} sets of tools, "
      f"{stretches(layout)} stretches for the {len(TOOLS)} tools", file=sys.stderr)
EOF
mkdir -p link
mv "$WORK/hot-text.ld" "$OUT"
say "wrote $OUT"
