#!/usr/bin/env bash
# What the sandbox adds to a command's start: the median wall time of N runs of
# `sc-sandbox -- /bin/true` against N runs of `/bin/true` (issue 24's goal: at most 15 ms more).
# The runs alternate between the two, so that a noisy machine slows both alike.
#
# Environment:
#   BENCH_SANDBOX_RUNS=N  runs of each (default 101)
#   SC_SANDBOX=PATH       the binary (default: the dist build, else the release build, else one
#                         built now with the release profile)
# Prints one line: `sandbox start: median X ms (sc-sandbox -- /bin/true) vs Y ms (/bin/true): +Z ms`.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
TARGET=${CARGO_TARGET_DIR:-target}
RUNS=${BENCH_SANDBOX_RUNS:-101}

say() { echo "bench-sandbox: $*" >&2; }

if [ -n "${SC_SANDBOX:-}" ]; then
  SANDBOX=$SC_SANDBOX
elif [ -x "$TARGET/dist/sc-sandbox" ]; then
  SANDBOX=$TARGET/dist/sc-sandbox
else
  if [ ! -x "$TARGET/release/sc-sandbox" ]; then
    say "building sc-sandbox (release)"
    $CARGO build --release --locked --bin sc-sandbox --bin sc-hook >&2
  fi
  SANDBOX=$TARGET/release/sc-sandbox
fi
command -v bwrap >/dev/null || { say "needs bubblewrap (bwrap); make test-deps installs it"; exit 2; }

# The root is a folder of its own, so that the run protects and blocks nothing of this checkout.
ROOT=$(mktemp -d "${TMPDIR:-/tmp}/sc-bench-sandbox.XXXXXX")
trap 'rm -rf "$ROOT"' EXIT

# Microseconds one run of "$@" takes.
micros() {
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null
  end=$(date +%s%N)
  echo $(((end - start) / 1000))
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

"$SANDBOX" --root "$ROOT" -- /bin/true || { say "$SANDBOX cannot run a sandbox here"; exit 2; }
plain=() confined=()
for _ in $(seq "$RUNS"); do
  plain+=("$(micros /bin/true)")
  confined+=("$(micros "$SANDBOX" --root "$ROOT" -- /bin/true)")
done
plain_median=$(printf '%s\n' "${plain[@]}" | median)
confined_median=$(printf '%s\n' "${confined[@]}" | median)

ms() { awk -v us="$1" 'BEGIN { printf "%.1f ms", us / 1000 }'; }
say "$RUNS runs of each, alternating; the goal is at most +15 ms"
echo "sandbox start: median $(ms "$confined_median") (sc-sandbox -- /bin/true) vs $(ms "$plain_median") (/bin/true): +$(ms $((confined_median - plain_median)))"
