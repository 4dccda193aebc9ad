"""Deep chains: backward through 10,000 and 100,000 nodes, and how the time scales.

The engine never recurses and schedules nodes by counting dependencies, so
backward time should grow linearly with the number of nodes: 10× the nodes,
about 10× the time (target: ratio ≤ 11×, forward and backward). The chain is ``y = y * 0.9999`` on a
(4,) float64 tensor: nearly free arithmetic, so this measures the engine.

Prints one JSON line: forward and backward seconds for each length, the ratio,
and PyTorch's times for the same chains.
"""

from __future__ import annotations

import gc
import time

import _common
from _common import emit, machine, np, torch

import workbench as wb

LENGTHS = (10_000, 100_000)
REPEATS = {10_000: 9, 100_000: 5}  # the best of several runs: this VM is noisy


def build(leaf, length: int):
    y = leaf
    for _ in range(length):
        y = y * 0.9999
    return y.sum()


def time_chains(make_leaf) -> dict:
    """Best forward and best backward seconds per length, over a few fresh chains.

    The lengths take turns (short, long, short, long...), so a burst of load from
    other processes slows both alike rather than one of them.
    """
    best = {n: [float("inf"), float("inf")] for n in LENGTHS}
    for turn in range(max(REPEATS.values())):
        for length in LENGTHS:
            if turn < REPEATS[length]:
                forward, backward = time_chain(make_leaf, length)
                best[length] = [min(best[length][0], forward), min(best[length][1], backward)]
    return best


def time_chain(make_leaf, length: int) -> tuple[float, float]:
    """Forward and backward seconds of one fresh chain."""
    leaf = make_leaf()
    gc.collect()  # every run starts from a clean heap
    start = time.perf_counter()
    loss = build(leaf, length)
    middle = time.perf_counter()
    loss.backward()
    end = time.perf_counter()
    expected = 0.9999**length
    assert abs(float(leaf.grad[0]) - expected) < 1e-9 * max(1.0, expected) + 1e-12
    del loss, leaf
    return middle - start, end - middle


def main() -> None:
    start = np.ones(4)
    contenders = {"workbench": lambda: wb.tensor(start, requires_grad=True)}
    if torch is not None:
        contenders["torch"] = lambda: torch.tensor(start, requires_grad=True)
    record = {"bench": "chain", "op": "y = y * 0.9999", "shape": [4]}
    for name, make_leaf in contenders.items():
        times = time_chains(make_leaf)
        short, long = LENGTHS
        record[name] = {
            **{f"forward_s_{n}": round(times[n][0], 4) for n in LENGTHS},
            **{f"backward_s_{n}": round(times[n][1], 4) for n in LENGTHS},
            "forward_ratio": round(times[long][0] / times[short][0], 2),
            "backward_ratio": round(times[long][1] / times[short][1], 2),
        }
    record["machine"] = machine()
    emit(record)


if __name__ == "__main__":
    _common  # noqa: B018  (imported first for its thread settings)
    main()
