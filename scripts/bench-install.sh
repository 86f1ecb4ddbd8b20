#!/usr/bin/env bash
# How long a newcomer waits and how much lands on disk (issue 34): a fresh clone of this commit,
# `cargo install --locked --path .` into a folder of its own (the crate cache as it is: warm when
# the crates were fetched before), the size of everything it installed, then `make dist` in the
# same clone. Prints markdown table rows.
#
# Environment:
#   BENCH_INSTALL_DIST=0  skip `make dist`
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
say() { echo "bench-install: $*" >&2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sc-bench-install.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
git clone --quiet --no-hardlinks . "$WORK/clone"
# Uncommitted changes are not in a clone: what is timed is the commit.
git -C "$WORK/clone" checkout --quiet "$(git rev-parse HEAD)"

secs() { awk -v ns="$1" 'BEGIN { s = ns / 1e9; printf "%d min %02d s", s / 60, s % 60 }'; }
verdict() { awk -v v="$1" -v goal="$2" 'BEGIN { print (v <= goal) ? "met" : "NOT met" }'; }

say "cargo install --locked --path . (a fresh clone; CARGO_TARGET_DIR unset, as a user has it)"
start=$(date +%s%N)
(cd "$WORK/clone" && env -u CARGO_TARGET_DIR "$CARGO" install --quiet --locked --path . --root "$WORK/root") >&2
took=$(($(date +%s%N) - start))
bytes=$(du -cb "$WORK"/root/bin/* | tail -1 | cut -f1)
count=$(find "$WORK/root/bin" -type f | wc -l)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
echo "| \`cargo install --locked --path .\`, fresh clone | $(secs "$took") | goal ≤ 3 min: $(verdict $((took / 1000000000)) 180) |"
echo "| what it installs ($count files) | $mib MiB | goal ≤ 40 MB: $(verdict "$bytes" 40000000) |"

if [ "${BENCH_INSTALL_DIST:-1}" != 0 ]; then
  say "make dist in the same clone"
  start=$(date +%s%N)
  (cd "$WORK/clone" && env -u CARGO_TARGET_DIR make --quiet dist CARGO="$CARGO") >&2
  took=$(($(date +%s%N) - start))
  echo "| \`make dist\` (fat LTO, man pages, completions), same clone | $(secs "$took") | goal ≤ 6 min: $(verdict $((took / 1000000000)) 360) |"
fi
