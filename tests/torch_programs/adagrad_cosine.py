"""A regression with Adagrad and CosineAnnealingLR, model.parameters() in param groups of
their own learning rates, get_last_lr() each epoch."""

import json

import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(4)
X = torch.tensor(rng.normal(size=(64, 3)), dtype=torch.float32)
true_w = torch.tensor([[1.5], [-2.0], [0.5]])
y = X @ true_w + 0.3

torch.manual_seed(5)
model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
optimizer = torch.optim.Adagrad(
    [{"params": model[0].parameters()}, {"params": model[2].parameters(), "lr": 0.05}], lr=0.1
)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10, eta_min=0.001)
loss_fn = nn.MSELoss()
rates = []
for epoch in range(15):
    optimizer.zero_grad()
    loss = loss_fn(model(X), y)
    loss.backward()
    optimizer.step()
    scheduler.step()
    rates.append(scheduler.get_last_lr())
print("RESULT", json.dumps({"loss": loss.item(), "rates": rates[-1], "rate_5": rates[4]}))
