"""Where an eager op's time goes: bench_overhead.py's chain taken apart, against PyTorch.

``bench_overhead.py`` gives one figure per op (forward + backward). This script splits it,
for the same 64-op chain on (8, 8) float32 tensors, in the same process as PyTorch:

- ``forward_no_grad``: the chain under ``no_grad``: the op calls and their kernels;
- ``forward``: the chain recording its graph (the graph dropped unused): the op calls,
  their nodes and what they save;
- ``step``: forward and backward, as ``bench_overhead.py`` times it; ``step - forward`` is
  the backward pass;

and, for the workbench only, the backward pass alone per node, timed around the call:

- ``engine``: ``loss.backward()``; ``reference``: the one-screen loop of
  ``workbench/autograd/reference.py`` on the same graph (the engine is that loop with hooks,
  events and checks woven in: the two should be as fast);
- ``identity_rules``: ``loss.backward()`` with the chain's four rules (mul, add, tanh,
  sigmoid) replaced by one that passes the gradient on: what the engine's loop costs
  without the rules and their ops (released nodes, gradients sent and summed into ``w``
  and ``b``, 16 each). ``engine - identity_rules`` is the rules.

Prints one JSON line, microseconds per op (per node for the backward passes); medians of
``ROUNDS`` best-of measurements would need bench/alternate.py: one run is one sample. ::

    python bench/eager_split.py
"""

from __future__ import annotations

import contextlib
import time

from _common import best_per_call, emit, machine, np, torch, us
from bench_overhead import OPS, SHAPE, chain

import workbench as wb
from workbench.autograd import reference
from workbench.ops.registry import OPS as REGISTRY

CHAIN_OPS = ("mul", "add", "tanh", "sigmoid")
NUMBER, ROUNDS, BACKWARDS = 50, 15, 1500


def split(x, w, b, tanh, sigmoid, no_grad) -> dict:
    """Seconds per op of the chain: under no_grad, recording, and forward + backward."""

    def forward():
        chain(x, w, b, tanh, sigmoid).sum()

    def forward_no_grad():
        with no_grad():
            forward()

    def step():
        x.grad = w.grad = b.grad = None
        chain(x, w, b, tanh, sigmoid).sum().backward()

    contenders = {"forward_no_grad": forward_no_grad, "forward": forward, "step": step}
    best = best_per_call(contenders, number=NUMBER, rounds=ROUNDS)
    return {name: seconds / OPS for name, seconds in best.items()}


def backward_per_node(x, w, b, run_backward) -> float:
    """Seconds per node of ``run_backward(loss)`` alone (the graph built before the clock
    starts): the tenth-fastest of ``BACKWARDS`` passes."""

    def one() -> float:
        x.grad = w.grad = b.grad = None
        loss = chain(x, w, b, wb.tanh, wb.sigmoid).sum()
        start = time.perf_counter()
        run_backward(loss)
        return time.perf_counter() - start

    for _ in range(30):
        one()
    times = sorted(one() for _ in range(BACKWARDS))
    return times[len(times) // 10] / OPS


@contextlib.contextmanager
def identity_rules():
    """The chain's rules replaced by one that sends the gradient along every edge."""

    def pass_on(orig, grad):
        return [grad] * len(orig.next_functions)

    saved = {name: REGISTRY[name].gradient for name in CHAIN_OPS}
    for name in CHAIN_OPS:
        REGISTRY[name].gradient = pass_on
    try:
        yield
    finally:
        for name, rule in saved.items():
            REGISTRY[name].gradient = rule


def main() -> None:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(SHAPE).astype(np.float32) * 0.5 for _ in range(3)]
    x, w, b = (wb.tensor(a, requires_grad=True) for a in arrays)
    per_op = {"workbench": split(x, w, b, wb.tanh, wb.sigmoid, wb.no_grad)}
    if torch is not None:
        tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in arrays)
        per_op["torch"] = split(tx, tw, tb, torch.tanh, torch.sigmoid, torch.no_grad)
    backward = {
        "engine": backward_per_node(x, w, b, lambda loss: loss.backward()),
        "reference": backward_per_node(x, w, b, reference.backward),
    }
    with identity_rules():
        backward["identity_rules"] = backward_per_node(x, w, b, lambda loss: loss.backward())
    emit(
        {
            "bench": "eager_split",
            "ops": OPS,
            "shape": list(SHAPE),
            "us_per_op": {
                name: {part: us(seconds) for part, seconds in parts.items()}
                for name, parts in per_op.items()
            },
            "backward_us_per_node": {part: us(seconds) for part, seconds in backward.items()},
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
