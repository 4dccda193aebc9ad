"""``wb.func`` against ``torch.func`` in the same run, float32, one thread.

* per-sample gradients: ``vmap(grad(loss))`` over 256 examples of a 784-64-10 MLP
  (tanh, cross-entropy), each example its own batch of one;
* ``jacrev`` and ``jacfwd`` of a 100 → 100 function (``tanh(W x) * x``);
* ``hessian`` of a 100-input scalar function (``sum(tanh(W x) * x)``), forward over reverse.

Both libraries run the same functions on the same numbers (checked before timing).
Both vmap their vjp and jvp over the rows and columns: one forward pass and one batched
backward pass for jacrev, one batched forward pass for jacfwd (lesson 11 counts them).

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
    contenders = {
        "vmap_grad_mlp_784_64_10_x256": {
            "workbench": lambda: vmap_grad_wb(*ours),
            "torch": lambda: vmap_grad_torch(*theirs),
        }
    }
    x_wb, x_torch = wb.tensor(x), torch.from_numpy(x)
    for name in ("jacrev", "jacfwd"):
        ours_fn = getattr(wb.func, name)(jacobian_function(wb.tensor(w)))
        theirs_fn = getattr(torch.func, name)(jacobian_function(torch.from_numpy(w)))
        _same(ours_fn(x_wb), theirs_fn(x_torch))
        contenders[f"{name}_100_to_100"] = {
            "workbench": lambda f=ours_fn: f(x_wb),
            "torch": lambda f=theirs_fn: f(x_torch),
        }
    hessian_wb = wb.func.hessian(lambda v: jacobian_function(wb.tensor(w))(v).sum())
    hessian_torch = torch.func.hessian(lambda v: jacobian_function(torch.from_numpy(w))(v).sum())
    _same(hessian_wb(x_wb), hessian_torch(x_torch))
    contenders["hessian_100_inputs"] = {
        "workbench": lambda: hessian_wb(x_wb),
        "torch": lambda: hessian_torch(x_torch),
    }
    record = {"benchmark": "func", "machine": machine()}
    for name, pair in contenders.items():
        record[name] = _timed(best_per_call(pair, number=3, rounds=5))
    emit(record)


def _same(ours, theirs) -> None:
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-5)


def _timed(best: dict) -> dict:
    return {
        "workbench_ms": ms(best["workbench"]),
        "torch_ms": ms(best["torch"]),
        "ratio": round(best["workbench"] / best["torch"], 2),
    }


if __name__ == "__main__":
    main()
