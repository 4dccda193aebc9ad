"""Step records from a saved :class:`~workbench.trace.Trace`: replay a backward offline.

A trace keeps summaries, not arrays: a small array comes back in full, a large one
as its shape and statistics (shown as text). Node data and saved tensors are found
through the forward ``op_recorded`` and ``saved_tensor_packed`` records.
"""

from __future__ import annotations

from ..trace import Trace, TraceStep, summary_array
from .steps import CollapseInfo, GradFlow, LeafUpdate, NodeInfo, RecordedSteps, StepRecord


def summary_value(summary: dict | None):
    """An array when the trace kept the values, else a one-line description of the stats."""
    if summary is None:
        return None
    array = summary_array(summary)
    if array is not None:
        return array
    stats = summary.get("stats", {})
    described = ", ".join(f"{k} {v:.4g}" for k, v in stats.items() if isinstance(v, float))
    return f"shape {tuple(summary['shape'])} {summary['dtype']}: {described}"


def trace_source(trace: Trace, which: int = -1) -> RecordedSteps:
    """The steps of backward pass ``which`` (the last by default) of ``trace``."""
    passes = trace.passes
    if not passes:
        raise ValueError("this trace has no backward pass: record one with loss.backward()")
    steps = passes[which].steps
    values = {r["output"]: r.get("value") for r in trace.of_kind("op_recorded")}
    names = tensor_names(trace)
    nodes = _node_infos(trace, steps, values, names)
    labels = {uid: info.label for uid, info in nodes.items()}
    return RecordedSteps([_record(step, labels, names) for step in steps], nodes.values())


def tensor_names(trace: Trace) -> dict[str, str]:
    """``tensor id -> name`` for the tensors the trace names (``x``, ``0.weight``)."""
    names = {}
    for r in trace.of_kind("op_recorded"):
        for tid, name in zip(r["inputs"], r.get("input_names") or ()):
            if tid is not None and name:
                names[tid] = name
        if r.get("name"):
            names[r["output"]] = r["name"]
    return names


def _node_infos(
    trace: Trace, steps: list[TraceStep], values: dict, names: dict
) -> dict[str, NodeInfo]:
    nodes: dict[str, NodeInfo] = {}
    for step in steps:
        r = step.record
        leaf = r.get("leaf")
        leaf = names.get(leaf, leaf)  # as the live stepper shows it: its name, else its id
        label = f"leaf {leaf} ({r['node']})" if leaf else f"{r['name']} {r['node']}"
        nodes[r["node"]] = NodeInfo(r["node"], r["name"], label, r["formula"], leaf=leaf)
    for r in trace.of_kind("op_recorded"):
        info = nodes.get(r.get("node"))
        if info is not None and not r.get("in_backward"):
            info.data = summary_value(r.get("value"))
    for r in trace.of_kind("saved_tensor_packed"):
        info = nodes.get(r["node"])
        if info is not None:
            kept = r.get("value") or values.get(r.get("tensor"))  # from_torch gives "value"
            info.saved[r["slot"]] = summary_value(kept) if kept else "(value not in the trace)"
            if r.get("tensor"):
                info.saved_ids += (r["tensor"],)
    for info in nodes.values():
        if not info.saved and not info.leaf:
            info.saved_note = "nothing saved for this node's gradient"
    return nodes


def _record(step: TraceStep, labels: dict, names: dict) -> StepRecord:
    r = step.record
    ids = list(r.get("grads_out_ids") or [])
    flows = tuple(
        GradFlow(target, labels.get(target, target or "nothing"), summary_value(g))
        for target, g in zip(r["next_nodes"], r["grads_out"] or [None] * len(r["next_nodes"]))
    )
    collapses = tuple(
        CollapseInfo(
            tuple(e["input_shape"]),
            tuple(e["output_shape"]),
            tuple(e["axes"]),
            ids.index(e["output"]) if e.get("output") in ids else None,
        )
        for e in step.of_kind("collapse_sum")
    )
    leaf = None
    for e in step.of_kind("grad_accumulated"):
        if e["tensor"] == r.get("leaf"):
            before, after = summary_value(e["before"]), summary_value(e["after"])
            leaf = LeafUpdate(e["tensor"], names.get(e["tensor"], e["tensor"]), before, after)
    reruns = [e for e in step.of_kind("checkpoint_recompute") if e["phase"] == "end"]
    recomputed = tuple(uid for e in reruns for uid in e["nodes"])
    return StepRecord(
        index=step.index,
        node=r["node"],
        name=r["name"],
        op=r.get("op"),
        formula=r["formula"],
        grads_in=tuple(summary_value(g) for g in r["grads_in"]),
        grads_out=flows,
        collapses=collapses,
        leaf=leaf,
        recomputed=recomputed,
    )


def is_trace(target) -> bool:
    return isinstance(target, Trace)
