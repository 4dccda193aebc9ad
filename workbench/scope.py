"""Name scopes: label the ops recorded inside a block, so pictures can fold them.

``with wb.name_scope("encoder"):`` pushes a name; every op recorded inside carries
the stack of names (``("encoder", "fc1")``) in its ``OpRecorded`` event. Modules
enter a scope named after their path in the model (``0.fc1``) each time they are
called, so a picture of an MLP can fold into one box per layer.

The stack is thread-local, like the grad mode: a thread sees only its own scopes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _ScopeState(threading.local):
    def __init__(self) -> None:
        self.stack: tuple[str, ...] = ()


_state = _ScopeState()


def current_scope() -> tuple[str, ...]:
    """The names of the scopes open in this thread, outermost first."""
    return _state.stack


@contextmanager
def name_scope(name: str) -> Iterator[tuple[str, ...]]:
    """Open a scope called ``name`` for the ops recorded inside the ``with`` block."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name_scope needs a non-empty string, got {name!r}")
    previous = _state.stack
    _state.stack = previous + (name,)
    try:
        yield _state.stack
    finally:
        _state.stack = previous
