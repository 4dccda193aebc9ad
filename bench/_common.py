"""Shared set-up for the benchmarks: one thread everywhere, interleaved best-of timing.

Import this module first: it pins OpenBLAS/MKL/OpenMP to one thread *before* numpy
loads (the variables are read only at load time), so workbench, plain numpy and
torch all run on one core and the comparison is fair.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_name] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

import numpy as np  # noqa: E402

try:
    import torch  # noqa: E402

    torch.set_num_threads(1)
except ImportError:  # the benchmarks still time workbench and numpy without torch
    torch = None


def best_per_call(contenders: dict[str, Callable[[], object]], number: int, rounds: int) -> dict:
    """Seconds per call of each contender: the best of ``rounds`` rounds of ``number`` calls.

    The contenders take turns inside every round, so a burst of load from other
    processes slows all of them alike instead of one; the minimum over rounds is
    the least disturbed measurement.
    """
    for fn in contenders.values():  # warm up: caches, allocator, lazy imports
        fn()
    best = {name: float("inf") for name in contenders}
    for _ in range(rounds):
        for name, fn in contenders.items():
            start = time.perf_counter()
            for _ in range(number):
                fn()
            best[name] = min(best[name], (time.perf_counter() - start) / number)
    return best


def machine() -> dict:
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": None if torch is None else torch.__version__.split("+")[0],
        "cpu": platform.machine(),
        "cores": os.cpu_count(),
        "threads": 1,
        "configuration": "default",  # what a user runs: no switch changes the engine
    }


def emit(record: dict) -> None:
    """Print the benchmark's one JSON line."""
    print(json.dumps(record, sort_keys=False))


def ms(seconds: float) -> float:
    return round(seconds * 1e3, 4)


def us(seconds: float) -> float:
    return round(seconds * 1e6, 3)
