#!/usr/bin/env bash
# The start-up, size and install figures of `make bench` (issue 34), in one run: the commit, the
# load average and the profile of each figure, then sc-hook's call against a spawn of /bin/true
# (scripts/bench-hook.sh), what sc-sandbox adds to a command's start (scripts/bench-sandbox.sh),
# sc-gate against the equal-work floor (../shared/bench/compare.py, when it is there), what
# sc-mcp --listen adds (scripts/bench-mcp-http.sh), the nine files of target/release/, and a
# fresh clone's install and `make dist` (scripts/bench-install.sh). Prints markdown.
#
# Environment:
#   BENCH_INSTALL=0   skip the fresh-clone install and `make dist` (several minutes)
#   BENCH_COMPARE=0   skip the equal-work comparison (builds the dist profile)
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
TARGET=${CARGO_TARGET_DIR:-target}
say() { echo "bench-goals: $*" >&2; }

say "building the nine names with the release profile (what cargo install builds)"
$CARGO build --release --locked --bins >&2

commit=$(git rev-parse --short HEAD)
dirty=$(git diff --quiet HEAD -- 2>/dev/null && echo "" || echo " (with uncommitted changes)")
echo "## Start-up, size and install (issue 34)"
echo
echo "Commit $commit$dirty, $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')),"
echo "load average at the start $(cut -d' ' -f1-3 /proc/loadavg). sc-hook and sc-sandbox: the \`release\`"
echo "profile (what \`cargo install\` builds); sc-gate: the \`dist\` profile (compare.py's choice)."
echo
echo "| figure | measured | goal |"
echo "|---|---|---|"
SC_HOOK=$TARGET/release/sc-hook CARGO="$CARGO" scripts/bench-hook.sh
echo "| $(SC_SANDBOX=$TARGET/release/sc-sandbox CARGO="$CARGO" scripts/bench-sandbox.sh | sed 's/: /| /; s/; goal/ | goal/') |"
if [ "${BENCH_COMPARE:-1}" != 0 ] && [ -f ../shared/bench/compare.py ]; then
  say "sc-gate against the equal-work floor (python3 ../shared/bench/compare.py . 1000000)"
  # compare.py builds and reads target/dist itself: CARGO_TARGET_DIR would send its build elsewhere.
  line=$(env -u CARGO_TARGET_DIR python3 ../shared/bench/compare.py . 1000000 || true)
  echo "| \`compare.py . 1000000\` (dist) | ${line#bench: } | ≥ 5× the floor, peak unchanged |"
fi
bytes=$(du -cb "$TARGET"/release/sc-{gate,approve,exec,report,mcp,hook,state,sandbox,inbox} | tail -1 | cut -f1)
echo "| the nine files of target/release/ | $(awk -v b="$bytes" 'BEGIN { printf "%.1f MiB", b / 1048576 }') | ≤ 40 MB: $([ "$bytes" -le 40000000 ] && echo met || echo NOT met) |"
CARGO="$CARGO" scripts/bench-mcp-http.sh
if [ "${BENCH_INSTALL:-1}" != 0 ]; then
  CARGO="$CARGO" scripts/bench-install.sh
fi
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
