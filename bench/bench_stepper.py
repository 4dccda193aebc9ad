"""How long one click of the BackwardStepper takes in Python, on a 200-node graph.

Prints one JSON line. ``first_pass`` steps run a real engine node each (live mode);
``revisit`` steps only show recorded steps again (Prev / slider / Next over known
steps). ``backward_ms`` is a plain ``loss.backward()`` of the same graph, for scale.
There is no PyTorch counterpart to a stepping widget, so none is timed.

    .venv/bin/python bench/bench_stepper.py
"""

from __future__ import annotations

import json
import statistics
import time

import workbench as wb
from workbench.widgets import BackwardStepper

LAYERS = 40  # 5 nodes a layer: mul, add, sigmoid and the AccumulateGrad of w and b


def build_graph(layers: int = LAYERS):
    """``h = sigmoid(h * w_i + b_i)`` repeated: a 200-node backward graph."""
    wb.manual_seed(0)
    h = wb.randn(8, requires_grad=True)
    for _ in range(layers):
        w = wb.randn(8, requires_grad=True)
        b = wb.randn(1, requires_grad=True)
        h = wb.sigmoid(h * w + b)
    return h.sum()


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def summary(times: list[float]) -> dict:
    return {
        "mean_ms": round(statistics.fmean(times), 3),
        "median_ms": round(statistics.median(times), 3),
        "max_ms": round(max(times), 3),
    }


def main() -> None:
    backward_ms = timed(lambda: build_graph().backward())
    loss = build_graph()
    holder = {}
    build_ms = timed(lambda: holder.setdefault("stepper", BackwardStepper(loss)))
    stepper = holder["stepper"]
    if stepper.error:
        raise SystemExit(f"the stepper could not start: {stepper.error}")
    first = []
    while True:
        start = time.perf_counter()
        moved = stepper.next()
        first.append((time.perf_counter() - start) * 1000)
        if not moved:
            break
    steps = len(stepper.cursor.source.records)
    back = [timed(stepper.prev) for _ in range(steps - 1)]
    forward = [timed(stepper.next) for _ in range(steps - 1)]
    jumps = [timed(lambda k=k: stepper.go(k)) for k in range(0, steps, 7)]
    result = {
        "bench": "stepper",
        "nodes": len(stepper.cursor.source.nodes),
        "steps": steps,
        "build_ms": round(build_ms, 1),
        "first_pass": summary(first),
        "revisit_prev": summary(back),
        "revisit_next": summary(forward),
        "slider_jump": summary(jumps),
        "backward_ms": round(backward_ms, 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
