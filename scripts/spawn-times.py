#!/usr/bin/env python3
"""Wall times of process starts, alternating, for the start-up figures of `make bench`.

Each case is a program with its arguments, its standard input read from a file (or /dev/null)
and its output thrown away; the cases run one after another in rounds, so that a noisy machine
slows them alike. A run is spawned with posix_spawn (no shell, no fork of this interpreter) and
timed from the spawn to the end of its wait, so what is timed is the program's own start and
work, as an agent that spawns a hook meets it.

Usage: spawn-times.py ROUNDS NAME=INPUT_FILE -- PROGRAM ARGS... ;; NAME=INPUT_FILE -- PROGRAM ...
Prints one line per case: NAME MEDIAN_MICROSECONDS. A run that fails (a non-zero status) stops
the script with exit status 1."""
import os
import statistics
import sys
import time


def parse(argv):
    cases, current = [], []
    for arg in argv + [";;"]:
        if arg == ";;":
            if current:
                head, sep, rest = current[0], current[1], current[2:]
                name, _, stdin = head.partition("=")
                if sep != "--" or not rest:
                    sys.exit("spawn-times: each case is NAME=INPUT -- PROGRAM ARGS...")
                cases.append((name, stdin or "/dev/null", rest))
            current = []
        else:
            current.append(arg)
    return cases


def run(stdin, argv):
    fd = os.open(stdin, os.O_RDONLY)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        actions = [
            (os.POSIX_SPAWN_DUP2, fd, 0),
            (os.POSIX_SPAWN_DUP2, null, 1),
        ]
        start = time.perf_counter_ns()
        pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
        _, status = os.waitpid(pid, 0)
        took = time.perf_counter_ns() - start
    finally:
        os.close(fd)
        os.close(null)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"spawn-times: {' '.join(argv)} ended with status {status}")
    return took // 1000


def main():
    rounds = int(sys.argv[1])
    cases = parse(sys.argv[2:])
    times = {name: [] for name, _, _ in cases}
    for _ in range(rounds):
        for name, stdin, argv in cases:
            times[name].append(run(stdin, argv))
    for name, _, _ in cases:
        print(name, int(statistics.median(times[name])))


main()
