"""nn.Sequential(Linear, Flatten(0, 1)) on x, x², x³ (unsqueeze and pow with a tensor
exponent), MSELoss(reduction="sum"), model.zero_grad(), updates by hand."""

import json
import math

import torch

torch.manual_seed(0)
x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)
p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)

model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
loss_fn = torch.nn.MSELoss(reduction="sum")
learning_rate = 1e-6
for t in range(300):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad

linear_layer = model[0]
print(
    "RESULT",
    json.dumps(
        {
            "loss": loss.item(),
            "bias": linear_layer.bias.item(),
            "weights": [linear_layer.weight[:, i].item() for i in range(3)],
        }
    ),
)
