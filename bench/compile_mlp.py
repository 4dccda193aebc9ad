"""Compiled MLP step (wb.compile) against eager workbench and PyTorch eager, one process.

The step is a whole training step, as PyTorch users write it: ``opt.zero_grad()``,
forward, cross-entropy, ``loss.backward()``, ``opt.step()`` (SGD), on the 784-256-256-10
network at batch 128 and on the 784-1024-1024-10 network at batch 512, float32, one
thread. Compiled, the step is one program: backward and the SGD update are bindings, the
parameters written back at the end (``wb.compile`` of a training step). Each contender
has its own copy of the network (same start, same number of steps: ``same_params``
checks that compiled and eager end equal). The three alternate round by round
(``best_per_call``). Also printed: the time of the compiled step's first two calls (the
first traces with no ``.grad`` yet; the second traces again, ``.grad`` being there, and
keeps the program), the time to trace the loss alone and derive its adjoint (trace +
Gradient transform + DCE), and the peak memory of that adjoint program (plain, and with
the min-cut partitioner's recomputation) and what each keeps for backward; and the same
three on a 64-op elementwise chain on (8, 8) tensors, forward + backward, where the
per-op cost dominates. Prints one JSON line.
"""

from __future__ import annotations

import time

import _common
from _common import best_per_call, emit, machine, ms, np, torch
from bench_mlp import make_torch  # the same network in PyTorch, from bench_mlp's weights

import workbench as wb
from workbench import nn, optim
from workbench.program import eliminate_dead_code, gradient, min_cut_partition, trace

IN, OUT = 784, 10
LR = 0.01
SIZES = {  # hidden width, batch, calls per round, rounds
    "small": (256, 128, 20, 15),
    "large": (1024, 512, 3, 5),
}


def make_model(hidden: int):
    wb.manual_seed(0)
    return nn.Sequential(
        nn.Linear(IN, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, OUT),
    )


def main() -> None:
    record = {"bench": "compile_mlp", "step": "forward + cross_entropy + backward + SGD step"}
    for size, (hidden, batch, number, rounds) in SIZES.items():
        record[size] = mlp_step(hidden, batch, number, rounds)
    record["chain_64_ops"] = chain()
    record["machine"] = machine()
    emit(record)


def training_step(model, loss_fn):
    """``(train_step, optimizer)``: the step as PyTorch users write it, for ``model``."""
    opt = optim.SGD(model.parameters(), lr=LR)

    def train_step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return train_step


def mlp_step(hidden: int, batch: int, number: int, rounds: int) -> dict:
    """The MLP training step eager, compiled and in PyTorch, and what the compiled
    loss's adjoint program keeps."""
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((batch, IN)).astype(np.float32)
    y_np = rng.integers(0, OUT, batch)
    x, y = wb.tensor(x_np), wb.tensor(y_np)
    loss_fn = nn.CrossEntropyLoss()
    eager_model, compiled_model = make_model(hidden), make_model(hidden)
    eager_step = training_step(eager_model, loss_fn)
    compiled_step = wb.compile(training_step(compiled_model, loss_fn))
    first_calls = []
    for _ in range(2):  # traced twice (no .grad yet, then .grad there): the program is kept
        start = time.perf_counter()
        compiled_step(x, y)
        first_calls.append(time.perf_counter() - start)
    eager_step(x, y)
    eager_step(x, y)

    def loss_of(x, y):
        return loss_fn(eager_model(x), y)

    start = time.perf_counter()
    program = trace(loss_of, x, y)
    traced = time.perf_counter() - start
    adjoint = eliminate_dead_code(gradient(program))
    transformed = time.perf_counter() - start
    cut = min_cut_partition(eliminate_dead_code(gradient(program)))
    (step_call,) = compiled_step.cache.values()

    contenders = {
        "eager": lambda: eager_step(x, y),
        "compiled": lambda: compiled_step(x, y),
    }
    if torch is not None:
        t_model, _ = make_torch(
            [p.detach().numpy().copy() for p in make_model(hidden).parameters()]
        )
        t_loss = torch.nn.CrossEntropyLoss()
        t_opt = torch.optim.SGD(t_model.parameters(), lr=LR)
        tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)

        def torch_step():
            t_opt.zero_grad(set_to_none=True)
            loss = t_loss(t_model(tx), ty)
            loss.backward()
            t_opt.step()
            return loss

        contenders["torch"] = torch_step
    best = best_per_call(contenders, number, rounds)
    same_params = all(
        np.allclose(e.detach().numpy(), c.detach().numpy(), atol=1e-5)
        for e, c in zip(eager_model.parameters(), compiled_model.parameters())
    )
    record = {
        "layers": [IN, hidden, hidden, OUT],
        "batch": batch,
        "eager_ms": ms(best["eager"]),
        "compiled_ms": ms(best["compiled"]),
        "compiled_vs_eager": round(best["compiled"] / best["eager"], 3),
        "same_params": same_params,
        "first_calls_ms": [ms(t) for t in first_calls],
        "trace_ms": ms(traced),
        "trace_and_transform_ms": ms(transformed),
        "bindings": {
            "forward": len(program.bindings),
            "adjoint": len(adjoint.bindings),
            "training_step": len(step_call.program.bindings),
        },
        "peak_memory_bytes": {
            "forward": program.peak_memory(),
            "adjoint": adjoint.peak_memory(),
            "adjoint_min_cut": cut.peak_memory(),
            "training_step": step_call.program.peak_memory(),
        },
        "saved_for_backward_bytes": {
            "adjoint": adjoint.saved_bytes(),
            "min_cut": cut.saved_bytes(),
        },
    }
    if torch is not None:
        record["torch_ms"] = ms(best["torch"])
        record["compiled_vs_torch"] = round(best["compiled"] / best["torch"], 3)
        record["eager_vs_torch"] = round(best["eager"] / best["torch"], 3)
    return record


def chain() -> dict:
    """A 64-op elementwise chain on (8, 8) float32, forward + backward: where the per-op
    cost of eager Python shows (milliseconds per step, and microseconds per op)."""

    def ops(x):
        for _ in range(16):
            x = (x * 1.01).tanh() + 0.1
            x = x.sigmoid()
        return x.sum()

    x_np = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32)
    x = wb.tensor(x_np, requires_grad=True)
    compiled = wb.compile(ops)

    def step(fn, leaf):
        def run():
            leaf.grad = None
            fn(leaf).backward()

        return run

    contenders = {"eager": step(ops, x), "compiled": step(compiled, x)}
    if torch is not None:
        contenders["torch"] = step(ops, torch.tensor(x_np, requires_grad=True))
    best = best_per_call(contenders, 50, 15)
    record = {name + "_ms": ms(seconds) for name, seconds in best.items()}
    record["compiled_us_per_op"] = round(best["compiled"] / 64 * 1e6, 2)
    if torch is not None:
        record["compiled_vs_torch"] = round(best["compiled"] / best["torch"], 3)
        record["eager_vs_torch"] = round(best["eager"] / best["torch"], 3)
    return record


if __name__ == "__main__":
    _common  # noqa: B018  (imported first for its thread settings)
    main()
