"""A tiny next-token model: nn.Embedding, nn.LayerNorm, nn.GELU and a Linear head, Adam
with a LambdaLR warm-up, gradient clipping by norm, and cross entropy over (B·T, V)."""

import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(10)
tokens = torch.tensor(rng.integers(0, 12, (8, 6)))
targets = torch.roll(tokens, shifts=-1, dims=1)

torch.manual_seed(12)


class TinyModel(nn.Module):
    def __init__(self, vocab=12, width=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.norm = nn.LayerNorm(width)
        self.hidden = nn.Linear(width, width)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx):
        h = self.norm(self.embed(idx))
        return self.head(F.gelu(self.hidden(h)))


model = TinyModel()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 5))
norms = []
for step in range(25):
    logits = model(tokens)
    B, T, V = logits.shape
    loss = F.cross_entropy(logits.view(B * T, V), targets.view(B * T))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item())
    optimizer.step()
    scheduler.step()
print(
    "RESULT",
    json.dumps({"loss": loss.item(), "first_norm": norms[0], "lr": scheduler.get_last_lr()[0]}),
)
