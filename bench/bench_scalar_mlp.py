"""A micrograd-style network: every value a 0-d tensor, every neuron a Python loop.

A 2-16-16-1 tanh MLP (micrograd's ``MLP(2, [16, 16, 1])``) on 100 points of two
interleaved half-moons: one training step (forward over all points, mean squared
error, backward, SGD update) records about 65,000 scalar ops. Nothing here is
vectorised, so this measures the engine per op, as micrograd's demo does.

Prints one JSON line: seconds per step for workbench and for PyTorch running the
same scalar code, and how much of workbench's step Python's cyclic garbage
collector takes: a 65,000-node graph is 500,000 Python objects, which each full
collection walks (PyTorch's graph lives in C++, out of the collector's sight).
"""

from __future__ import annotations

import gc

import _common
from _common import best_per_call, emit, machine, np, torch

import workbench as wb

SIZES = (2, 16, 16, 1)
POINTS = 100
LR = 0.05


def moons(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved half circles with a little noise; labels −1 and +1."""
    rng = np.random.default_rng(seed)
    angles = rng.uniform(0, np.pi, n)
    upper = np.arange(n) % 2 == 0
    x = np.where(upper, np.cos(angles), 1 - np.cos(angles))
    y = np.where(upper, np.sin(angles), 0.5 - np.sin(angles))
    points = np.stack([x, y], axis=1) + rng.normal(0, 0.1, (n, 2))
    return points, np.where(upper, 1.0, -1.0)


def init_weights(seed: int = 1) -> list:
    """One (weights, bias) list of plain floats per neuron, per layer."""
    rng = np.random.default_rng(seed)
    layers = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        layers.append(
            [(list(rng.uniform(-1, 1, fan_in)), float(rng.uniform(-1, 1))) for _ in range(fan_out)]
        )
    return layers


class ScalarMLP:
    """micrograd's MLP over any scalar type: ``scalar(v)`` makes a trainable 0-d value."""

    def __init__(self, layers: list, scalar) -> None:
        self.layers = [
            [([scalar(w) for w in ws], scalar(b)) for ws, b in layer] for layer in layers
        ]

    def parameters(self) -> list:
        return [p for layer in self.layers for ws, b in layer for p in (*ws, b)]

    def __call__(self, inputs: list):
        for depth, layer in enumerate(self.layers):
            last = depth == len(self.layers) - 1
            outputs = []
            for ws, b in layer:
                act = b
                for w, x in zip(ws, inputs):
                    act = act + w * x
                outputs.append(act if last else act.tanh())
            inputs = outputs
        return inputs[0]


def training_step(model: ScalarMLP, points: list, labels: list, no_grad) -> float:
    loss = 0.0
    for x, y in zip(points, labels):
        diff = model(x) - y
        loss = loss + diff * diff
    loss = loss * (1.0 / len(points))
    for p in model.parameters():
        p.grad = None
    loss.backward()
    with no_grad():
        for p in model.parameters():
            p -= LR * p.grad
    return float(loss.detach())


def main() -> None:
    points, labels = moons(POINTS)
    weights = init_weights()
    label_list = [float(v) for v in labels]

    def workbench_model():
        model = ScalarMLP(weights, lambda v: wb.tensor(v, dtype=wb.float64, requires_grad=True))
        xs = [[wb.tensor(v, dtype=wb.float64) for v in p] for p in points]
        return lambda: training_step(model, xs, label_list, wb.no_grad)

    contenders = {"workbench": workbench_model()}
    if torch is not None:
        t_model = ScalarMLP(
            weights, lambda v: torch.tensor(v, dtype=torch.float64, requires_grad=True)
        )
        t_xs = [[torch.tensor(v, dtype=torch.float64) for v in p] for p in points]
        contenders["torch"] = lambda: training_step(t_model, t_xs, label_list, torch.no_grad)
    losses = {name: [step() for _ in range(2)] for name, step in contenders.items()}
    best = best_per_call(contenders, number=1, rounds=3)
    record = {
        "bench": "scalar_mlp",
        "sizes": list(SIZES),
        "points": POINTS,
        "ops_per_step": count_ops(weights, points),
        "workbench_s_per_step": round(best["workbench"], 4),
        "loss_goes_down": losses["workbench"][-1] < losses["workbench"][0],
    }
    if torch is not None:
        record["torch_s_per_step"] = round(best["torch"], 4)
        record["ratio_vs_torch"] = round(best["workbench"] / best["torch"], 3)
        record["same_losses_as_torch"] = bool(
            np.allclose(losses["workbench"], losses["torch"], rtol=1e-9)
        )
    record["workbench_s_per_step_gc_paused"] = round(time_without_gc(contenders["workbench"]), 4)
    record["machine"] = machine()
    emit(record)


def time_without_gc(step) -> float:
    """The same step with the cyclic garbage collector paused (for the explanation only)."""
    gc.collect()
    gc.disable()
    try:
        return best_per_call({"step": step}, number=1, rounds=3)["step"]
    finally:
        gc.enable()


def count_ops(weights: list, points: np.ndarray) -> int:
    """How many ops one training step records (counted with the event bus)."""
    from workbench.core import events

    model = ScalarMLP(weights, lambda v: wb.tensor(v, dtype=wb.float64, requires_grad=True))
    xs = [[wb.tensor(v, dtype=wb.float64) for v in p] for p in points]
    with events.collect() as got:
        loss = 0.0
        for x in xs:
            diff = model(x) - 1.0
            loss = loss + diff * diff
    return sum(1 for e in got.events if e.kind == "op_recorded")


if __name__ == "__main__":
    _common  # noqa: B018  (imported first for its thread settings)
    main()
