"""``functional_call``: a module run as a pure function of its parameters and buffers.

The transforms differentiate a function with respect to its *arguments*, but a module
keeps its weights as attributes. ``functional_call(model, params, x)`` bridges the two:
it puts the tensors of ``params`` in place of the module's own (by their
``named_parameters()``/``named_buffers()`` names, ``"0.weight"``), calls the module, and
puts the module's own back, also when the call raises. So

    grad(lambda p: loss(functional_call(model, p, x)))(params)

differentiates the model's output with respect to ``params``, and ``vmap`` over it
gives per-example gradients (torch.func's recipe).

As in PyTorch: a name the dicts leave out keeps the module's own tensor (with
``strict=True`` every name must be there and no other, else a RuntimeError naming the
missing and unexpected keys); with ``tie_weights`` a tensor the module holds under two
names (tied weights) is replaced under both. A tensor the module replaces during the
call (``self.count = self.count + 1``) ends up in the dict it came from.

``func`` sits below ``nn`` in the layers, so it knows a module by what it has (the three
registries every ``nn.Module`` keeps: ``_parameters``, ``_buffers``, ``_modules``),
not by its class.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from ..core.tensor import Tensor

_MISSING = object()  # a name the module did not have before the call


def functional_call(
    module: Any,
    parameter_and_buffer_dicts: dict[str, Tensor] | Sequence[dict[str, Tensor]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts`` (a
    dict, or a tuple/list of dicts with distinct keys) in place of the module's own
    parameters and buffers, restored afterwards. ``args`` that is not a tuple is the
    one positional argument."""
    tensors = _merged(parameter_and_buffer_dicts)
    if not _is_module(module):
        # PyTorch's exception types: the tied-weights search fails first, else the swap
        error = AttributeError if tie_weights else TypeError
        raise error(f"functional_call: {module!r} is not an instance of nn.Module")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, tensors, tie_weights, strict):
        return module(*args, **kwargs)


def _merged(dicts) -> dict:
    """One dict from ``dicts`` (PyTorch's checks and messages)."""
    if isinstance(dicts, dict):
        return dicts
    if not isinstance(dicts, Sequence):
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, "
            f"but got {type(dicts)}"
        )
    if not all(isinstance(d, dict) for d in dicts):
        raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
    keys = [key for d in dicts for key in d]
    repeated = list(dict.fromkeys(key for key in keys if keys.count(key) > 1))
    if repeated:
        raise ValueError(
            f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
            "ambiguous"
        )
    return {key: value for d in dicts for key, value in d.items()}


def _is_module(obj: Any) -> bool:
    registries = ("_parameters", "_buffers", "_modules")
    return all(isinstance(getattr(obj, name, None), dict) for name in registries)


@contextlib.contextmanager
def _swapped(module, tensors: dict, tie_weights: bool, strict: bool):
    """Inside: ``module`` holds ``tensors``; outside, its own again, and ``tensors``
    holds what the module held at the end (a tensor it replaced in the call)."""
    wanted = _with_tied_names(module, tensors) if tie_weights else tensors
    if strict:
        _check_keys(module, wanted)
    originals = _swap_all(module, wanted)
    try:
        yield
    finally:
        final = _swap_all(module, originals)
        tensors.update({name: final[name] for name in tensors if name in final})


def _named_tensors(module) -> list:
    """Every (name, tensor) of the module, a tensor held under two names listed twice."""
    return [
        *module.named_parameters(remove_duplicate=False),
        *module.named_buffers(remove_duplicate=False),
    ]


def _with_tied_names(module, tensors: dict) -> dict:
    """``tensors``, each given tensor also under the other names of a tensor the module
    holds under several (tied weights); two different values for one tied tensor are
    refused, as in PyTorch."""
    names_of: dict[int, list] = {}
    for name, tensor in _named_tensors(module):
        names_of.setdefault(id(tensor), []).append(name)
    groups = {name: names for names in names_of.values() if len(names) > 1 for name in names}
    untied = dict(tensors)
    for name in tensors:
        if name not in groups:
            continue
        given = {id(tensors[tied]) for tied in groups[name] if tied in tensors}
        if len(given) > 1:
            raise ValueError(
                f"functional_call got multiple values for keys {sorted(groups[name])}, which "
                "are tied. Consider using tie_weights=False"
            )
        untied.update({tied: tensors[name] for tied in groups[name]})
    return untied


def _check_keys(module, tensors: dict) -> None:
    """``strict``: exactly the module's names, PyTorch's RuntimeError otherwise."""
    valid = {name for name, _ in _named_tensors(module)}
    problems = []
    unexpected, missing = sorted(set(tensors) - valid), sorted(valid - set(tensors))
    if unexpected:
        problems.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        problems.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if problems:
        raise RuntimeError(
            f"Error(s) in reparametrizing for {module._get_name()}:\n\t" + "\n\t".join(problems)
        )


def _swap_all(module, tensors: dict) -> dict:
    """Put each of ``tensors`` in the module under its name; return what was there. If
    one cannot be put, the ones already swapped go back before the error propagates."""
    before: dict = {}
    try:
        for name, tensor in tensors.items():
            before[name] = _swap(module, name, tensor)
    except Exception:
        for name, tensor in before.items():
            _swap(module, name, tensor)
        raise
    return before


def _swap(module, name: str, tensor):
    """Put ``tensor`` at the dotted ``name`` (``_MISSING``: remove it); return what was
    there (``_MISSING`` for nothing). A name that is neither a parameter nor a buffer
    becomes a plain attribute for the call, as in PyTorch."""
    if not isinstance(name, str):  # (PyTorch's type: it fails on name.rpartition)
        raise AttributeError(f"functional_call: the key {name!r} is not a name (a str)")
    path, _, attr = name.rpartition(".")
    owner = _submodule(module, path, name)
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"functional_call: the value for '{name}' is {tensor!r}, not a Tensor")
    if not attr:
        raise KeyError(f"functional_call: '{name}' ends in an empty tensor name")
    for registry in (owner._parameters, owner._buffers):
        if attr in registry:
            old = registry[attr]
            if tensor is _MISSING:
                del registry[attr]
            else:
                registry[attr] = tensor
            return old
    old = getattr(owner, attr, _MISSING)
    if old is not _MISSING and old is not None and not isinstance(old, Tensor):
        raise TypeError(
            f"functional_call: '{name}' names the attribute `{attr}` of {owner._get_name()}, "
            f"which is {old!r}, not a Tensor"
        )
    if tensor is not _MISSING:
        setattr(owner, attr, tensor)
    elif old is not _MISSING:
        delattr(owner, attr)
    return old


def _submodule(module, path: str, name: str):
    """The module at the dotted ``path`` below ``module`` (PyTorch's exception types)."""
    walked = []
    for part in path.split(".") if path else []:
        child = getattr(module, part, _MISSING)
        if child is _MISSING:
            raise AttributeError(
                f"functional_call: '{name}': {module._get_name()} has no attribute `{part}`"
            )
        walked.append(part)
        if not _is_module(child):
            raise TypeError(
                f"functional_call: '{name}': `{'.'.join(walked)}` is a "
                f"{type(child).__name__}, not an nn.Module"
            )
        module = child
    return module
