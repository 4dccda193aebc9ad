"""Instructions per op of bench_overhead.py's chain, counted by callgrind: exact where
the clock is not.

On a shared VM the clock moves by 10–30% from one minute to the next, so a change of a
few percent in the engine's cost per op cannot be seen in a time. Valgrind's callgrind
counts the instructions the CPU executes instead, and gives the same count on every run:
the 64-op chain of ``bench_overhead.py`` (forward and backward, (8, 8) float32) runs
``STEPS`` times after ``WARM_UP`` steps, with callgrind's instrumentation switched on
only around the steps (``--instr-atstart=no``, then ``callgrind_control -i on``) and its
count kept to what runs inside them (``--toggle-collect=functools_reduce``: the steps
are run by ``functools.reduce``). ``PYTHONHASHSEED=0`` fixes the order of sets and dicts.

Compare two checkouts by running the script in each (it counts the checkout it is in)::

    python bench/instructions.py                  # this checkout
    (cd /tmp/before && python bench/instructions.py)

Prints one JSON line: instructions per op. Needs valgrind (Debian's ``valgrind``
package); without it, the line says so. About 15 s; numpy and the workbench load with
instrumentation off.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS, WARM_UP = 20, 5

# The process callgrind runs: bench_overhead.py's chain, without torch (importing it under
# valgrind takes minutes: _common.py carries on without it). It says when it is ready and
# waits to be told to go.
CHILD = """
import functools, os, sys, time
sys.modules["torch"] = None  # (import torch fails: _common.py's torch is None)
sys.path.insert(0, os.path.join(os.environ["PYTHONPATH"], "bench"))
from bench_overhead import OPS, SHAPE, chain
import numpy as np
import workbench as wb

steps, warm_up, folder = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = np.random.default_rng(0)
x, w, b = (
    wb.tensor(rng.standard_normal(SHAPE).astype(np.float32) * 0.5, requires_grad=True)
    for _ in range(3)
)

def step(_, __):
    x.grad = w.grad = b.grad = None
    chain(x, w, b, wb.tanh, wb.sigmoid).sum().backward()

for _ in range(warm_up):
    step(None, None)
with open(os.path.join(folder, "ready"), "w") as ready:
    ready.write(str(OPS))  # the chain's ops per step, for the parent's division
while not os.path.exists(os.path.join(folder, "go")):
    time.sleep(0.05)
functools.reduce(step, range(steps), None)
"""


def count(folder: str) -> tuple[int, int]:
    """The instructions executed inside the steps, by one run under callgrind, and the
    chain's ops per step."""
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(ROOT)}
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--toggle-collect=functools_reduce",
        f"--callgrind-out-file={folder}/callgrind.out",
        sys.executable,
        "-c",
        CHILD,
        str(STEPS),
        str(WARM_UP),
        folder,
    ]
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(Path(folder) / "ready", child)
        subprocess.run(["callgrind_control", "-i", "on", str(child.pid)], capture_output=True)
        (Path(folder) / "go").touch()
        _, err = child.communicate(timeout=600)
    finally:
        child.kill()
    collected = re.search(r"Collected : (\d+)", err.decode())
    if child.returncode != 0 or collected is None:
        raise RuntimeError(f"callgrind failed:\n{err.decode()[-2000:]}")
    return int(collected.group(1)), int((Path(folder) / "ready").read_text())


def wait_for(path: Path, child: subprocess.Popen, limit_s: float = 600) -> None:
    start = time.monotonic()
    while not path.exists():
        if child.poll() is not None or time.monotonic() - start > limit_s:
            raise RuntimeError(f"the chain under callgrind did not start:\n{child.stderr.read()}")
        time.sleep(0.2)


def main() -> None:
    record = {"bench": "instructions", "chain": "bench_overhead.py's, 64 ops on (8, 8)"}
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        record["skipped"] = "valgrind is not installed (Debian: apt-get install valgrind)"
    else:
        with tempfile.TemporaryDirectory() as folder:
            instructions, ops = count(folder)
        record["instructions_per_op"] = instructions // (STEPS * ops)
        record["steps"] = STEPS
    print(json.dumps(record))


if __name__ == "__main__":
    main()
