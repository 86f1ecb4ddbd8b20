#!/usr/bin/env bash
# `make bench`: how fast the stages are, on deterministic call streams, in one run so that the
# ratios hold on a noisy machine. Prints a markdown table and writes it to target/bench/latest.md.
#
# Every measurement is taken BENCH_ROUNDS times (default 3), the rounds alternating between the
# programs compared, and the median is reported. Environment:
#   BENCH_ROUNDS=N     rounds (default 3)
#   BENCH_SEED=N       seed of the generated calls (default 1)
#   BENCH_BIG=N        calls in the streamed case (default 10000000; 0 skips it)
#   BENCH_REPORT_BIG=N events in the larger logs sc-report reads (default 10000000; 0 reads only
#                      the 1M-event ones). Such a log takes about 7 GB for the time it is read.
#   BENCH_DIR=DIR      where the call files and audit logs go (default: a temporary folder)
#   BENCH_CRITERION=0  skip the criterion micro-benchmarks (the decision; shell commands)
#   BENCH_STATE=0      skip the shared state (SQLite, and Redis when redis-server is installed)
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
TARGET=${CARGO_TARGET_DIR:-target}
BIN=$TARGET/dist
ROUNDS=${BENCH_ROUNDS:-3}
SEED=${BENCH_SEED:-1}
BIG=${BENCH_BIG:-10000000}
REPORT_BIG=${BENCH_REPORT_BIG:-10000000}
OUT_DIR=$TARGET/bench
REPORT=$OUT_DIR/latest.md
TIME=/usr/bin/time

say() { echo "bench: $*" >&2; }

# Peak memory is read with GNU time (`-f %M`); Debian's package is `time`.
if [ ! -x "$TIME" ] && command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  say "installing Debian's time for peak-memory figures"
  apt-get install -y -qq time >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null && apt-get install -y -qq time >/dev/null; }
fi
[ -x "$TIME" ] || { say "needs $TIME (Debian package time)"; exit 2; }
command -v setsid >/dev/null || { say "needs setsid (util-linux)"; exit 2; }
JQ=$(command -v jq || true)

say "building (the dist profile: one codegen unit, fat LTO)"
# The programs alone, as `make dist` and `cargo install` build them (built with the examples,
# they would have the dev-dependencies' features too), then the examples.
$CARGO build --profile dist --locked --bins >&2
$CARGO build --profile dist --locked --examples >&2

mkdir -p "$OUT_DIR"
if [ -n "${BENCH_DIR:-}" ]; then
  WORK=$BENCH_DIR
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/sc-bench.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
fi
RESULTS=$WORK/results.tsv
: > "$RESULTS"

gen() { "$BIN/examples/gen_calls" --seed "$SEED" --count "$1"; }
say "generating 100k and 1M calls (seed $SEED)"
gen 100000 > "$WORK/100k.jsonl"
gen 1000000 > "$WORK/1m.jsonl"
head -c 32 /dev/urandom > "$WORK/audit.key"
chmod 600 "$WORK/audit.key"

