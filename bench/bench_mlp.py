"""MLP training step (forward, cross-entropy, backward, SGD update), float32, one thread.

Three contenders run the same step from the same initial weights: workbench
(``wb.nn`` + ``wb.optim.SGD``), PyTorch, and a hand-written numpy forward+backward
(+ the same update): the floor that any numpy-based engine pays for the arithmetic.

Prints one JSON line: per configuration the milliseconds per step of each and the
ratio workbench / torch. Targets: ≤ 1.0× torch (never worse than 1.3×).
"""

from __future__ import annotations

import _common
from _common import best_per_call, emit, machine, ms, np, torch

import workbench as wb
from workbench import nn

CONFIGS = [  # (hidden width, batch, steps per round, rounds)
    (256, 128, 20, 15),
    (1024, 512, 3, 7),
]
IN, OUT, LR = 784, 10, 0.01


def make_workbench(hidden: int):
    wb.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(IN, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, OUT),
    )
    return model, wb.optim.SGD(model.parameters(), lr=LR)


def make_torch(weights: list):
    hidden = weights[0].shape[0]
    model = torch.nn.Sequential(
        torch.nn.Linear(IN, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, OUT),
    )
    with torch.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(torch.from_numpy(w))
    return model, torch.optim.SGD(model.parameters(), lr=LR)


class NumpyMLP:
    """The same network written by hand: forward, softmax cross-entropy, backward, update."""

    def __init__(self, weights: list) -> None:
        self.params = [w.copy() for w in weights]  # W1, b1, W2, b2, W3, b3 (torch layout)

    def step(self, x: np.ndarray, labels: np.ndarray) -> float:
        w1, b1, w2, b2, w3, b3 = self.params
        h1 = x @ w1.T
        h1 += b1
        a1 = np.maximum(h1, 0)
        h2 = a1 @ w2.T
        h2 += b2
        a2 = np.maximum(h2, 0)
        logits = a2 @ w3.T
        logits += b3
        rows = np.arange(len(labels))
        shifted = logits - logits.max(axis=1, keepdims=True)
        exp = np.exp(shifted)
        probs = exp / exp.sum(axis=1, keepdims=True)
        loss = -np.log(probs[rows, labels]).mean()
        g3 = probs
        g3[rows, labels] -= 1
        g3 /= len(labels)
        g2 = g3 @ w3
        g2 *= h2 > 0
        g1 = g2 @ w2
        g1 *= h1 > 0
        grads = [g1.T @ x, g1.sum(0), g2.T @ a1, g2.sum(0), g3.T @ a2, g3.sum(0)]
        for p, g in zip(self.params, grads):
            p -= LR * g
        return float(loss)


def run(hidden: int, batch: int, number: int, rounds: int) -> dict:
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((batch, IN)).astype(np.float32)
    y_np = rng.integers(0, OUT, batch)
    model, opt = make_workbench(hidden)
    weights = [p.detach().numpy().copy() for p in model.parameters()]
    loss_fn = nn.CrossEntropyLoss()
    x, y = wb.tensor(x_np), wb.tensor(y_np)

    def workbench_step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    contenders = {"workbench": workbench_step}
    floor = NumpyMLP(weights)
    contenders["numpy"] = lambda: floor.step(x_np, y_np)
    if torch is not None:
        t_model, t_opt = make_torch(weights)
        t_loss_fn = torch.nn.CrossEntropyLoss()
        tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)

        def torch_step():
            t_opt.zero_grad()
            loss = t_loss_fn(t_model(tx), ty)
            loss.backward()
            t_opt.step()
            return loss

        first = (workbench_step().item(), torch_step().item())  # same start, same loss
        contenders["torch"] = torch_step
    best = best_per_call(contenders, number, rounds)
    record = {
        "layers": [IN, hidden, hidden, OUT],
        "batch": batch,
        "workbench_ms": ms(best["workbench"]),
        "numpy_floor_ms": ms(best["numpy"]),
    }
    if torch is not None:
        record["torch_ms"] = ms(best["torch"])
        record["ratio_vs_torch"] = round(best["workbench"] / best["torch"], 3)
        record["first_loss_matches_torch"] = bool(abs(first[0] - first[1]) < 1e-4)
    record["ratio_vs_numpy_floor"] = round(best["workbench"] / best["numpy"], 3)
    return record


def main() -> None:
    results = [run(*config) for config in CONFIGS]
    emit({"bench": "mlp", "dtype": "float32", "results": results, "machine": machine()})


if __name__ == "__main__":
    _common  # noqa: B018  (imported first for its thread settings)
    main()
