"""Lesson 9's last section, as a program: a device line, a shuffling DataLoader, an
nn.Sequential regression with nn.MSELoss, SGD with momentum and a StepLR schedule; the
loss before and after, the last learning rate and the names along the loss's graph."""

import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
device = "cpu"  # the comparison runs on the CPU in both libraries
torch.manual_seed(0)
points = torch.linspace(-2, 2, 64).unsqueeze(1)
targets = points**3 - points
loader = DataLoader(TensorDataset(points, targets), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
loss_fn = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.5)

before = loss_fn(model(points), targets).item()
for epoch in range(60):
    for xb, yb in loader:
        loss = loss_fn(model(xb.to(device)), yb.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    scheduler.step()
loss = loss_fn(model(points), targets)
last_layer = loss.grad_fn.next_functions[0][0]
names = [loss.grad_fn.name(), last_layer.name()]
names += [node.name().split("::")[-1] for node, _ in last_layer.next_functions]
print(
    "RESULT",
    json.dumps(
        {
            "before": before,
            "after": loss.item(),
            "lr": scheduler.get_last_lr(),
            "size": str(points.size()),
            "names": names,
        }
    ),
)
