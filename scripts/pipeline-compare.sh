#!/usr/bin/env bash
# Alternating runs of the three-stage pipeline (sc-approve has no terminal, so holds decline) over
# the same generated calls, with two builds' binaries, to compare them on one machine:
#   scripts/pipeline-compare.sh OLD_BIN_DIR NEW_BIN_DIR [CALLS] [ROUNDS]
# Each BIN_DIR holds sc-gate, sc-approve, sc-exec (and NEW_BIN_DIR examples/gen_calls), built with
# the same profile. Prints the seconds of each run.
set -euo pipefail
OLD=$1 NEW=$2 CALLS=${3:-1000000} ROUNDS=${4:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$NEW/examples/gen_calls" --seed 7 --count "$CALLS" > "$WORK/calls.jsonl"
run() {
  local bin=$1 tag=$2
  local audit=$WORK/audit-$tag.jsonl
  rm -f "$audit"
  local start end
  start=$(date +%s.%N)
  "$bin/sc-gate" --quiet --audit "$audit" "$WORK/calls.jsonl" \
    | setsid -w "$bin/sc-approve" --quiet --audit "$audit" \
    | "$bin/sc-exec" --quiet --audit "$audit" > /dev/null
  end=$(date +%s.%N)
  echo "$tag $(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }') s"
}
for _ in $(seq "$ROUNDS"); do run "$OLD" old; run "$NEW" new; done
