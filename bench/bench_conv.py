"""Time conv2d and 2-D pooling, forward + backward, against PyTorch on one CPU thread.

Run: ``.venv/bin/python bench/bench_conv.py``. Prints one JSON line: for each case the
best time in milliseconds of ours and of torch, and the ratio ours / torch.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Benchmark the checkout this file lives in, whatever workbench is installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# One thread each: numpy's BLAS and torch's intra-op pool. Set before numpy loads BLAS.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import json  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.nn import functional as F  # noqa: E402

try:
    import torch  # noqa: E402
    import torch.nn.functional as TF  # noqa: E402
except ImportError:  # the bench still reports our own times
    torch = TF = None

ROUNDS = 7  # ours and torch take turns, ROUNDS times; each turn times NUMBER calls
NUMBER = 3


def mean_ms(step: Callable[[], None]) -> float:
    start = time.perf_counter()
    for _ in range(NUMBER):
        step()
    return 1000 * (time.perf_counter() - start) / NUMBER


def best_of_turns(steps: dict) -> dict:
    """The best turn of each contender. Taking turns (after a warm-up of each) gives both
    the same machine state: memory allocators and other load affect them alike."""
    for step in steps.values():
        step()
    best = {name: float("inf") for name in steps}
    for _ in range(ROUNDS):
        for name, step in steps.items():
            best[name] = min(best[name], mean_ms(step))
    return best


def ours_step(forward, *arrays):
    def step():
        leaves = [wb.tensor(a, requires_grad=True) for a in arrays]
        out = forward(*leaves)
        out.backward(wb.ones_like(out))

    return step


def torch_step(forward, *arrays):
    def step():
        leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
        out = forward(*leaves)
        out.backward(torch.ones_like(out))

    return step


def main() -> None:
    rng = np.random.default_rng(0)
    images = rng.standard_normal((32, 3, 32, 32)).astype(np.float32)
    filters = rng.standard_normal((16, 3, 3, 3)).astype(np.float32)
    features = rng.standard_normal((32, 16, 32, 32)).astype(np.float32)
    cases = {
        "conv2d_32x3x32x32_16x3x3_pad1": (
            lambda x, w: F.conv2d(x, w, padding=1),
            lambda x, w: TF.conv2d(x, w, padding=1),
            (images, filters),
        ),
        "max_pool2d_32x16x32x32_k2s2": (
            lambda x: F.max_pool2d(x, 2),
            lambda x: TF.max_pool2d(x, 2),
            (features,),
        ),
        "max_pool2d_32x16x32x32_k3s2p1": (
            lambda x: F.max_pool2d(x, 3, 2, 1),
            lambda x: TF.max_pool2d(x, 3, 2, 1),
            (features,),
        ),
        "avg_pool2d_32x16x32x32_k2s2": (
            lambda x: F.avg_pool2d(x, 2),
            lambda x: TF.avg_pool2d(x, 2),
            (features,),
        ),
    }
    if torch is not None:
        torch.set_num_threads(1)
    report = {"unit": "ms, forward+backward, best of turns", "threads": 1}
    for name, (ours, theirs, arrays) in cases.items():
        steps = {"ours": ours_step(ours, *arrays)}
        if torch is not None:
            steps["torch"] = torch_step(theirs, *arrays)
        entry = {k: round(v, 3) for k, v in best_of_turns(steps).items()}
        if torch is not None:
            entry["ratio"] = round(entry["ours"] / entry["torch"], 2)
        report[name] = entry
    print(json.dumps(report))


if __name__ == "__main__":
    main()
