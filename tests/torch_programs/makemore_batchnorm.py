"""makemore part 3: hand-written Linear, BatchNorm1d and Tanh classes (Karpathy's style:
__call__ and parameters()), kaiming-scaled init, running statistics under no_grad,
retain_grad on the layer outputs, @torch.no_grad() evaluation, update-to-data ratios."""

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
block_size = 3
X, Y = [], []
for w in WORDS:
    context = [0] * block_size
    for ch in w + ".":
        X.append(context)
        Y.append(stoi[ch])
        context = context[1:] + [stoi[ch]]
Xtr, Ytr = torch.tensor(X), torch.tensor(Y)
g = torch.Generator().manual_seed(2147483647)


class Linear:
    def __init__(self, fan_in, fan_out, bias=True):
        self.weight = torch.randn((fan_in, fan_out), generator=g) / fan_in**0.5
        self.bias = torch.zeros(fan_out) if bias else None

    def __call__(self, x):
        self.out = x @ self.weight
        if self.bias is not None:
            self.out += self.bias
        return self.out

    def parameters(self):
        return [self.weight] + ([] if self.bias is None else [self.bias])


class BatchNorm1d:
    def __init__(self, dim, eps=1e-5, momentum=0.1):
        self.eps, self.momentum, self.training = eps, momentum, True
        self.gamma, self.beta = torch.ones(dim), torch.zeros(dim)
        self.running_mean, self.running_var = torch.zeros(dim), torch.ones(dim)

    def __call__(self, x):
        if self.training:
            xmean = x.mean(0, keepdim=True)
            xvar = x.var(0, keepdim=True)
        else:
            xmean, xvar = self.running_mean, self.running_var
        xhat = (x - xmean) / torch.sqrt(xvar + self.eps)
        self.out = self.gamma * xhat + self.beta
        if self.training:
            with torch.no_grad():
                self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * xmean
                self.running_var = (1 - self.momentum) * self.running_var + self.momentum * xvar
        return self.out

    def parameters(self):
        return [self.gamma, self.beta]


class Tanh:
    def __call__(self, x):
        self.out = torch.tanh(x)
        return self.out

    def parameters(self):
        return []


n_embd, n_hidden, vocab = 10, 40, len(stoi)
C = torch.randn((vocab, n_embd), generator=g)
layers = [
    Linear(n_embd * block_size, n_hidden, bias=False),
    BatchNorm1d(n_hidden),
    Tanh(),
    Linear(n_hidden, n_hidden, bias=False),
    BatchNorm1d(n_hidden),
    Tanh(),
    Linear(n_hidden, vocab, bias=False),
    BatchNorm1d(vocab),
]
with torch.no_grad():
    layers[-1].gamma *= 0.1
    for layer in layers[:-1]:
        if isinstance(layer, Linear):
            layer.weight *= 5 / 3
parameters = [C] + [p for layer in layers for p in layer.parameters()]
for p in parameters:
    p.requires_grad = True

ud = []
for i in range(150):
    ix = torch.randint(0, Xtr.shape[0], (32,), generator=g)
    x = C[Xtr[ix]].view(32, -1)
    for layer in layers:
        x = layer(x)
    loss = F.cross_entropy(x, Ytr[ix])
    for layer in layers:
        layer.out.retain_grad()
    for p in parameters:
        p.grad = None
    loss.backward()
    lr = 0.1
    for p in parameters:
        p.data += -lr * p.grad
    with torch.no_grad():
        ud.append([((lr * p.grad).std() / p.data.std()).log10().item() for p in parameters])

saturated = (layers[2].out.abs() > 0.97).float().mean().item()
tanh_grad_std = layers[2].out.grad.std().item()
hy, hx = torch.histogram(layers[2].out, density=True)


@torch.no_grad()
def split_loss():
    x = C[Xtr].view(Xtr.shape[0], -1)
    for layer in layers:
        if isinstance(layer, BatchNorm1d):
            layer.training = False
        x = layer(x)
    return F.cross_entropy(x, Ytr).item()


print(
    "RESULT",
    json.dumps(
        {
            "loss": loss.item(),
            "eval_loss": split_loss(),
            "saturated": saturated,
            "ud_last": ud[-1][:3],
            "tanh_grad_std": tanh_grad_std,
            "hist_peak": hy.max().item(),
        }
    ),
)
