"""Module: the base class of every layer and model, with PyTorch's API.

A module owns three kinds of things, each in its own dict so the bookkeeping
stays visible:

- ``_parameters``: the tensors it learns (:class:`Parameter`),
- ``_buffers``: tensors it keeps but does not learn (running statistics...),
- ``_modules``: its child modules.

Assigning an attribute puts the value in the right dict (``self.fc = Linear(...)``
registers a child), so ``parameters()``, ``state_dict()`` and ``repr()`` can walk
the tree. Calling a module runs ``forward`` inside a name scope named after the
module's path in the model (``"0.fc1"``), so pictures can fold a network's graph
into one box per layer.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

import workbench as wb
from workbench import Tensor
from workbench.core import checks, state
from workbench.core.tensor import (
    RemovableHandle,
    add_hook,
    is_differentiable_dtype,
    parse_to_arguments,
)

from .parameter import Parameter

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class _CallStack(threading.local):
    """The modules being called in this thread, each with the prefix of its children's paths."""

    def __init__(self) -> None:
        self.frames: list[tuple[Module, str]] = []


_calls = _CallStack()


class Module:
    """Base class for layers and models: subclass it and write ``forward``.

    Example::

        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(2, 16)
                self.fc2 = nn.Linear(16, 1)

            def forward(self, x):
                return self.fc2(self.fc1(x).relu())
    """

    training: bool

    def __init__(self) -> None:
        # Written through object.__setattr__: our own __setattr__ reads these dicts.
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", {})
        object.__setattr__(self, "_forward_hooks", {})

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    # ------------------------------------------------------------------ calling
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run forward hooks and ``forward`` inside this module's name scope."""
        if self._forward_pre_hooks:
            args = self._run_pre_hooks(args)
        path, prefix = self._call_path()
        self._place_parameters(prefix)
        frames = _calls.frames
        frames.append((self, prefix))
        outer_scope = state.push_name_scope(path)
        try:
            out = self.forward(*args, **kwargs)
        finally:
            state.restore_name_scopes(outer_scope)
            frames.pop()
        if self._forward_hooks:
            out = self._run_forward_hooks(args, out)
        return out

    def _run_pre_hooks(self, args: tuple) -> tuple:
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        return args

    def _run_forward_hooks(self, args: tuple, out: Any) -> Any:
        for hook in list(self._forward_hooks.values()):
            result = hook(self, args, out)
            if result is not None:
                out = result
        return out

    def _call_path(self) -> tuple[str, str]:
        """This call's scope name and the prefix for its children's names.

        A module called at top level is named by its class (``"Sequential"``) and its
        children by their path from it (``"0"``, ``"0.fc1"``), as in ``named_modules()``.
        """
        frames = _calls.frames
        if not frames:
            return type(self).__name__, ""
        caller, prefix = frames[-1]
        name = caller._path_of(self)
        if name is None:  # not one of the caller's submodules: name it by its class
            name = type(self).__name__
        path = prefix + name
        return path, path + "."

    def _place_parameters(self, prefix: str) -> None:
        """Each parameter learns its path in the model being called (``"0.weight"``), the
        name ``named_parameters()`` gives it: what a picture of the pass calls it."""
        for name, param in self._parameters.items():
            if isinstance(param, Parameter):  # (func.functional_call may put a plain tensor)
                param._module_path = prefix + name

    def _path_of(self, module: Module) -> str | None:
        for name, child in self._modules.items():
            if child is module:
                return name
        for name, child in self.named_modules():
            if child is module and name:
                return name
        return None

    def register_forward_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, args) -> None | new args`` runs before ``forward``."""
        hooks, handle = add_hook(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, args, output) -> None | new output`` runs after ``forward``."""
        hooks, handle = add_hook(self._forward_hooks, hook)
        return handle

    # ------------------------------------------------------------- registration
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(wb.nn.Parameter or None required)"
            )
        self._parameters[name] = param
        if param is not None and param._module_path is None:
            param._module_path = name  # until a call tells its whole path ("0.weight")

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Keep ``tensor`` with the module (moved by ``to()``, saved in ``state_dict``)."""
        self._check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                "(wb.Tensor or None required)"
            )
        persistent = checks.truth_arg("register_buffer", "persistent", persistent)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module")
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, name: str, kind: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        wb.core.checks.name_arg(
            "add_module" if kind == "module" else f"register_{kind}", "name", name
        )
        if name == "" or "." in name:
            raise KeyError(f'{kind} name can\'t be empty or contain ".", got: {name!r}')
        own = {"parameter": self._parameters, "buffer": self._buffers}.get(kind, self._modules)
        if hasattr(self, name) and name not in own:  # a plain attribute, or of another kind
            op = "add_module" if kind == "module" else f"register_{kind}"
            raise KeyError(
                f"{op}: attribute '{name}' already exists in {type(self).__name__}; "
                f"delete it first to register a {kind} under its name"
            )

    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            if isinstance(value, (Parameter, Module)):
                raise AttributeError(
                    f"cannot assign '{name}' before Module.__init__() call: call "
                    "super().__init__() first in your module's __init__"
                )
            object.__setattr__(self, name, value)
            return
        params, buffers, modules = self._parameters, self._buffers, self._modules
        if isinstance(value, Parameter):
            self._forget(name)
            self.register_parameter(name, value)
        elif name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(wb.nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Module):
            self._forget(name)
            modules[name] = value
        elif name in modules:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(wb.nn.Module or None expected)"
                )
            modules[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(wb.Tensor or None expected)"
                )
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        """Drop ``name`` from every registry (an attribute is changing kind)."""
        self.__dict__.pop(name, None)
        for registry in (self._parameters, self._buffers, self._modules):
            registry.pop(name, None)
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name: str) -> Any:
        # Only called when ordinary lookup fails: parameters, buffers and children.
        for registry in ("_parameters", "_buffers", "_modules"):
            values = self.__dict__.get(registry)
            if values is not None and name in values:
                return values[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry:
                del registry[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list:
        names = set(super().__dir__())
        names.update(self._parameters, self._buffers, self._modules)
        return sorted(names)

    # ------------------------------------------------------------------ walking
    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """This module and every module below it, with dotted paths ('' for this one)."""
        memo = set() if memo is None else memo
        stack = [(prefix, self)]
        while stack:  # depth-first, children in registration order, no recursion
            path, module = stack.pop()
            if remove_duplicate:
                if id(module) in memo:
                    continue
                memo.add(id(module))
            yield path, module
            children = [
                (f"{path}.{name}" if path else name, child)
                for name, child in module._modules.items()
                if child is not None
            ]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        for _, child in self.named_children():
            yield child

    def _named_members(self, registry: str, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        if recurse:
            modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            modules = [(prefix, self)]
        for path, module in modules:
            for name, value in getattr(module, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{path}.{name}" if path else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """``('fc1.weight', Parameter)`` pairs; a shared parameter appears once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """``('bn.running_mean', Tensor)`` pairs; a shared buffer appears once."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """``named_parameters()`` without the names."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """``named_buffers()`` without the names."""
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def get_submodule(self, target: str) -> Module:
        module = self
        for name in target.split(".") if target else []:
            if name not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
            module = module._modules[name]
        return module

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every submodule (children first), then on this module."""
        if not callable(fn):
            raise TypeError(f"Module.apply(): fn must be callable, not {type(fn).__name__}")
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # -------------------------------------------------------------- modes, grads
    def train(self, mode: bool = True) -> Module:
        """Training mode (the default): dropout drops. ``train(False)`` is ``eval()``."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode: dropout passes everything through."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients of the last backward (``.grad = None`` by default)."""
        for param in self.parameters():
            _zero_grad(param, set_to_none)

    # ------------------------------------------------------------ device, dtype
    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move parameters and buffers to a device and/or float dtype, in place. Read as
        ``Tensor.to`` reads its arguments; an integer or bool dtype is a TypeError, as in
        PyTorch (it would truncate the weights)."""
        device, dtype, _ = parse_to_arguments(args, kwargs)
        if dtype is not None:
            dtype = checks.dtype_arg("Module.to", dtype)
            if not is_differentiable_dtype(dtype):
                raise TypeError(
                    "nn.Module.to only accepts floating point or complex dtypes, but got "
                    f"desired dtype=wb.{dtype}"
                )

        def convert(t: Tensor) -> Tensor:
            cast = dtype if dtype is not None and is_differentiable_dtype(t.dtype) else None
            return t.detach().to(*(v for v in (device, cast) if v is not None))

        return self._apply(convert)

    def _apply(self, convert: Callable[[Tensor], Tensor]) -> Module:
        """Replace every parameter's data (and grad) and every buffer by ``convert(...)``."""
        for module in self.modules():
            for param in module._parameters.values():
                if param is None:
                    continue
                param.data = convert(param)
                if param.grad is not None:
                    param.grad = convert(param.grad)
            for name, buffer in module._buffers.items():
                if buffer is not None:
                    module._buffers[name] = convert(buffer)
        return self

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self) -> Module:
        return self.to("cuda")

    def float(self) -> Module:
        return self.to(wb.float32)

    def double(self) -> Module:
        return self.to(wb.float64)

    def half(self) -> Module:
        return self.to(wb.float16)

    def bfloat16(self) -> Module:
        return self.to(wb.bfloat16)

    # --------------------------------------------------------------- state dict
    def state_dict(
        self, destination: dict | None = None, prefix: str = "", keep_vars: bool = False
    ) -> OrderedDict:
        """Every parameter and persistent buffer by dotted name (detached unless keep_vars).
        A module registered under two names is saved under both, as PyTorch saves it."""
        if not isinstance(prefix, str):
            raise TypeError(f"state_dict(): prefix must be a str, not {type(prefix).__name__}")
        keep_vars = checks.truth_arg("state_dict", "keep_vars", keep_vars)
        out = OrderedDict() if destination is None else destination
        modules = self.named_modules(prefix=prefix.rstrip("."), remove_duplicate=False)
        for path, module in modules:
            for name, value in module._parameters.items():
                if value is not None:
                    out[_join(path, name)] = value if keep_vars else value.detach()
            for name, value in module._buffers.items():
                if value is not None and name not in module._non_persistent_buffers:
                    out[_join(path, name)] = value if keep_vars else value.detach()
        return out

    def load_state_dict(self, state_dict: dict, strict: bool = True) -> IncompatibleKeys:
        """Copy values from ``state_dict`` into this module's parameters and buffers.
        Each value must be a Tensor, as in PyTorch (a list or number is refused), or,
        friendlier than PyTorch, a numpy array: the workbench's own storage."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(
                f"Expected state_dict to be dict-like, got {type(state_dict).__name__}."
            )
        own = self.state_dict(keep_vars=True)
        missing = [key for key in own if key not in state_dict]
        unexpected = [key for key in state_dict if key not in own]
        errors = []
        if strict:
            if unexpected:
                keys = ", ".join(f'"{k}"' for k in unexpected)
                errors.append(f"Unexpected key(s) in state_dict: {keys}. ")
            if missing:
                keys = ", ".join(f'"{k}"' for k in missing)
                errors.append(f"Missing key(s) in state_dict: {keys}. ")
        updates = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            if isinstance(value, np.ndarray):  # friendlier than PyTorch: numpy is our storage
                value = wb.as_tensor(value)
            if not isinstance(value, Tensor):
                errors.append(
                    f'While copying the parameter named "{key}", expected a Tensor from '
                    f"checkpoint but received {type(value).__name__} (wrap it with wb.tensor)"
                )
            elif value.shape != target.shape:
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} "
                    f"from checkpoint, the shape in current model is {tuple(target.shape)}."
                )
            else:
                updates.append((target, value))
        if errors:
            details = "\n\t".join(errors)
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t{details}"
            )
        with wb.no_grad():
            for target, value in updates:
                target.copy_(value)
        return IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------- repr
    def extra_repr(self) -> str:
        """The text between the parentheses of this module's repr (its settings)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = [line for line in self.extra_repr().split("\n") if line]
        for name, child in self._modules.items():
            lines.append(f"({name}): " + _indent(repr(child), 2))
        if not lines:
            return self._get_name() + "()"
        if len(lines) == 1 and not self._modules:
            return f"{self._get_name()}({lines[0]})"
        body = "\n  ".join(lines)
        return f"{self._get_name()}(\n  {body}\n)"


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _indent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * spaces
    return lines[0] + "\n" + "\n".join(pad + line for line in lines[1:])


def _zero_grad(param: Tensor, set_to_none: bool) -> None:
    if param.grad is None:
        return
    if set_to_none:
        param.grad = None
        return
    grad = param.grad
    if grad.grad_fn is not None:
        grad = grad.detach()
        param.grad = grad
    else:
        grad.requires_grad_(False)
    with wb.no_grad():
        grad.zero_()
