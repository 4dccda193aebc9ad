"""Run every benchmark in bench/ one after another and print their JSON lines.

The issue-7 benchmarks (MLP, per-op overhead, deep chain, scalar MLP, GPU) run
first, then any other ``bench_*.py`` found here (conv, events...).

Each benchmark runs in its own process (so one's memory and threads cannot
disturb the next) with the same Python. ``--out FILE`` also writes the lines to
FILE. Usage::

    python bench/run_all.py
    python bench/run_all.py --out bench/results.jsonl

Every benchmark runs the default configuration, what a user runs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIRST = [
    "bench_mlp.py",
    "bench_overhead.py",
    "bench_chain.py",
    "bench_scalar_mlp.py",
    "bench_gpu.py",
    "reading_path.py",  # not a timing: the code one small backward runs
]


def benchmarks() -> list[str]:
    others = sorted(p.name for p in HERE.glob("bench_*.py") if p.name not in FIRST)
    return [name for name in FIRST if (HERE / name).exists()] + others


def run(script: str) -> str:
    """The JSON line a benchmark printed (an error record if it failed)."""
    done = subprocess.run(
        [sys.executable, str(HERE / script)], capture_output=True, text=True, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        error = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return json.dumps({"bench": script, "error": error, "returncode": done.returncode})
    return lines[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the JSON lines to this file")
    args = parser.parse_args()
    lines = []
    for script in benchmarks():
        line = run(script)
        print(line, flush=True)
        lines.append(line)
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
