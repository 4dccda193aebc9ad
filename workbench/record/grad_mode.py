"""Grad modes: no_grad, enable_grad, set_grad_enabled, inference_mode.

The mode is thread-local, as in PyTorch: a thread started inside ``no_grad`` still
records graphs. Each mode works as a context manager and as a decorator, with or
without parentheses (``@no_grad`` and ``@no_grad()``). The mode itself lives in
:mod:`workbench.core.state`; the classes here change it through its functions.
"""

from __future__ import annotations

import functools
import inspect

from ..core import state

# PyTorch's names, reached as torch.no_grad and as torch.autograd.no_grad: workbench/__init__.py
# takes these with `import *`, autograd/__init__.py names them one by one.
__all__ = [
    "enable_grad",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "no_grad",
    "set_grad_enabled",
]


def is_grad_enabled() -> bool:
    return state.grad_mode.enabled


def is_inference_mode_enabled() -> bool:
    return state.grad_mode.inference


class DecoratorContextManager:
    """Base for modes usable as ``with mode():`` and as ``@mode()``."""

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, func):
        """Each step of the generator runs in this mode; the caller's mode between steps."""

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with self.clone():
                    request = gen.send(None)
                while True:
                    try:
                        response = yield request
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as err:  # forward throw() into the generator
                        with self.clone():
                            request = gen.throw(err)
                    else:
                        with self.clone():
                            request = gen.send(response)
            except StopIteration as stop:
                return stop.value

        return wrapper

    def clone(self):
        return self.__class__()


class NoParamDecoratorContextManager(DecoratorContextManager):
    """Allows ``@no_grad`` without parentheses: ``no_grad(f)`` returns the wrapped ``f``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class GradModeSwitch(NoParamDecoratorContextManager):
    """Recording switched to ``enabled`` for the block; the mode before comes back after it."""

    enabled: bool

    def __enter__(self) -> None:
        self.prev = state.grad_mode.enabled
        state.set_grad_enabled_flag(self.enabled)

    def __exit__(self, *exc) -> None:
        state.set_grad_enabled_flag(self.prev)


class no_grad(GradModeSwitch):
    """Ops inside record no graph; factories given ``requires_grad=True`` still make leaves."""

    enabled = False


class enable_grad(GradModeSwitch):
    """Turn recording back on inside ``no_grad``."""

    enabled = True


class set_grad_enabled(DecoratorContextManager):
    """Set the mode now (plain call), for a block (``with``), or for a function (decorator).

    As a plain call it takes effect at once; as a decorator it leaves the caller's
    mode unchanged.
    """

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled expects a bool, got {type(mode).__name__}")
        self.prev = state.grad_mode.enabled
        self.mode = mode
        state.set_grad_enabled_flag(mode)

    def __call__(self, func):
        state.set_grad_enabled_flag(self.prev)
        return super().__call__(func)

    def __enter__(self) -> None:
        state.set_grad_enabled_flag(self.mode)

    def __exit__(self, *exc) -> None:
        state.set_grad_enabled_flag(self.prev)

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(DecoratorContextManager):
    """Like no_grad, and tensors made inside are inference tensors (never saved for backward)."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self.prev = (state.grad_mode.enabled, state.grad_mode.inference)
        # As in PyTorch, inference_mode(False) turns recording back on inside the mode.
        state.set_grad_enabled_flag(not self.mode)
        state.set_inference_flag(self.mode)

    def __exit__(self, *exc) -> None:
        enabled, inference = self.prev
        state.set_grad_enabled_flag(enabled)
        state.set_inference_flag(inference)

    def clone(self):
        return self.__class__(self.mode)
