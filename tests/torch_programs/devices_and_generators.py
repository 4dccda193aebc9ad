"""Device and generator boilerplate: torch.device, the accelerator question, .to(device),
set_default_device, cuda seeding; a Generator's state saved and restored; the random
functions with generator=; dropout masks under manual_seed; Tensor.type, numel, Size."""

import json

import torch
import torch.nn.functional as F

device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
torch.set_default_device(device)
torch.manual_seed(123)
torch.cuda.manual_seed_all(123)
cpu = torch.device("cpu")

g = torch.Generator(device=cpu).manual_seed(99)
state = g.get_state()
first = torch.rand(3, generator=g).tolist()
g.set_state(state)
again = torch.rand(3, generator=g).tolist()

draws = {
    "randn": torch.randn(2, 3, generator=g).sum().item(),
    "randint": torch.randint(0, 100, (4,), generator=g).tolist(),
    "randint_high": torch.randint(10, (3,), generator=g).tolist(),
    "randperm": torch.randperm(6, generator=g).tolist(),
    "normal": torch.normal(2.0, 0.5, (20,), generator=g).mean().item(),
    "bernoulli": torch.bernoulli(torch.full((8,), 0.5), generator=g).tolist(),
    "uniform_": torch.empty(17).uniform_(-1, 1, generator=g).sum().item(),
    "multinomial": torch.multinomial(
        torch.tensor([0.1, 0.2, 0.7]), 5, replacement=True, generator=g
    ).tolist(),
    "dropout": F.dropout(torch.ones(10), p=0.5).tolist(),
    "global_randn": torch.randn(20).sum().item(),
}
x = torch.ones(2, 3).to(device)
facts = {
    "device": str(x.device),
    "type": x.type(),
    "numel": x.numel(),
    "nelement": x.nelement(),
    "size": str(x.size()),
    "shape": list(x.shape),
    "long_type": x.long().type(),
    "cpu": x.cpu().numpy().tolist(),
    "is_cuda": x.is_cuda,
    "same_device": x.device == cpu,
}
print("RESULT", json.dumps({"first": first, "again": again, **draws, **facts}))
