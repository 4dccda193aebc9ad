"""``wb.func`` against ``torch.func`` in the same run, float32, one thread.

* per-sample gradients: ``vmap(grad(loss))`` over 256 examples of a 784-64-10 MLP
  (tanh, cross-entropy), each example its own batch of one;
* ``jacrev`` of a 100 → 100 function (``tanh(W x) * x``).

Both libraries run the same functions on the same numbers (checked before timing).
Workbench's jacrev is one backward pass per output row (100 passes), as the lesson on
forward and reverse mode counts them; torch.func vmaps its vjp over the rows.

Prints one JSON line: milliseconds per call of each and the ratio workbench / torch.
"""

from __future__ import annotations

from _common import best_per_call, emit, machine, ms, np, torch

import workbench as wb
import workbench.nn.functional as F

EXAMPLES, IN, HIDDEN, OUT, WIDTH = 256, 784, 64, 10, 100


def mlp_loss(functional):
    def loss(w1, b1, w2, b2, x, y):
        hidden = functional.linear(x.unsqueeze(0), w1, b1).tanh()
        return functional.cross_entropy(functional.linear(hidden, w2, b2), y.unsqueeze(0))

    return loss


def per_sample_grads(transforms, loss):
    return transforms.vmap(
        transforms.grad(loss, argnums=(0, 1, 2, 3)), in_dims=(None, None, None, None, 0, 0)
    )


def jacobian_function(w):
    return lambda x: (w @ x).tanh() * x


def main() -> None:
    rng = np.random.default_rng(0)
    arrays = [
        rng.standard_normal((HIDDEN, IN)).astype(np.float32) * 0.05,
        np.zeros(HIDDEN, np.float32),
        rng.standard_normal((OUT, HIDDEN)).astype(np.float32) * 0.1,
        np.zeros(OUT, np.float32),
        rng.standard_normal((EXAMPLES, IN)).astype(np.float32),
    ]
    labels = rng.integers(0, OUT, size=EXAMPLES)
    ours = [wb.tensor(a) for a in arrays] + [wb.tensor(labels)]
    theirs = [torch.from_numpy(a) for a in arrays] + [torch.from_numpy(labels)]
    vmap_grad_wb = per_sample_grads(wb.func, mlp_loss(F))
    vmap_grad_torch = per_sample_grads(torch.func, mlp_loss(torch.nn.functional))
    for a, b in zip(vmap_grad_wb(*ours), vmap_grad_torch(*theirs)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-3, atol=1e-5)

    w = rng.standard_normal((WIDTH, WIDTH)).astype(np.float32) / 10
    x = rng.standard_normal(WIDTH).astype(np.float32)
    jac_wb = wb.func.jacrev(jacobian_function(wb.tensor(w)))
    jac_torch = torch.func.jacrev(jacobian_function(torch.from_numpy(w)))
    np.testing.assert_allclose(
        jac_wb(wb.tensor(x)).numpy(), jac_torch(torch.from_numpy(x)).numpy(), rtol=1e-4, atol=1e-6
    )

    per_sample = best_per_call(
        {
            "workbench": lambda: vmap_grad_wb(*ours),
            "torch": lambda: vmap_grad_torch(*theirs),
        },
        number=3,
        rounds=5,
    )
    jacobian = best_per_call(
        {
            "workbench": lambda: jac_wb(wb.tensor(x)),
            "torch": lambda: jac_torch(torch.from_numpy(x)),
        },
        number=3,
        rounds=5,
    )
    emit(
        {
            "benchmark": "func",
            "machine": machine(),
            "vmap_grad_mlp_784_64_10_x256": _timed(per_sample),
            "jacrev_100_to_100": _timed(jacobian),
        }
    )


def _timed(best: dict) -> dict:
    return {
        "workbench_ms": ms(best["workbench"]),
        "torch_ms": ms(best["torch"]),
        "ratio": round(best["workbench"] / best["torch"], 2),
    }


if __name__ == "__main__":
    main()
