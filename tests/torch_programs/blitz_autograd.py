"""The 60-minute blitz's autograd: y = x + 2, z = y·y·3, out.mean(); requires_grad_; a
loop that doubles until the norm passes 1000; backward with a vector; no_grad."""

import json

import numpy as np
import torch


def shown(node):
    """The node's name as print(node) shows it: <MulBackward0 object at ...>."""
    return str(node).split()[0].lstrip("<")


x = torch.ones(2, 2, requires_grad=True)
y = x + 2
z = y * y * 3
out = z.mean()
names = [shown(y.grad_fn), shown(z.grad_fn), shown(out.grad_fn)]
out.backward()
first = x.grad.tolist()

a = torch.tensor(np.array([[0.5, -1.5], [2.0, 0.25]]), dtype=torch.float32)
a = (a * 3) / (a - 1)
flags = [a.requires_grad]
a.requires_grad_(True)
flags.append(a.requires_grad)
b = (a * a).sum()
names.append(shown(b.grad_fn))

x = torch.tensor(np.array([0.3, -0.8, 1.1]), dtype=torch.float32, requires_grad=True)
y = x * 2
steps = 0
while y.data.norm() < 1000:
    y = y * 2
    steps += 1
gradients = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(gradients)
with torch.no_grad():
    flags.append((x**2).requires_grad)
flags.append((x**2).requires_grad)

print(
    "RESULT",
    json.dumps(
        {
            "first": first,
            "names": names,
            "flags": flags,
            "steps": steps,
            "x_grad": x.grad.tolist(),
        }
    ),
)
