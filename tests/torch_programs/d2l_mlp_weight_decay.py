"""d2l's concise MLP: nn.LazyLinear layers, net.apply(init) with nn.init.normal_ and
zeros_, SGD with parameter groups (weight decay on the weights only), MSELoss with
reduction="none" averaged by hand."""

import json

import numpy as np
import torch
from torch import nn

rng = np.random.default_rng(7)
X = torch.tensor(rng.normal(size=(80, 6)), dtype=torch.float32)
y = torch.tensor(np.sin(rng.normal(size=(80, 1))), dtype=torch.float32)

torch.manual_seed(1)
net = nn.Sequential(nn.Flatten(), nn.LazyLinear(16), nn.ReLU(), nn.LazyLinear(1))
net(X)  # the lazy layers learn their input sizes


def init_weights(module):
    if type(module) is nn.LazyLinear or type(module) is nn.Linear:
        nn.init.normal_(module.weight, mean=0, std=0.1)
        nn.init.zeros_(module.bias)


net.apply(init_weights)
weights = [p for name, p in net.named_parameters() if name.endswith("weight")]
biases = [p for name, p in net.named_parameters() if name.endswith("bias")]
trainer = torch.optim.SGD([{"params": weights, "weight_decay": 0.01}, {"params": biases}], lr=0.05)
loss = nn.MSELoss(reduction="none")
for epoch in range(60):
    trainer.zero_grad()
    l = loss(net(X), y)  # noqa: E741
    l.mean().backward()
    trainer.step()
print(
    "RESULT",
    json.dumps(
        {
            "loss": l.mean().item(),
            "shapes": [list(p.shape) for p in net.parameters()],
            "w_norm": net[1].weight.norm().item(),
        }
    ),
)
