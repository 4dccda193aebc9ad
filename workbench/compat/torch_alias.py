"""``workbench.as_torch()``: run a PyTorch program on the workbench, as it is written.

Put one line before the program's own imports (the first cell of a notebook, the top
of a script)::

    import workbench; workbench.as_torch()
    import torch                          # the workbench, under PyTorch's name
    import torch.nn as nn                 # workbench.nn
    from torch.utils.data import DataLoader

From then on, in this process, ``import torch`` and its submodules give the workbench's
modules (the table ``MODULES`` below); a ``torch`` submodule the workbench does not have
is refused with an ImportError that says so. ``docs/pytorch_compatibility.md`` lists
what is there, what is partly there and what is refused.

Nothing happens until ``as_torch()`` is called: ``import workbench`` never touches the
name ``torch``. It cannot be undone in a running process (modules that imported
``torch`` keep what they got): restart the kernel to get the real PyTorch back. And it
refuses to start when the real PyTorch is already imported, since the program would
then mix two libraries' tensors.
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys

# The name a PyTorch program imports → the workbench module that answers to it.
MODULES = {
    "torch": "workbench",
    "torch.nn": "workbench.nn",
    "torch.nn.functional": "workbench.nn.functional",
    "torch.nn.init": "workbench.nn.init",
    "torch.nn.parameter": "workbench.nn.parameter",
    "torch.nn.utils": "workbench.nn.utils",
    "torch.optim": "workbench.optim",
    "torch.optim.lr_scheduler": "workbench.optim.lr_scheduler",
    "torch.optim.optimizer": "workbench.optim.optimizer",
    "torch.optim.sgd": "workbench.optim.sgd",
    "torch.optim.adam": "workbench.optim.adam",
    "torch.optim.rmsprop": "workbench.optim.rmsprop",
    "torch.utils": "workbench.utils",
    "torch.utils.data": "workbench.utils.data",
    "torch.utils.data.dataloader": "workbench.utils.data.dataloader",
    "torch.utils.data.dataset": "workbench.utils.data.dataset",
    "torch.utils.data.sampler": "workbench.utils.data.sampler",
    "torch.utils.checkpoint": "workbench.utils.checkpoint",
    "torch.autograd": "workbench.autograd",
    "torch.autograd.functional": "workbench.autograd.functional",
    "torch.autograd.forward_ad": "workbench.record.forward_ad",
    "torch.autograd.function": "workbench.autograd.function",
    "torch.autograd.graph": "workbench.record.graph",
    "torch.autograd.grad_mode": "workbench.record.grad_mode",
    "torch.autograd.gradcheck": "workbench.autograd.gradcheck",
    "torch.serialization": "workbench.serialization",
    "torch.func": "workbench.func",
    "torch.cuda": "workbench.compat.cuda",
    "torch.accelerator": "workbench.compat.accelerator",
    "torch.backends": "workbench.compat.backends",
    "torch.random": "workbench.core.random",
}


def as_torch() -> None:
    """Make ``import torch`` (and ``torch.nn``, ``torch.utils.data``...) give the workbench.

    Call it before the program imports torch. Calling it again is harmless.
    """
    if is_active():
        return
    _refuse_if_real_torch_is_imported()
    for name, target in MODULES.items():
        sys.modules[name] = importlib.import_module(target)
    sys.meta_path.insert(0, _RefuseOtherTorchModules())


def is_active() -> bool:
    """Whether ``as_torch()`` has put the workbench under the name ``torch`` here."""
    return sys.modules.get("torch") is sys.modules.get("workbench")


def _refuse_if_real_torch_is_imported() -> None:
    real = [name for name in sys.modules if name == "torch" or name.startswith("torch.")]
    if real:
        where = getattr(sys.modules.get("torch"), "__file__", None) or real[0]
        raise RuntimeError(
            "as_torch(): the real PyTorch is already imported in this process "
            f"({where}), so `import torch` cannot become the workbench: tensors of the two "
            "libraries would mix. Restart the kernel (or the script) and run "
            "`import workbench; workbench.as_torch()` before anything imports torch."
        )


class _RefuseOtherTorchModules(importlib.abc.MetaPathFinder):
    """Answers an import of a ``torch`` submodule the workbench does not have with an
    ImportError naming it (instead of Python's bare "No module named")."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname.startswith("torch.") and fullname not in MODULES:
            reason = REFUSED.get(fullname, "the workbench has no such module")
            raise ModuleNotFoundError(
                f"No module named '{fullname}': the workbench stands in for torch here "
                f"(workbench.as_torch()), and {reason}. docs/pytorch_compatibility.md lists "
                "what it has.",
                name=fullname,
            )
        return None


# What PyTorch has and the workbench does not, with the reason a learner is told
# (``torch.X`` for a name of the torch module, ``torch.nn.X`` for one of torch.nn,
# ``Tensor.m`` for a tensor's method).
REFUSED = {
    "torch.distributions": "probability distributions are not part of the workbench; draw "
    "samples with randn, rand, normal, bernoulli or multinomial",
    "torch.jit": "TorchScript compiles models to run without Python; the workbench runs Python",
    "torch.fx": "graph capture is not part of the workbench (its own graph is loss.grad_fn)",
    "torch.export": "exporting models is not part of the workbench",
    "torch.onnx": "exporting models is not part of the workbench",
    "torch.distributed": "training on several processes or machines is not part of the workbench",
    "torch.multiprocessing": "the workbench runs in one process",
    "torch.sparse": "sparse tensors are not part of the workbench",
    "torch.linalg": "torch.linalg (solve, inv, svd, eig...) is not part of the workbench; it "
    "has matmul, mm, mv, bmm, dot, outer and norm",
    "torch.fft": "Fourier transforms are not part of the workbench",
    "torch.special": "special functions are not part of the workbench (it has erf)",
    "torch.hub": "downloading models is not part of the workbench",
    "torch.amp": "mixed precision (autocast, GradScaler) is not part of the workbench; cast "
    "with .half() or .bfloat16() by hand",
    "torch.autocast": "mixed precision (autocast, GradScaler) is not part of the workbench",
    "torch.profiler": "the profiler is not part of the workbench",
    "torch.nn.RNN": "recurrent layers (RNN, LSTM, GRU) are not part of the workbench",
    "torch.nn.LSTM": "recurrent layers (RNN, LSTM, GRU) are not part of the workbench",
    "torch.nn.GRU": "recurrent layers (RNN, LSTM, GRU) are not part of the workbench",
    "torch.nn.Transformer": "transformer and attention layers are not part of the workbench",
    "torch.nn.TransformerEncoderLayer": "transformer and attention layers are not part of the "
    "workbench",
    "torch.nn.MultiheadAttention": "transformer and attention layers are not part of the workbench",
    "torch.nn.Conv1d": "the workbench has 2-D convolution only (Conv2d)",
    "torch.nn.Conv3d": "the workbench has 2-D convolution only (Conv2d)",
    "torch.nn.ConvTranspose2d": "transposed convolution layers are not part of the workbench",
    "torch.topk": "sorting (topk, sort, argsort) is not part of the workbench yet",
    "torch.sort": "sorting (topk, sort, argsort) is not part of the workbench yet",
    "torch.argsort": "sorting (topk, sort, argsort) is not part of the workbench yet",
    "Tensor.topk": "sorting (topk, sort, argsort) is not part of the workbench yet",
    "Tensor.sort": "sorting (topk, sort, argsort) is not part of the workbench yet",
    "Tensor.argsort": "sorting (topk, sort, argsort) is not part of the workbench yet",
    "torch.optim.lr_scheduler.OneCycleLR": "OneCycleLR is not part of the workbench yet; "
    "LambdaLR can make any schedule",
}


def missing_tensor_attribute(name: str) -> str:
    """The AttributeError message for ``tensor.name``, which the workbench's Tensor lacks."""
    text = f"'Tensor' object has no attribute '{name}'"
    reason = REFUSED.get(f"Tensor.{name}")
    return text if reason is None else f"{text}: {reason} (PyTorch's torch.Tensor.{name})"


def not_here(module: str, name: str) -> str:
    """The AttributeError message for ``module.name`` (``workbench.nn``...), which the
    workbench lacks: PyTorch's name for it, and why, or where to look."""
    torch_name = "torch" + module.removeprefix("workbench") + "." + name
    reason = REFUSED.get(torch_name)
    text = f"module '{module}' has no attribute '{name}'"
    if reason is not None:
        return f"{text}: {reason} (PyTorch's {torch_name})"
    if name.startswith("__"):
        return text
    return f"{text} (docs/pytorch_compatibility.md lists what the workbench has of PyTorch)"
