"""makemore part 2: an embedding table C indexed by C[X], emb.view(-1, 6), tanh hidden
layer, F.cross_entropy, minibatches from torch.randint with a generator, a learning-rate
step down, nelement(), p.requires_grad = True, p.data += -lr * p.grad; then sampling."""

import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from names import WORDS  # noqa: E402

chars = sorted(set("".join(WORDS)))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi["."] = 0
itos = {i: s for s, i in stoi.items()}
block_size = 3


def build_dataset(words):
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + ".":
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]
    return torch.tensor(X), torch.tensor(Y)


Xtr, Ytr = build_dataset(WORDS)
g = torch.Generator().manual_seed(2147483647)
C = torch.randn((len(stoi), 2), generator=g)
W1 = torch.randn((6, 50), generator=g)
b1 = torch.randn(50, generator=g)
W2 = torch.randn((50, len(stoi)), generator=g)
b2 = torch.randn(len(stoi), generator=g)
parameters = [C, W1, b1, W2, b2]
n_params = sum(p.nelement() for p in parameters)
for p in parameters:
    p.requires_grad = True

for i in range(300):
    ix = torch.randint(0, Xtr.shape[0], (32,), generator=g)
    emb = C[Xtr[ix]]
    h = torch.tanh(emb.view(-1, 6) @ W1 + b1)
    logits = h @ W2 + b2
    loss = F.cross_entropy(logits, Ytr[ix])
    for p in parameters:
        p.grad = None
    loss.backward()
    lr = 0.1 if i < 200 else 0.01
    for p in parameters:
        p.data += -lr * p.grad

with torch.no_grad():
    emb = C[Xtr]
    h = torch.tanh(emb.view(-1, 6) @ W1 + b1)
    full_loss = F.cross_entropy(h @ W2 + b2, Ytr)

g = torch.Generator().manual_seed(2147483647 + 10)
names = []
for _ in range(5):
    out, context = [], [0] * block_size
    while True:
        emb = C[torch.tensor([context])]
        h = torch.tanh(emb.view(1, -1) @ W1 + b1)
        probs = F.softmax(h @ W2 + b2, dim=1)
        ix = torch.multinomial(probs, num_samples=1, generator=g).item()
        context = context[1:] + [ix]
        out.append(ix)
        if ix == 0 or len(out) > 20:
            break
    names.append("".join(itos[i] for i in out))

print(
    "RESULT",
    json.dumps(
        {
            "n_params": n_params,
            "loss": loss.item(),
            "full_loss": full_loss.item(),
            "names": names,
        }
    ),
)
