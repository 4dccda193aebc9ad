"""The two-layer net with a custom ReLU Function: forward saves its input and clamps;
backward clones grad_output and zeroes it where the input was negative; hand-written
weight updates on tensors made with numpy."""

import json

import numpy as np
import torch


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


rng = np.random.default_rng(8)
dtype = torch.float
x = torch.tensor(rng.normal(size=(64, 100)), dtype=dtype)
y = torch.tensor(rng.normal(size=(64, 10)), dtype=dtype)
w1 = torch.tensor(rng.normal(size=(100, 50)) * 0.1, dtype=dtype, requires_grad=True)
w2 = torch.tensor(rng.normal(size=(50, 10)) * 0.1, dtype=dtype, requires_grad=True)
learning_rate = 1e-4
for t in range(100):
    relu = MyReLU.apply
    y_pred = relu(x.mm(w1)).mm(w2)
    loss = (y_pred - y).pow(2).sum()
    loss.backward()
    with torch.no_grad():
        w1 -= learning_rate * w1.grad
        w2 -= learning_rate * w2.grad
        w1.grad.zero_()
        w2.grad.zero_()
print("RESULT", json.dumps({"loss": loss.item(), "w2_sum": w2.sum().item()}))
