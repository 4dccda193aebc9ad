"""The autograd basics: a one-layer net with binary_cross_entropy_with_logits, grad_fn,
.grad of the leaves, no_grad, detach, and backward with a gradient (Jacobian products)."""

import json

import numpy as np
import torch


def shown(node):
    """The node's name as print(node) shows it: <MulBackward0 object at ...>."""
    return str(node).split()[0].lstrip("<")


rng = np.random.default_rng(1)
x = torch.ones(5)
y = torch.zeros(3)
w = torch.tensor(rng.standard_normal((5, 3)), dtype=torch.float32, requires_grad=True)
b = torch.tensor(rng.standard_normal(3), dtype=torch.float32, requires_grad=True)
z = torch.matmul(x, w) + b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)

names = [shown(z.grad_fn), shown(loss.grad_fn)]
loss.backward()

with torch.no_grad():
    z2 = torch.matmul(x, w) + b
z_det = (torch.matmul(x, w) + b).detach()

inp = torch.eye(4, 5, requires_grad=True)
out = (inp + 1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
first = inp.grad.clone()
out.backward(torch.ones_like(out), retain_graph=True)
second = inp.grad.clone()
inp.grad.zero_()
out.backward(torch.ones_like(out), retain_graph=True)

print(
    "RESULT",
    json.dumps(
        {
            "loss": loss.item(),
            "w_grad": w.grad.sum().item(),
            "b_grad": b.grad.tolist(),
            "names": names,
            "no_grad": [z2.requires_grad, z_det.requires_grad],
            "accumulated": [first.sum().item(), second.sum().item(), inp.grad.sum().item()],
        }
    ),
)
