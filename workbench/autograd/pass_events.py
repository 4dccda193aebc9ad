"""The events a backward pass publishes, built only while someone listens.

The engine (:mod:`.engine`) calls these at its four moments: a pass started, a node
ran (a :class:`Step`), a leaf's ``.grad`` received its sum, the pass finished. The
widgets, traces and the learner's recorded loop (``workbench/exercises/backward_loop.py``)
read the same events (:mod:`workbench.core.events`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import events
from ..core.tensor import Tensor
from ..record.graph import AccumulateGrad, Node, OpNode

if TYPE_CHECKING:
    from .engine import GraphTask, Step


def publish_accumulated(tensor: Tensor, before, grad: Tensor) -> None:
    events.publish(
        events.GradAccumulated(
            tensor=tensor.uid, before=before, contribution=grad._data, after=tensor._grad._data
        )
    )


def publish_started(task: GraphTask) -> None:
    events.publish(
        events.BackwardStarted(
            roots=tuple(r.uid for r in task.roots),
            root_nodes=tuple(n.uid for n in task.root_nodes),
            grad_outputs=tuple(task.buffers[n][0]._data for n in task.root_nodes),
            create_graph=task.create_graph,
            retain_graph=task.retain_graph,
            inputs=None if task.inputs is None else tuple(t.uid for t in task.inputs),
        )
    )


def publish_finished(task: GraphTask) -> None:
    roots = tuple(r.uid for r in task.roots)
    events.publish(events.BackwardFinished(steps=task.steps_run, roots=roots))


def publish_step(step: Step) -> None:
    sent_ids = tuple([None if g is None else g.uid for g in step.grads_out])
    events.publish(
        node_step(step.index, step.node, _arrays(step.grads_in), _arrays(step.grads_out), sent_ids)
    )


def node_step(index: int, node: Node, grads_in: tuple, grads_out: tuple, sent_ids: tuple):
    """The event of ``node`` run as step ``index``: the gradient arrays it received and sent,
    and the ids of the tensors it sent (also what a learner's recorded loop publishes)."""
    return events.NodeStep(
        index=index,
        node=node.uid,
        name=node.name(),
        op=node.op.name if isinstance(node, OpNode) else None,
        formula=node.formula,
        grads_in=grads_in,
        grads_out=grads_out,
        next_nodes=tuple([None if c is None else c.uid for c, _ in node.next_functions]),
        leaf=node.variable.uid if isinstance(node, AccumulateGrad) else None,
        grads_out_ids=sent_ids,
    )


def _arrays(grads: tuple) -> tuple:
    """The arrays of ``grads`` (None where there is no gradient)."""
    return tuple([None if g is None else g._data for g in grads])
