"""Compare checkouts: run the same benchmark in each, alternately, and print the medians.

This VM's speed drifts by 10% and more over minutes, so a before/after comparison runs
both sides in turns (round 1: A, B; round 2: B, A; ...), each in a fresh process pinned
to one core, and compares the medians of figures measured in the same rounds. Every
number in the benchmark's JSON line is collected (nested keys joined with dots)::

    git worktree add /tmp/before 2e7b7f8
    python bench/alternate.py --rounds 3 before=/tmp/before after=. -- run_all.py
    python bench/alternate.py --rounds 8 before=/tmp/before after=. -- bench_overhead.py

A checkout named ``NAME=PATH:ARG`` passes ``ARG`` to the script (``--formula-rules`` for
a checkout whose ``run_all.py`` defaulted to a non-default configuration).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys


def numbers(record, prefix: str = "") -> dict:
    """Every number in a JSON record, by its dotted key (lists by index)."""
    found = {}
    items = record.items() if isinstance(record, dict) else enumerate(record)
    for key, value in items:
        name = f"{prefix}{key}"
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            found[name] = value
        elif isinstance(value, (dict, list)):
            found.update(numbers(value, name + "."))
    return found


def run(path: str, script: str, extra: list) -> list:
    """The JSON records the script printed, run in ``path`` on one core."""
    done = subprocess.run(
        ["taskset", "-c", "1", sys.executable, f"bench/{script}", *extra],
        cwd=path,
        capture_output=True,
        text=True,
        check=False,
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("checkouts", nargs="+", help="NAME=PATH[:ARG] ...")
    parser.add_argument("script", help="a script in bench/, after --")
    args = parser.parse_args()
    sides = []
    for spec in args.checkouts:
        name, _, rest = spec.partition("=")
        path, _, extra = rest.partition(":")
        sides.append((name, path, [extra] if extra else []))
    figures: dict = {}
    for turn in range(args.rounds):
        for name, path, extra in sides if turn % 2 == 0 else sides[::-1]:
            for record in run(path, args.script, extra):
                bench = record.get("bench", "?")
                for key, value in numbers(record).items():
                    figures.setdefault(f"{bench}.{key}", {}).setdefault(name, []).append(value)
            print(f"round {turn + 1}: {name} done", file=sys.stderr, flush=True)
    for key, per_side in figures.items():
        medians = "  ".join(f"{n}={statistics.median(v):.4g}" for n, v in per_side.items())
        print(f"{key}: {medians}")


if __name__ == "__main__":
    main()
