"""micrograd's check against PyTorch: double-precision scalars built with torch.Tensor([..]),
requires_grad set by attribute, tanh, backward, .grad.item(); then a small MLP of scalars."""

import json

import torch

x1 = torch.Tensor([2.0]).double()
x1.requires_grad = True
x2 = torch.Tensor([0.0]).double()
x2.requires_grad = True
w1 = torch.Tensor([-3.0]).double()
w1.requires_grad = True
w2 = torch.Tensor([1.0]).double()
w2.requires_grad = True
b = torch.Tensor([6.8813735870195432]).double()
b.requires_grad = True
n = x1 * w1 + x2 * w2 + b
o = torch.tanh(n)
o.backward()

a = torch.tensor([-4.0], dtype=torch.double, requires_grad=True)
c = torch.tensor([2.0], dtype=torch.double, requires_grad=True)
d = a * c + c**3
e = a + c
e = e + e + 1
e = e + 1 + e + (-a)
d = d + d * 2 + (c + a).relu()
d = d + 3 * d + (c - a).relu()
f = (e - d) ** 2
g = f / 2.0
g = g + 10.0 / f
g.backward()

print(
    "RESULT",
    json.dumps(
        {
            "o": o.data.item(),
            "grads": [x1.grad.item(), x2.grad.item(), w1.grad.item(), w2.grad.item()],
            "g": g.item(),
            "a_grad": a.grad.item(),
            "c_grad": c.grad.item(),
        }
    ),
)
