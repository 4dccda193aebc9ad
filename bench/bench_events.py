"""What watching costs: events with nobody listening, a full trace, and drawing a big graph.

Run from the repository root::

    .venv/bin/python bench/bench_events.py

Prints one JSON line:

- ``step_ms``: one training step of a 784-256-256-10 MLP (batch 128, matmul/+/relu,
  mean squared error, plain SGD) with no subscriber; ``torch_step_ms`` the same step
  in PyTorch when it is installed.

Times are the CPU time of this process (``time.process_time``), medians over steps
run alternately with and without tracing, with BLAS on one thread: on a machine shared
with other jobs, wall-clock time and idle BLAS threads spinning measure the neighbours
more than the code.
- ``idle_publish_pct``: the share of that step spent on the ``events.listening``
  checks. It is counted, not guessed: the checks of one step are counted, and one
  check is timed on its own (an A/B of two whole steps could not resolve a cost this
  small on a shared machine). Target: at most 3 %.
- ``trace_ratio``: a step recorded with ``wb.trace()`` over a plain step. Target: 1.5.
- ``render_s``: drawing a backward graph of about 1,000 nodes (no folding) to SVG.
  Target: under 2 s. ``render_folded_s``: the same graph folded (the default).
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy loads its BLAS

import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

import workbench as wb  # noqa: E402
from workbench.autograd import engine, graph  # noqa: E402
from workbench.core import events  # noqa: E402
from workbench.ops import broadcasting  # noqa: E402
from workbench.record import anomaly, dispatch  # noqa: E402

SIZES = (784, 256, 256, 10)
BATCH = 128
REPEATS = 40


def make_mlp(lib, seed: int = 0) -> tuple:
    """Parameters, a batch and a target, as ``lib`` tensors (wb or torch)."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(SIZES, SIZES[1:]):
        w = (rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32)
        params += [lib.tensor(w, requires_grad=True), lib.zeros(fan_out, requires_grad=True)]
    x = lib.tensor(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32))
    y = lib.tensor(rng.standard_normal((BATCH, SIZES[-1])).astype(np.float32))
    return params, x, y


def train_step(lib, params: list, x, y, lr: float = 0.01) -> None:
    h = x
    for i in range(0, len(params), 2):
        h = lib.matmul(h, params[i]) + params[i + 1]
        if i < len(params) - 2:
            h = h.relu()
    loss = ((h - y) * (h - y)).mean()
    loss.backward()
    with lib.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None


def cpu_ms(run) -> float:
    start = time.process_time()
    run()
    return (time.process_time() - start) * 1000


def median_ms(run, repeats: int = REPEATS) -> float:
    return statistics.median(cpu_ms(run) for _ in range(repeats))


class CountingEvents:
    """Stands in for the events module and counts how often ``listening`` is read."""

    def __init__(self) -> None:
        self.checks = 0

    @property
    def listening(self) -> bool:
        self.checks += 1
        return False

    def __getattr__(self, name: str):
        return getattr(events, name)


PUBLISHERS = (dispatch, engine, graph, broadcasting, anomaly)


def checks_per_step(params, x, y) -> int:
    counter = CountingEvents()
    for module in PUBLISHERS:
        module.events = counter
    try:
        train_step(wb, params, x, y)
    finally:
        for module in PUBLISHERS:
            module.events = events
    return counter.checks


def seconds_per_check() -> float:
    """One ``if events.listening:`` as the publishers write it, loop overhead removed."""
    number = 2_000_000
    env = {"events": events}
    check = timeit.timeit("if events.listening: pass", globals=env, number=number)
    empty = timeit.timeit("pass", globals=env, number=number)
    return max(check - empty, 0.0) / number


def torch_step_ms() -> float | None:
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    params, x, y = make_mlp(torch)
    train_step(torch, params, x, y)
    return median_ms(lambda: train_step(torch, params, x, y))


def deep_graph(layers: int):
    """A backward graph of about 2 × ``layers`` nodes: alternating sin and scaling."""
    z = wb.tensor([0.5, 0.25], requires_grad=True)
    for _ in range(layers):
        z = z.sin() * 0.9
    return z.sum()


def render_seconds(loss, fold_limit) -> float:
    """Wall-clock seconds to draw and render (a system ``dot`` would run in a subprocess)."""
    start = time.perf_counter()
    wb.viz.draw(loss, kind="backward", fold_limit=fold_limit).svg()
    return time.perf_counter() - start


def main() -> dict:
    params, x, y = make_mlp(wb)
    for _ in range(3):
        train_step(wb, params, x, y)
    plain, traced = [], []
    for _ in range(REPEATS):  # interleaved, so drift on a shared machine hits both alike
        plain.append(cpu_ms(lambda: train_step(wb, params, x, y)))
        with wb.trace() as recording:
            traced.append(cpu_ms(lambda: train_step(wb, params, x, y)))
    events_per_step = len(recording)
    step_ms = statistics.median(plain)
    checks = checks_per_step(params, x, y)
    per_check = seconds_per_check()
    loss = deep_graph(500)
    nodes = len(wb.viz.build_model(loss, "backward").order)
    wb.viz.draw(deep_graph(5)).svg()  # load the renderer before timing
    return {
        "bench": "events",
        "mlp": "784-256-256-10",
        "batch": BATCH,
        "step_ms": round(step_ms, 3),
        "torch_step_ms": None if (t := torch_step_ms()) is None else round(t, 3),
        "events_per_step": events_per_step,
        "listening_checks_per_step": checks,
        "ns_per_check": round(per_check * 1e9, 1),
        "idle_publish_pct": round(100 * checks * per_check / (step_ms / 1000), 4),
        "traced_step_ms": round(statistics.median(traced), 3),
        "trace_ratio": round(statistics.median(traced) / step_ms, 3),
        "render_nodes": nodes,
        "render_s": round(render_seconds(loss, None), 3),
        "render_folded_s": round(render_seconds(loss, wb.viz.FOLD_LIMIT), 3),
        "renderer": wb.viz.which_renderer(),
    }


if __name__ == "__main__":
    print(json.dumps(main()))
