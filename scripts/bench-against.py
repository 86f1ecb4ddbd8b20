#!/usr/bin/env python3
"""Two builds measured against each other, in alternating rounds, so that a change's cost shows
on a busy machine: `make bench` gives one build's figures, this gives the ratio of two.

    scripts/bench-against.py BASE_BIN HEAD_BIN [--base-policy FILE] [--head-policy FILE]
                             [--rounds N] [--calls N] [--hook-runs N]

BASE_BIN and HEAD_BIN are folders holding the release (or dist) binaries of each commit and
HEAD_BIN/examples/gen_calls (`cargo build --release --bins --example gen_calls` with a
CARGO_TARGET_DIR per commit). Each figure is the median of its rounds, base and head taking
turns to go first; CPU time (user + system of the whole process tree) is shown beside wall time,
since it moves less with the machine's load. The hook is timed as scripts/bench-hook.sh times
it (an untainted `cargo test --locked`, and the tainted session's confined rewrite) under each
commit's own claude-code pack (`--base-policy`, `--head-policy`).
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(command, **kwargs):
    """(cpu seconds, wall seconds) of a shell command and its children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, shell=True, check=False, **kwargs)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def rounds(n, measures):
    """Runs each (name, side, thunk) n times, the sides alternating; medians by (name, side)."""
    results = {}
    for r in range(n):
        for name, side, thunk in measures if r % 2 == 0 else reversed(measures):
            results.setdefault((name, side), []).append(thunk())
    return results


def show(results, names):
    print("| what | base cpu | head cpu | cpu ratio | base wall | head wall | wall ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in names:
        base, head = results[(name, "base")], results[(name, "head")]
        bc = statistics.median(x[0] for x in base)
        hc = statistics.median(x[0] for x in head)
        bw = statistics.median(x[1] for x in base)
        hw = statistics.median(x[1] for x in head)
        print(f"| {name} | {bc:.4f} s | {hc:.4f} s | {hc / bc:.3f} | {bw:.4f} s | {hw:.4f} s | {hw / bw:.3f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base")
    parser.add_argument("head")
    parser.add_argument("--base-policy", default="policies/claude-code.json")
    parser.add_argument("--head-policy", default="policies/claude-code.json")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=1000000)
    parser.add_argument("--hook-runs", type=int, default=40)
    args = parser.parse_args()
    bins = {"base": args.base, "head": args.head}
    work = tempfile.mkdtemp(prefix="sc-bench-against.")
    try:
        calls = os.path.join(work, "calls.jsonl")
        with open(calls, "wb") as out:
            subprocess.run([os.path.join(args.head, "examples", "gen_calls"), "--seed", "1",
                            "--count", str(args.calls)], stdout=out, check=True)

        def stream(side, what):
            b = bins[side]
            folder = tempfile.mkdtemp(dir=work)
            commands = {
                "sc-gate, audited": f"{b}/sc-gate --quiet --audit {folder}/a.jsonl < {calls} > /dev/null",
                "sc-gate --state SQLite --crew": f"{b}/sc-gate --quiet --audit {folder}/a.jsonl --state {folder}/s.sqlite --crew c < {calls} > /dev/null",
                "sc-gate \\| sc-approve \\| sc-exec": f"{b}/sc-gate --quiet --audit {folder}/a.jsonl < {calls} | setsid {b}/sc-approve --quiet --audit {folder}/a.jsonl 2>/dev/null | {b}/sc-exec --quiet --audit {folder}/a.jsonl > /dev/null 2>&1",
            }

            def thunk():
                result = timed(commands[what])
                shutil.rmtree(folder, ignore_errors=True)
                os.makedirs(folder)
                return result
            return thunk

        names = ["sc-gate, audited", "sc-gate --state SQLite --crew", "sc-gate \\| sc-approve \\| sc-exec"]
        measures = [(name, side, stream(side, name)) for name in names for side in ("base", "head")]
        print(f"{args.calls} calls, {args.rounds} alternating rounds")
        show(rounds(args.rounds, measures), names)

        # The hook, as bench-hook.sh runs it, and the sandbox's start.
        policies = {"base": os.path.abspath(args.base_policy), "head": os.path.abspath(args.head_policy)}

        def hook(side, session):
            folder = os.path.join(work, f"hook-{side}")
            os.makedirs(os.path.join(folder, "proj"), exist_ok=True)
            os.makedirs(os.path.join(folder, "home"), exist_ok=True)
            env = dict(os.environ, HOME=os.path.join(folder, "home"))
            command = [f"{bins[side]}/sc-hook", "--policy", policies[side], "--home",
                       env["HOME"], "--audit", os.path.join(folder, f"{session}.jsonl")]

            def event(name, tool, tool_input, extra=None):
                line = {"session_id": session, "transcript_path": "/dev/null",
                        "cwd": os.path.join(folder, "proj"), "permission_mode": "default",
                        "hook_event_name": name, "tool_name": tool, "tool_input": tool_input,
                        "tool_use_id": "toolu_bench"}
                line.update(extra or {})
                return json.dumps(line).encode()
            if session == "tainted":
                fetch = {"url": "https://example.com/"}
                subprocess.run(command, input=event("PreToolUse", "WebFetch", fetch), env=env, capture_output=True)
                subprocess.run(command, input=event("PostToolUse", "WebFetch", fetch, {"tool_response": {"result": "page"}}), env=env, capture_output=True)
            call = event("PreToolUse", "Bash", {"command": "cargo test --locked", "description": "tests"})

            def thunk():
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                answer = subprocess.run(command, input=call, env=env, capture_output=True)
                wall = time.perf_counter() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                rewritten = b"updatedInput" in answer.stdout
                if answer.returncode != 0 or rewritten != (session == "tainted"):
                    sys.exit(f"bench-against: the {side} hook did not answer as expected: {answer.stdout!r} {answer.stderr!r}")
                return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall)
            return thunk

        root = tempfile.mkdtemp(dir=work)

        def sandbox(side):
            return lambda: timed(f"{bins[side]}/sc-sandbox --root {root} -- /bin/true > /dev/null")
        hook_names = ["sc-hook, untainted", "sc-hook, tainted (confined rewrite)", "sc-sandbox -- /bin/true"]
        measures = []
        for side in ("base", "head"):
            measures.append((hook_names[0], side, hook(side, "plain")))
            measures.append((hook_names[1], side, hook(side, "tainted")))
            measures.append((hook_names[2], side, sandbox(side)))
        measures.sort(key=lambda m: hook_names.index(m[0]))
        print(f"\n{args.hook_runs} alternating runs")
        show(rounds(args.hook_runs, measures), hook_names)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
