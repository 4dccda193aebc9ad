"""``tvm.relax.op.grad``: operators used to express gradients and checkpoint stages.

So far the checkpoint markers (:mod:`.checkpoint_markers`); the backward operators
(``nll_loss_backward``, ``max_pool2d_backward``, ...) join them here.
"""

from .checkpoint_markers import end_checkpoint, start_checkpoint

__all__ = ["start_checkpoint", "end_checkpoint"]
