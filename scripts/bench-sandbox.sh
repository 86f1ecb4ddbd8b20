#!/usr/bin/env bash
# What the sandbox adds to a command's start: the median wall time of N runs of
# `sc-sandbox -- /bin/true` against N runs of `/bin/true` (issue 34's goal: at most 10 ms more),
# and what bubblewrap alone adds. The runs alternate, so that a noisy machine slows all alike.
#
# Environment:
#   BENCH_SANDBOX_RUNS=N  runs of each (default 41)
#   SC_SANDBOX=PATH       the binary (default: the release build, what `cargo install` builds,
#                         built now when missing)
# Prints one line: `sandbox start (PROFILE, median of N): X ms (sc-sandbox -- /bin/true) vs Y ms
# (/bin/true): +Z ms; bubblewrap alone +W ms; goal …`.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
TARGET=${CARGO_TARGET_DIR:-target}
RUNS=${BENCH_SANDBOX_RUNS:-41}

say() { echo "bench-sandbox: $*" >&2; }

if [ -n "${SC_SANDBOX:-}" ]; then
  SANDBOX=$SC_SANDBOX
else
  if [ ! -x "$TARGET/release/sc-sandbox" ]; then
    say "building sc-sandbox (release)"
    $CARGO build --release --locked --bins >&2
  fi
  SANDBOX=$TARGET/release/sc-sandbox
fi
command -v bwrap >/dev/null || { say "needs bubblewrap (bwrap); make test-deps installs it"; exit 2; }

# The root is a folder of its own, so that the run protects and blocks nothing of this checkout.
ROOT=$(mktemp -d "${TMPDIR:-/tmp}/sc-bench-sandbox.XXXXXX")
BIN=$(mktemp -d "${TMPDIR:-/tmp}/sc-bench-sandbox-bin.XXXXXX")
trap 'rm -rf "$ROOT" "$BIN"' EXIT
PROFILE=$(basename "$(dirname "$SANDBOX")")
# The programs as `cargo install` leaves them, copied into a folder of their own
# (scripts/bench-hook.sh says why).
for name in sc-gate sc-approve sc-exec sc-report sc-mcp sc-hook sc-state sc-sandbox sc-inbox; do
  cp "$(dirname "$SANDBOX")/$name" "$BIN/$name"
done
SANDBOX=$BIN/sc-sandbox

"$SANDBOX" --root "$ROOT" -- /bin/true || { say "$SANDBOX cannot run a sandbox here"; exit 2; }
# bubblewrap alone with the namespaces sc-sandbox asks for: what the kernel and bwrap cost.
BWRAP=(bwrap --unshare-user --unshare-pid --as-pid-1 --unshare-net --unshare-ipc --unshare-uts
  --unshare-cgroup-try --die-with-parent --new-session --cap-drop ALL --ro-bind / / --dev /dev
  --proc /proc --tmpfs /tmp -- /bin/true)
times=$(python3 scripts/spawn-times.py "$RUNS" \
  "true=" -- /bin/true ";;" \
  "bwrap=" -- "$(command -v bwrap)" "${BWRAP[@]:1}" ";;" \
  "sandbox=" -- "$SANDBOX" --root "$ROOT" -- /bin/true)
us() { awk -v name="$1" '$1 == name { print $2 }' <<<"$times"; }
true_us=$(us true) bwrap_us=$(us bwrap) sandbox_us=$(us sandbox)
ms() { awk -v us="$1" 'BEGIN { printf "%.1f ms", us / 1000 }'; }
added=$((sandbox_us - true_us))
say "$RUNS rounds, alternating; the goal is at most +10 ms"
echo "sandbox start ($PROFILE, median of $RUNS): $(ms "$sandbox_us") (sc-sandbox -- /bin/true) vs $(ms "$true_us") (/bin/true): +$(ms "$added"); bubblewrap alone +$(ms $((bwrap_us - true_us))); goal ≤ +10 ms: $([ "$added" -le 10000 ] && echo met || echo NOT met)"
