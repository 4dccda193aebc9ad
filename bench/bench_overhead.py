"""Per-op overhead: a 64-op chain on (8, 8) float32 tensors, then backward.

On arrays this small the arithmetic is nearly free, so the time is what the
engine itself costs per op: dispatch, node recording, the backward step. The same
chain runs in PyTorch and as hand-written numpy (forward and backward, no engine).

Prints one JSON line with microseconds per op (forward + backward time / 64).
Target: ≤ 1.0× torch per op, never worse than 2×.
"""

from __future__ import annotations

import _common
from _common import best_per_call, emit, machine, np, torch, us

import workbench as wb

OPS = 64  # the chain repeats (mul w, add b, tanh, sigmoid) 16 times
SHAPE = (8, 8)


def chain(x, w, b, tanh, sigmoid):
    """The benchmark's chain, written once for every library."""
    y = x
    for _ in range(OPS // 4):
        y = sigmoid(tanh(y * w + b))
    return y


def numpy_forward_backward(x, w, b):
    """The chain and its gradients by hand: what the engine automates."""
    saved = []
    y = x
    for _ in range(OPS // 4):
        t = np.tanh(y * w + b)
        s = 1 / (1 + np.exp(-t))
        saved.append((y, t, s))
        y = s
    grad = np.ones_like(y)
    grad_w = np.zeros_like(w)
    grad_b = np.zeros_like(b)
    for y_in, t, s in reversed(saved):
        grad = grad * s * (1 - s)
        grad = grad * (1 - t * t)
        grad_b += grad
        grad_w += grad * y_in
        grad = grad * w
    return grad, grad_w, grad_b


def main() -> None:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(SHAPE).astype(np.float32) * 0.5 for _ in range(3)]
    x, w, b = (wb.tensor(a, requires_grad=True) for a in arrays)

    def workbench_step():
        x.grad = w.grad = b.grad = None
        chain(x, w, b, wb.tanh, wb.sigmoid).sum().backward()

    contenders = {
        "workbench": workbench_step,
        "numpy": lambda: numpy_forward_backward(*arrays),
    }
    if torch is not None:
        tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in arrays)

        def torch_step():
            tx.grad = tw.grad = tb.grad = None
            chain(tx, tw, tb, torch.tanh, torch.sigmoid).sum().backward()

        contenders["torch"] = torch_step
    best = best_per_call(contenders, number=50, rounds=15)
    per_op = {name: seconds / OPS for name, seconds in best.items()}
    record = {
        "bench": "overhead",
        "ops": OPS,
        "shape": list(SHAPE),
        "workbench_us_per_op": us(per_op["workbench"]),
        "numpy_us_per_op": us(per_op["numpy"]),
    }
    if torch is not None:
        record["torch_us_per_op"] = us(per_op["torch"])
        record["ratio_vs_torch"] = round(per_op["workbench"] / per_op["torch"], 3)
    record["machine"] = machine()
    emit(record)


if __name__ == "__main__":
    _common  # noqa: B018  (imported first for its thread settings)
    main()
