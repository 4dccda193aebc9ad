"""Saving and loading: torch.save(model.state_dict(), path), a fresh model,
load_state_dict(torch.load(path, weights_only=True)), eval(), the same predictions."""

import json
import os
import tempfile

import numpy as np
import torch
from torch import nn

torch.manual_seed(11)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
x = torch.tensor(np.random.default_rng(9).normal(size=(5, 4)), dtype=torch.float32)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for _ in range(20):
    optimizer.zero_grad()
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()

with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "model.pth")
    torch.save(model.state_dict(), path)
    restored = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    restored.load_state_dict(torch.load(path, weights_only=True))
restored.eval()
with torch.no_grad():
    same = torch.allclose(restored(x), model(x))
    prediction = restored(x).argmax(1).tolist()
print(
    "RESULT",
    json.dumps(
        {
            "loss": loss.item(),
            "same": same,
            "prediction": prediction,
            "keys": list(model.state_dict().keys()),
        }
    ),
)
