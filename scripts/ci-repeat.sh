#!/usr/bin/env bash
# Runs .ci/run N times (default 10) on a fresh clone of this checkout's HEAD, as CI does: CI=true,
# no terminal, no stdin. A line per run goes to stdout; each run's output to DIR/run-N.log.
#   scripts/ci-repeat.sh [N] [DIR]
set -uo pipefail
N=${1:-10}
DIR=${2:-$(mktemp -d)}
SRC=$(cd "$(dirname "$0")/.." && pwd)
CLONE=$DIR/clone
rm -rf "$CLONE" && git clone -q "$SRC" "$CLONE" || exit 1
echo "at $(git -C "$CLONE" log --oneline -1), logs in $DIR"
failed=0
for i in $(seq "$N"); do
  start=$(date +%s)
  if (cd "$CLONE" && CI=true setsid -w bash .ci/run < /dev/null > "$DIR/run-$i.log" 2>&1); then
    result=ok
  else
    result=FAIL; failed=$((failed + 1))
  fi
  echo "run $i: $result, $(( $(date +%s) - start )) s"
done
exit $(( failed > 0 ))
