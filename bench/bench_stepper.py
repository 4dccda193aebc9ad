"""How long the BackwardStepper takes in Python: one click on a 200-node graph, and
building one on a 2,000-node graph.

Targets (issue 15): under 100 ms a step on the 200-node graph; under 2 s to build a
stepper on the 2,000-node graph. Prints one JSON line:

- ``build_ms``: building the stepper (walking the graph, the picture's DOT, step 0);
- ``first_pass``: Next where each step runs a real engine node (live mode);
- ``revisit_prev`` / ``revisit_next``: Prev and Next over steps already run, which
  put every ``.grad`` back to its value at the step on show (time travel);
- ``slider_jump``: the slider moved several steps at once;
- ``play_2000``: the slider moved one step at a time on the 2,000-node graph, as Play
  drives it: ``steps_per_s`` is how many steps a second the kernel keeps up with.

``backward_ms`` is a plain ``loss.backward()`` of the same graph, for scale. PyTorch
has no stepping widget, so nothing of PyTorch's is timed. The layout happens in the
browser (WebAssembly Graphviz) and is not part of these numbers.

    .venv/bin/python bench/bench_stepper.py
"""

from __future__ import annotations

import statistics
import time

import _common  # noqa: F401  (one thread, before numpy loads)
from _common import emit, machine

import workbench as wb
from workbench.widgets import BackwardStepper

SMALL_LAYERS = 40  # 5 nodes a layer: mul, add, sigmoid and the AccumulateGrad of w and b
BIG_LAYERS = 400  # the same, 2,000 nodes


def build_graph(layers: int):
    """``h = sigmoid(h * w_i + b_i)`` repeated: ``5 * layers`` backward nodes (plus two)."""
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


def built(layers: int) -> tuple[BackwardStepper, float]:
    loss = build_graph(layers)
    holder = {}
    ms = timed(lambda: holder.setdefault("stepper", BackwardStepper(loss)))
    stepper = holder["stepper"]
    if stepper.error:
        raise SystemExit(f"the stepper could not start: {stepper.error}")
    return stepper, ms


def small_graph_clicks() -> dict:
    stepper, build_ms = built(SMALL_LAYERS)
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
    return {
        "nodes": len(stepper.cursor.source.nodes),
        "steps": steps,
        "build_ms": round(build_ms, 1),
        "first_pass": summary(first),
        "revisit_prev": summary(back),
        "revisit_next": summary(forward),
        "slider_jump": summary(jumps),
        "backward_ms": round(timed(lambda: build_graph(SMALL_LAYERS).backward()), 2),
    }


def big_graph() -> dict:
    stepper, build_ms = built(BIG_LAYERS)
    steps = stepper.cursor.source.expected_steps
    moves = [timed(lambda k=k: setattr(stepper.slider, "value", k)) for k in range(2, steps + 1)]
    back = [timed(lambda k=k: setattr(stepper.slider, "value", k)) for k in range(steps, 0, -1)]
    return {
        "nodes": len(stepper.cursor.source.nodes),
        "build_s": round(build_ms / 1000, 3),
        "play_2000": {**summary(moves), "steps_per_s": round(1000 / statistics.fmean(moves), 1)},
        "play_back_2000": summary(back),
    }


def main() -> None:
    small = small_graph_clicks()
    big = big_graph()
    emit(
        {
            "bench": "stepper",
            **small,
            "big": big,
            "targets": {
                "step_ms_200_nodes": 100,
                "build_s_2000_nodes": 2,
                "met": small["first_pass"]["max_ms"] < 100
                and small["revisit_prev"]["max_ms"] < 100
                and big["build_s"] < 2,
            },
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
