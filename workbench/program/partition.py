"""What the backward keeps and what it recomputes, chosen by a minimum cut (the idea of
PyTorch AOTAutograd's ``min_cut_rematerialization_partition``).

The backward part of an adjoint reads some forward values. Keeping all of them costs
their memory from the forward until backward; recomputing one costs time. Here every
forward value may be *kept* at the price of its bytes, or *recomputed* in backward from
kept values and the inputs (which are alive anyway), for free, unless its op is one
that is not worth running twice (``EXPENSIVE``: matmuls, convolutions, reductions,
as AOTAutograd bans them). A flow network says it: the source feeds the inputs'
consumers and every expensive value, each value is a pipe of its bytes (in → out),
data flows along the bindings, and each value backward reads drains to the sink. A
minimum cut through the pipes is the cheapest set of values to keep from which
backward can recompute everything else it reads.
"""

from __future__ import annotations

from collections import deque

from .adjoint import recompute_in_backward
from .ir import Program

INFINITE = float("inf")

# Ops whose output is kept rather than recomputed (AOTAutograd's banned list, in spirit:
# the costly and the reducing ones).
EXPENSIVE = {
    "matmul",
    "addmm",
    "linear",
    "conv2d",
    "conv2d_input_grad",
    "conv2d_weight_grad",
    "max_pool2d",
    "avg_pool2d",
    "sum",
    "mean",
    "prod",
    "amax",
    "amin",
    "max",
    "min",
    "var",
    "std",
    "norm",
    "logsumexp",
    "softmax",
    "log_softmax",
    "cumsum",
    "cumprod",
    "layer_norm",
    "batch_norm",
    "cross_entropy",
    "nll_loss",
    "embedding",
}


def min_cut_partition(adjoint: Program) -> Program:
    """``adjoint`` with backward recomputing what the minimum cut does not keep."""
    count = adjoint.forward_count
    forward = adjoint.bindings[:count]
    made_here = {b.out for b in forward}
    read_by_backward = {
        v for b in adjoint.bindings[count:] for v in b.inputs() if v in made_here
    } | {v for v in adjoint.outputs[adjoint.forward_outputs :] if v in made_here}
    kept = keep_set(forward, read_by_backward)
    dropped = {b.out for b in forward} - kept
    return recompute_in_backward(adjoint, dropped, "min-cut")


def keep_set(forward: list, read_by_backward: set) -> set:
    """The forward values the minimum cut keeps."""
    made_here = {b.out for b in forward}
    capacity: dict = {}

    def pipe(a, b, cap) -> None:
        capacity.setdefault(a, {})[b] = capacity.get(a, {}).get(b, 0) + cap
        capacity.setdefault(b, {}).setdefault(a, 0)

    for binding in forward:
        out = binding.out
        pipe(("in", out), ("out", out), max(out.nbytes, 1))  # a view keeps its base: ~free
        if binding.op.name in EXPENSIVE or binding.recomputed:
            pipe("source", ("in", out), INFINITE)
        for value in binding.inputs():
            if value in made_here:
                pipe(("out", value), ("in", out), INFINITE)
        if out in read_by_backward:
            pipe(("out", out), "sink", INFINITE)
    reached = _source_side(capacity)
    return {v for v in made_here if ("in", v) in reached and ("out", v) not in reached}


def _source_side(capacity: dict) -> set:
    """Edmonds-Karp: push flow along shortest augmenting paths until none is left; then
    the nodes still reachable from the source are the source side of a minimum cut."""
    if "source" not in capacity or "sink" not in capacity:
        return {"source"}
    while True:
        parent = {"source": None}
        queue = deque(["source"])
        while queue and "sink" not in parent:
            node = queue.popleft()
            for nxt, cap in capacity[node].items():
                if cap > 0 and nxt not in parent:
                    parent[nxt] = node
                    queue.append(nxt)
        if "sink" not in parent:
            return set(parent)
        path, node = [], "sink"
        while parent[node] is not None:
            path.append((parent[node], node))
            node = parent[node]
        push = min(capacity[a][b] for a, b in path)
        if push == INFINITE:
            raise ValueError("min_cut_partition: a value backward reads cannot be recomputed")
        for a, b in path:
            capacity[a][b] -= push
            capacity[b][a] += push
