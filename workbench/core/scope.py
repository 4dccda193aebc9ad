"""Name scopes: label the ops recorded inside a block, so pictures can fold them.

``with wb.name_scope("encoder"):`` pushes a name; every op recorded inside carries
the stack of names (``("encoder", "fc1")``) in its ``OpRecorded`` event. Modules
enter a scope named after their path in the model (``0.fc1``) each time they are
called, so a picture of an MLP can fold into one box per layer.

The stack is thread-local, like the grad mode: a thread sees only its own scopes.
It lives in :mod:`workbench.core.state` (``state.name_scopes``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from . import checks, state


def current_scope() -> tuple[str, ...]:
    """The names of the scopes open in this thread, outermost first."""
    return state.name_scopes.stack


@contextmanager
def name_scope(name: str) -> Iterator[tuple[str, ...]]:
    """Open a scope called ``name`` for the ops recorded inside the ``with`` block."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name_scope needs a non-empty string, got {name!r}")
    checks.name_arg("name_scope", "name", name)
    previous = state.push_name_scope(name)
    try:
        yield state.name_scopes.stack
    finally:
        state.restore_name_scopes(previous)
