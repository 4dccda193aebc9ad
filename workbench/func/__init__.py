"""``workbench.func``: function transforms with ``torch.func``'s names and semantics.

``grad``, ``grad_and_value``, ``vjp`` and ``jacrev`` (``reverse.py``) differentiate a
function with the workbench's own reverse mode; ``vmap`` (``vmap.py``) runs a function of
one example on a whole batch, each op by its batching rule (``batching.py``). They
compose: ``vmap(grad(loss))`` gives per-example gradients, ``jacrev(grad(f))`` a Hessian.
``jvp``, ``jacfwd``, ``hessian`` and ``linearize`` (``forward.py``) push tangents forward
with the dual numbers of :mod:`workbench.record.forward_ad`. ``jacfwd`` and ``jacrev``
push the whole basis through one vectorised pass (``vmap`` over ``jvp`` or over the
pullback, ``basis.py``), as torch.func's do, and loop over it where that cannot batch.

They compose as torch.func's do, by *levels*: a grad transform's level is the leaves it
made for its arguments (``reverse._Level``), a vmap's level is its number on batched
tensors, and each ``jvp`` opens a dual level of its own (``forward_ad``: a tensor holds
one tangent per level), carrying tangents through all of them; whatever a result depends
on outside a level (a tensor closed over, an argument on the tape) stays on the outer
graph, so ``backward()`` through a ``grad`` result reaches it.

``functional_call`` (``functional_call.py``) runs a module with given tensors in place of
its parameters and buffers: a model as a function of its weights, for the transforms.
"""

from .forward import hessian, jacfwd, jvp, linearize
from .functional_call import functional_call
from .reverse import grad, grad_and_value, jacrev, vjp
from .vmap import vmap

__all__ = [
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "linearize",
    "vjp",
    "vmap",
]