# The rules a user could write in jq instead: deny lists and provenance, then the amount limit.
JQ_RULES='if .tool == "shell_exec"
    or ((.source != "user" and .source != "agent")
        and (.tool == "send_payment" or .tool == "send_email" or .tool == "delete_file"))
  then {decision: "deny"}
  elif (.args.amount // 0) > 100 then {decision: "hold"}
  else {decision: "allow"} end'

now() { date +%s%N; }
# measure NAME ROUND COMMAND...: runs a shell command, records its wall time and the largest
# peak RSS (KiB) of the stages that wrote one to $WORK/rss.*.
measure() {
  local name=$1 round=$2
  shift 2
  rm -f "$WORK"/rss.*
  local start end rss
  start=$(now)
  bash -c "$*"
  end=$(now)
  rss=$(cat "$WORK"/rss.* 2>/dev/null | sort -n | tail -1 || true)
  printf '%s\t%s\t%s\t%s\n' "$name" "$round" "$(( (end - start) / 1000 ))" "${rss:-0}" >> "$RESULTS"
  for f in "$WORK"/rss.*; do
    [ -e "$f" ] && printf '%s\t%s\t0\t%s\n' "$name:${f##*rss.}" "$round" "$(cat "$f")" >> "$RESULTS"
  done
  return 0
}
timed() { echo "$TIME -f %M -o $WORK/rss.$1"; }

A=$WORK/audit.jsonl
GATE="$BIN/sc-gate --quiet"
for round in $(seq 1 "$ROUNDS"); do
  say "round $round of $ROUNDS"
  for size in 100k 1m; do
    rm -f "$A"
    measure "gate-$size" "$round" "$(timed gate) $GATE --audit $A $WORK/$size.jsonl > /dev/null"
    if [ -n "$JQ" ]; then
      measure "jq-$size" "$round" "$(timed jq) $JQ -c '$JQ_RULES' $WORK/$size.jsonl > /dev/null"
    fi
  done
  rm -f "$A"
  measure "gate-1m-key" "$round" "$GATE --audit $A --audit-key $WORK/audit.key $WORK/1m.jsonl > /dev/null"
  rm -f "$A"
  measure "gate-100k-fsync" "$round" "$GATE --audit $A --fsync $WORK/100k.jsonl > /dev/null"
  if [ "$BIG" -gt 0 ]; then
    rm -f "$A"
    measure "gate-big" "$round" "$BIN/examples/gen_calls --seed $SEED --count $BIG | $(timed gate) $GATE --audit $A > /dev/null"
  fi
  rm -f "$A"
  # The whole pipeline on one audit log; sc-approve has no terminal, so holds decline.
  measure "pipeline-1m" "$round" "$(timed gate) $GATE --audit $A $WORK/1m.jsonl \
    | $(timed approve) setsid -w $BIN/sc-approve --quiet --audit $A \
    | $(timed exec) $BIN/sc-exec --quiet --audit $A > /dev/null"
  measure "report" "$round" "$(timed report) $BIN/sc-report $A > /dev/null"
  measure "verify" "$round" "$(timed verify) $BIN/sc-report --verify $A > /dev/null"
done
EVENTS=$(wc -l < "$A")
rm -f "$A"

# sc-report over logs of about 1M and 10M events, as sc-gate alone writes them (one event a call)
# and as the whole pipeline does (about 2.2 events a call): every format and --verify, each log
# written once and read ROUNDS times, then removed.
R=$WORK/report.jsonl
REPORT_SIZES=1000000
[ "$REPORT_BIG" -gt 0 ] && REPORT_SIZES="$REPORT_SIZES $REPORT_BIG"
: > "$WORK/report-logs.tsv"
report_runs() { # KIND EVENTS: read $R
  local kind=$1 size=$2
  printf '%s\t%s\t%s\t%s\n' "$kind" "$size" "$(wc -l < "$R")" "$(wc -c < "$R")" >> "$WORK/report-logs.tsv"
  for round in $(seq 1 "$ROUNDS"); do
    for fmt in text json markdown; do
      measure "r-$kind-$size-$fmt" "$round" "$(timed report) $BIN/sc-report --format $fmt $R > /dev/null"
    done
    measure "r-$kind-$size-verify" "$round" "$(timed verify) $BIN/sc-report --verify $R > /dev/null"
    # The HTML page on the pipeline's 1M-event log: its time beside json's, and its size.
    if [ "$kind-$size" = pipeline-1000000 ]; then
      measure "r-html" "$round" "$(timed report) $BIN/sc-report --format html $R > $WORK/report.html"
      printf '%s\t%s\n' "$(wc -l < "$R")" "$(wc -c < "$WORK/report.html")" > "$WORK/html-page.tsv"
    fi
  done
}
for size in $REPORT_SIZES; do
  rm -f "$R"
  say "sc-report: a log of $size events written by sc-gate alone"
  "$BIN/examples/gen_calls" --seed "$SEED" --count "$size" | $GATE --audit "$R" > /dev/null
  report_runs gate "$size"
  rm -f "$R"
  calls=$(( size * 458 / 1000 ))
  say "sc-report: a log of about $size events written by the pipeline ($calls calls)"
  "$BIN/examples/gen_calls" --seed "$SEED" --count "$calls" | $GATE --audit "$R" \
    | setsid -w "$BIN/sc-approve" --quiet --audit "$R" \
    | "$BIN/sc-exec" --quiet --audit "$R" > /dev/null
  report_runs pipeline "$size"
  rm -f "$R"
done

say "value provenance: a stream of task and result records and the sends after them"
PROVENANCE=$(scripts/bench-provenance.sh "$BIN/sc-gate" 500)

say "latency: paced calls through the three stages"
LATENCY=$("$BIN/examples/pipeline_latency" --bin-dir "$BIN" --calls 2000 --pause-us 1000 --audit "$WORK/latency.jsonl")

# The shared state: one decision's read-decide-write on SQLite and on a Redis on loopback
# (benches/state.rs), and sc-gate --state streaming 1M calls through either store.
STATE_SQLITE=""
STATE_REDIS=""
if [ "${BENCH_STATE:-1}" != 0 ]; then
  say "state: the round trip of one decision, and sc-gate --state"
  STATE_BENCH=$($CARGO bench --locked --bench state --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*state-[^"]*"' | tail -1 | cut -d'"' -f4)
  STATE_SQLITE=$("$STATE_BENCH" --state "$WORK/bench-state.sqlite" --calls 5000)
  for round in $(seq 1 "$ROUNDS"); do
    rm -f "$A" "$WORK"/gate-state.sqlite*
    measure "gate-1m-sqlite" "$round" "$(timed gate) $GATE --audit $A --state $WORK/gate-state.sqlite --crew bench $WORK/1m.jsonl > /dev/null"
  done
  if command -v redis-server >/dev/null; then
    REDIS_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
      --pidfile "$WORK/redis.pid" --dir "$WORK" >/dev/null
    for _ in $(seq 1 500); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.01; done
    REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
    # A Redis store is created once before any door uses it (docs/state.md).
    "$BIN/sc-state" init --state "$REDIS_URL"
    STATE_REDIS=$("$STATE_BENCH" --state "$REDIS_URL" --calls 5000)
    for round in $(seq 1 "$ROUNDS"); do
      rm -f "$A"
      redis-cli -p "$REDIS_PORT" flushall >/dev/null
      "$BIN/sc-state" init --state "$REDIS_URL"
      measure "gate-1m-redis" "$round" "$(timed gate) $GATE --audit $A --state $REDIS_URL --crew bench $WORK/1m.jsonl > /dev/null"
    done
    kill "$(cat "$WORK/redis.pid")"
  else
    say "no redis-server: the Redis figures are skipped (make test-deps installs it)"
  fi
  rm -f "$A"
fi

CRIT_EVAL=""
CRIT_PARSE=""
if [ "${BENCH_CRITERION:-1}" != 0 ]; then
  say "criterion: the decision alone"
  $CARGO bench --locked --bench decision -- --warm-up-time 1 --measurement-time 3 >&2
  median_ns() {
    grep -o '"median":.*' "$TARGET/criterion/decision/$1/new/estimates.json" |
      grep -o '"point_estimate":[0-9.e+-]*' | head -1 | cut -d: -f2
  }
  CRIT_EVAL=$(median_ns evaluate)
  CRIT_PARSE=$(median_ns parse_and_evaluate)
  say "criterion: deciding shell commands (benches/commands.rs)"
  $CARGO bench --locked --bench commands -- --warm-up-time 1 --measurement-time 3 decide_ >&2
fi
# The median of a `commands` case in µs, or empty.
commands_us() {
  local estimates="$TARGET/criterion/commands/$1/new/estimates.json"
  [ -s "$estimates" ] || return 0
  grep -o '"median":.*' "$estimates" | grep -o '"point_estimate":[0-9.e+-]*' | head -1 |
    cut -d: -f2 | awk '{ printf "%.1f", $1 / 1000 }'
}

# ---- the table ----
median() { # median of column $2 (3 = µs, 4 = KiB) for name $1
  awk -F'\t' -v n="$1" -v c="$2" '$1 == n { print $c }' "$RESULTS" | sort -n |
    awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
maxof() { awk -F'\t' -v n="$1" '$1 == n && $4 > m { m = $4 } END { print m + 0 }' "$RESULTS"; }
bytes_of() { wc -c < "$WORK/$1.jsonl"; }
B100K=$(bytes_of 100k)
B1M=$(bytes_of 1m)
BBIG=$(( B1M * BIG / 1000000 ))
rate() { awk -v n="$1" -v us="$2" 'BEGIN { if (us > 0) printf "%.0f", n / (us / 1e6); else print "-" }'; }
mbps() { awk -v b="$1" -v us="$2" 'BEGIN { if (us > 0) printf "%.0f", b / 1e6 / (us / 1e6); else print "-" }'; }
secs() { awk -v us="$1" 'BEGIN { printf "%.3f", us / 1e6 }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
commas() { printf "%'d" "$1" 2>/dev/null || echo "$1"; }
row() { # label calls bytes name [rss]
  local us
  us=$(median "$4" 3)
  [ -n "$us" ] || return 0
  printf '| %s | %s | %s s | %s | %s | %s |\n' "$1" "$(commas "$2")" "$(secs "$us")" \
    "$(commas "$(rate "$2" "$us")")" "$(mbps "$3" "$us")" "${5:-$(mib "$(maxof "$4")")}"
}

GATE_1M=$(median gate-1m 3)
JQ_1M=$(median jq-1m 3)
PIPE_1M=$(median pipeline-1m 3)
REPORT_US=$(median report 3)
GATE_RATE=$(rate 1000000 "$GATE_1M")
PIPE_RATE=$(rate 1000000 "$PIPE_1M")
REPORT_RATE=$(rate "$EVENTS" "$REPORT_US")
RATIO=$([ -n "$JQ_1M" ] && awk -v j="$JQ_1M" -v g="$GATE_1M" 'BEGIN { printf "%.1f", j / g }' || echo "n/a")
STAGE_RSS_MAX=0
for n in gate-100k gate-1m gate-big pipeline-1m:gate pipeline-1m:approve pipeline-1m:exec; do
  r=$(maxof "$n")
  [ "$r" -gt "$STAGE_RSS_MAX" ] && STAGE_RSS_MAX=$r
done
RSS_SPREAD=$(( $(maxof gate-big) > 0 ? $(maxof gate-big) - $(maxof gate-100k) : $(maxof gate-1m) - $(maxof gate-100k) ))
P99=$(sed -E 's/.*p99_us=([0-9]+).*/\1/' <<< "$LATENCY")
MEDIAN_LAT=$(sed -E 's/.*median_us=([0-9]+).*/\1/' <<< "$LATENCY")
verdict() { if [ "$1" = 1 ]; then echo "met"; else echo "**not met**"; fi; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { print (a != "" && a != "-" && a + 0 >= b + 0) ? 1 : 0 }'; }

{
  echo "## Benchmark"
  echo
  echo "Taken $(date -u +%Y-%m-%dT%H:%MZ) at $(git describe --always --dirty 2>/dev/null || echo '?') on $(nproc) cores" \
    "($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), load average at the end" \
    "$(cut -d' ' -f1-3 /proc/loadavg). Medians of $ROUNDS alternating rounds; calls of about" \
    "$(( B1M / 1000000 )) bytes (\`examples/gen_calls.rs\`, seed $SEED: eight tools, three sources); verdicts to" \
    "/dev/null, audit log on $(df -T "$WORK" | awk 'NR == 2 { print $2 }'). Reproduce with \`make bench\`."
  echo
  echo "| what | calls | time | calls/s | MB/s | peak RSS |"
  echo "|---|---:|---:|---:|---:|---:|"
  row "sc-gate, audited" 100000 "$B100K" gate-100k
  row "sc-gate, audited" 1000000 "$B1M" gate-1m
  [ "$BIG" -gt 0 ] && row "sc-gate, audited, streamed from the generator" "$BIG" "$BBIG" gate-big
  row "jq with the same three rules" 100000 "$B100K" jq-100k
  row "jq with the same three rules" 1000000 "$B1M" jq-1m
  row "sc-gate \`--audit-key\` (HMAC chain)" 1000000 "$B1M" gate-1m-key "-"
  row "sc-gate \`--fsync\`" 100000 "$B100K" gate-100k-fsync "-"
  row "sc-gate \`--state\` SQLite \`--crew\`" 1000000 "$B1M" gate-1m-sqlite
  row "sc-gate \`--state\` Redis (loopback) \`--crew\`" 1000000 "$B1M" gate-1m-redis
  row "sc-gate \\| sc-approve \\| sc-exec" 1000000 "$B1M" pipeline-1m \
    "$(mib "$(maxof pipeline-1m:gate)") / $(mib "$(maxof pipeline-1m:approve)") / $(mib "$(maxof pipeline-1m:exec)")"
  printf '| sc-report over the pipeline'"'"'s log | %s events | %s s | %s events/s | | %s |\n' \
    "$(commas "$EVENTS")" "$(secs "$REPORT_US")" "$(commas "$REPORT_RATE")" "$(mib "$(maxof report)")"
  VERIFY_US=$(median verify 3)
  printf '| sc-report --verify | %s events | %s s | %s events/s | | %s |\n' \
    "$(commas "$EVENTS")" "$(secs "$VERIFY_US")" "$(commas "$(rate "$EVENTS" "$VERIFY_US")")" "$(mib "$(maxof verify)")"
  echo
  echo "One call through the three stages, input pausing 1 ms between calls: $LATENCY."
  echo "Value provenance (\`scripts/bench-provenance.sh\`, 500 agents: a task, 8 reads with ~4 KiB results and 8 sends each): $PROVENANCE."
  [ -z "$STATE_SQLITE" ] || echo "One decision's state round trip (read, decide, write; \`benches/state.rs\`): SQLite $STATE_SQLITE; Redis on loopback ${STATE_REDIS:-not measured}."
  if [ -n "$CRIT_EVAL" ]; then
    echo "The decision alone (criterion, \`benches/decision.rs\`): $(printf '%.0f' "$CRIT_EVAL") ns a call;" \
      "parsing the line and deciding: $(printf '%.0f' "$CRIT_PARSE") ns a call."
  fi
  echo
  echo "| goal | measured | |"
  echo "|---|---|---|"
  echo "| sc-gate, audited: ≥ 1,000,000 calls/s | $(commas "$GATE_RATE") calls/s | $(verdict "$(ge "$GATE_RATE" 1000000)") |"
  echo "| sc-gate ≥ 10× jq on the same stream | ${RATIO}× | $(verdict "$(ge "$RATIO" 10)") |"
  echo "| the 3-stage pipeline ≥ 400,000 calls/s | $(commas "$PIPE_RATE") calls/s | $(verdict "$(ge "$PIPE_RATE" 400000)") |"
  echo "| peak RSS of each stage ≤ 16 MiB | at most $(mib "$STAGE_RSS_MAX") | $(verdict "$(ge $((16384 - STAGE_RSS_MAX)) 0)") |"
  echo "| … the same at 100k, 1M and $(commas "$BIG") calls | $(mib "$(maxof gate-100k)"), $(mib "$(maxof gate-1m)"), $(mib "$(maxof gate-big)") | $(verdict "$(ge $((1024 - RSS_SPREAD)) 0)") |"
  echo "| one call through three stages, p99 < 500 µs | p99 ${P99} µs (median ${MEDIAN_LAT} µs) | $(verdict "$(ge $((499 - P99)) 0)") |"
  echo "| sc-report ≥ 1,000,000 events/s | $(commas "$REPORT_RATE") events/s | $(verdict "$(ge "$REPORT_RATE" 1000000)") |"
  for store in sqlite redis; do
    us=$(median "gate-1m-$store" 3)
    if [ -n "$us" ]; then
      echo "| sc-gate \`--state\` ($store) ≥ 20,000 calls/s | $(commas "$(rate 1000000 "$us")") calls/s | $(verdict "$(ge "$(rate 1000000 "$us")" 20000)") |"
    fi
  done
  if [ "${BENCH_CRITERION:-1}" != 0 ]; then
    for case in commit_message:"one 4 KiB command line" chain:"a 4 KiB chain of 63 simple commands" \
      script_of_lines:"the same chain as lines"; do
      us=$(commands_us "decide_4k_${case%%:*}_50_rules")
      paths_us=$(commands_us "decide_4k_${case%%:*}_50_rules_and_paths")
      if [ -n "$us" ]; then echo "| deciding ${case#*:} against 50 rules < 50 µs | ${us} µs (${paths_us:-?} µs with the pack's \`paths\`) | $(verdict "$(ge "$(awk -v u="$us" 'BEGIN { print 50 - u }')" 0)") |"; fi
    done
  fi
  for pair in "SQLite:$STATE_SQLITE" "Redis:$STATE_REDIS"; do
    p99=$(sed -nE 's/.*p99_us=([0-9]+).*/\1/p' <<< "${pair#*:}")
    if [ -n "$p99" ]; then
      echo "| state round trip (${pair%%:*}), p99 < 1 ms | p99 ${p99} µs | $(verdict "$(ge $((999 - p99)) 0)") |"
    fi
  done

  echo
  echo "sc-report over logs written by sc-gate alone (\`gate\`) and by the whole pipeline (\`pipeline\`):"
  echo "time, events a second and peak RSS of each format and of \`--verify\` (medians of $ROUNDS rounds;"
  echo "dist build)."
  echo
  echo "| log | events | MB | text | json | markdown | --verify |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  REPORT_MIN_RATE=""
  VERIFY_MIN_RATE=""
  REPORT_MAX_RSS=0
  REPORT_GROWTH=0
  while IFS=$'\t' read -r kind size events bytes; do
    cells=""
    for what in text json markdown verify; do
      us=$(median "r-$kind-$size-$what" 3)
      r=$(rate "$events" "$us")
      rss=$(maxof "r-$kind-$size-$what")
      cells="$cells | $(secs "$us") s, $(commas "$r")/s, $(mib "$rss")"
      [ "$r" = - ] && r=0
      if [ "$what" = verify ]; then
        { [ -z "$VERIFY_MIN_RATE" ] || [ "$r" -lt "$VERIFY_MIN_RATE" ]; } && VERIFY_MIN_RATE=$r
      else
        { [ -z "$REPORT_MIN_RATE" ] || [ "$r" -lt "$REPORT_MIN_RATE" ]; } && REPORT_MIN_RATE=$r
      fi
      [ "$rss" -gt "$REPORT_MAX_RSS" ] && REPORT_MAX_RSS=$rss
      if [ "$size" != 1000000 ]; then
        grown=$(( rss - $(maxof "r-$kind-1000000-$what") ))
        [ "$grown" -gt "$REPORT_GROWTH" ] && REPORT_GROWTH=$grown
      fi
    done
    echo "| $kind | $(commas "$events") | $(( bytes / 1000000 ))$cells |"
  done < "$WORK/report-logs.tsv"
  HTML_GOALS=""
  if [ -s "$WORK/html-page.tsv" ]; then
    read -r HTML_EVENTS HTML_BYTES < "$WORK/html-page.tsv"
    HTML_US=$(median r-html 3)
    JSON_US=$(median r-pipeline-1000000-json 3)
    HTML_RATIO=$(awk -v h="$HTML_US" -v j="$JSON_US" 'BEGIN { if (j > 0) printf "%.2f", h / j; else print "-" }')
    HTML_MIB=$(awk -v b="$HTML_BYTES" 'BEGIN { printf "%.2f", b / 1048576 }')
    echo
    echo "| html page | events | time | × json | page | peak RSS |"
    echo "|---|---:|---:|---:|---:|---:|"
    echo "| \`--format html\` on the pipeline's log | $(commas "$HTML_EVENTS") | $(secs "$HTML_US") s | ${HTML_RATIO}× | $HTML_MIB MiB | $(mib "$(maxof r-html)") |"
    HTML_GOALS="| the html page on the pipeline's 1M-event log < 4 MiB, in ≤ 1.5× json's time | $HTML_MIB MiB, ${HTML_RATIO}× | $(verdict "$(( $(ge "$((4194303 - HTML_BYTES))" 0) * $(ge 1.5 "$HTML_RATIO") ))") |"
  fi
  echo
  echo "| goal | measured | |"
  echo "|---|---|---|"
  [ -z "$HTML_GOALS" ] || echo "$HTML_GOALS"
  echo "| sc-report ≥ 1,000,000 events/s, every format and log | at least $(commas "${REPORT_MIN_RATE:-0}") events/s | $(verdict "$(ge "${REPORT_MIN_RATE:-0}" 1000000)") |"
  echo "| sc-report --verify ≥ 1,000,000 events/s, every log | at least $(commas "${VERIFY_MIN_RATE:-0}") events/s | $(verdict "$(ge "${VERIFY_MIN_RATE:-0}" 1000000)") |"
  echo "| peak RSS of sc-report ≤ 64 MiB, every format | at most $(mib "$REPORT_MAX_RSS") | $(verdict "$(ge $((65536 - REPORT_MAX_RSS)) 0)") |"
  if [ "$REPORT_BIG" -gt 0 ]; then
    echo "| … growing ≤ 8 MiB from 1M to $(commas "$REPORT_BIG") events | at most $(mib "$REPORT_GROWTH") | $(verdict "$(ge $((8192 - REPORT_GROWTH)) 0)") |"
  fi
} | tee "$REPORT"
say "written to $REPORT"
