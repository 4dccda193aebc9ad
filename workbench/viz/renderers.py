"""Turn DOT text into SVG or PNG: the system's ``dot`` if there is one, else pygraphviz.

Why two renderers, and why pygraphviz: Graphviz is a C program, and asking every
learner to install it with their system's package manager is the step where
set-up guides fail. pygraphviz's manylinux/macOS wheels bundle Graphviz's own
libraries (layout engines and the SVG/PNG renderers), so a pip install alone can
draw, with no ``dot`` on PATH. When a system ``dot`` exists it is used first: it is
what the user has chosen. Set ``WORKBENCH_RENDERER=dot`` or ``=pygraphviz`` to force one.

Either way the drawing happens in a child process, never in the notebook's:

* a time limit: laying out a big graph can take minutes, so after ``timeout``
  seconds (``TIMEOUT_S`` = 30 by default; ``render(..., timeout=120)``,
  ``graph.svg(timeout=120)``, ``workbench render --timeout 120``) the child is
  killed and :class:`RenderTimeout` says to fold the graph more. Interrupting the
  kernel kills the child too.
* quiet: Graphviz prints warnings on stderr, and pygraphviz's bundled fontconfig
  complains about newer system font configurations (``Fontconfig warning: ...
  unknown element "reset-dirs"``); no environment variable silences that, since it
  scans a folder compiled into the library. The child's stderr is captured instead:
  it is logged at DEBUG level on this module's logger, kept as ``.stderr`` on a
  :class:`RenderError`, and never printed.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

FORMATS = ("svg", "png")
TIMEOUT_S = 30
CHILD_SCRIPT = Path(__file__).with_name("_render_child.py")
NO_PYGRAPHVIZ = 3  # _render_child.py exits with it when it cannot import pygraphviz

INSTALL_HINT = (
    "Install the renderer extra: `pip install 'autodiff-workbench[render]'` (it brings pygraphviz, "
    "whose wheels bundle Graphviz, no system package needed), or install Graphviz so that "
    "`dot` is on PATH (`apt install graphviz`, `brew install graphviz`, `conda install "
    "graphviz`). The DOT text is always available as `graph.dot` without a renderer."
)

log = logging.getLogger(__name__)


class RenderError(RuntimeError):
    """The renderer failed; ``.stderr`` holds everything it printed."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


class RenderTimeout(RenderError):
    """Laying the graph out took longer than the time limit; the child was killed."""


class RendererMissing(RenderError):
    """Neither a system ``dot`` nor pygraphviz is available."""


def which_renderer() -> str:
    """``"dot"`` (a system Graphviz on PATH) or ``"pygraphviz"``; RendererMissing if neither."""
    forced = os.environ.get("WORKBENCH_RENDERER", "").strip().lower()
    if forced not in ("", "dot", "pygraphviz"):
        raise ValueError(f"WORKBENCH_RENDERER={forced!r}: use 'dot' or 'pygraphviz'")
    if forced != "pygraphviz" and shutil.which("dot"):
        return "dot"
    if forced != "dot" and _have_pygraphviz():
        return "pygraphviz"
    found = "neither `dot` on PATH nor pygraphviz"
    if forced == "dot":
        found = "no `dot` program on PATH (WORKBENCH_RENDERER=dot)"
    raise RendererMissing(f"cannot render the graph: found {found}. {INSTALL_HINT}")


def _have_pygraphviz() -> bool:
    """Is pygraphviz installed? Looked up, not imported: only the child imports it."""
    try:
        return importlib.util.find_spec("pygraphviz") is not None
    except (ImportError, ValueError):
        return False


def render(dot_source: str, fmt: str = "svg", timeout: float | None = None) -> bytes:
    """Lay out and draw ``dot_source`` in a child process; returns the SVG or PNG bytes.

    ``timeout`` is in seconds (``TIMEOUT_S`` when None). Raises RenderTimeout past it,
    RenderError if the renderer fails, RendererMissing if there is none.
    """
    if fmt not in FORMATS:
        raise ValueError(f"cannot render to {fmt!r}: choose one of {FORMATS} (or save the .dot)")
    renderer = which_renderer()
    if renderer == "dot":
        command = [shutil.which("dot") or "dot", f"-T{fmt}"]
    else:
        command = [sys.executable, str(CHILD_SCRIPT), fmt]
    limit = TIMEOUT_S if timeout is None else timeout
    return _run(command, dot_source, limit, renderer)


def _run(command: list, dot_source: str, timeout: float, renderer: str) -> bytes:
    """Run one renderer child: DOT in, picture out, stderr kept; killed past ``timeout``."""
    # A session of its own, so that killing it kills anything it started as well.
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as child:
        try:
            picture, said = child.communicate(dot_source.encode("utf-8"), timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RenderTimeout(_too_slow_message(renderer, timeout)) from None
        finally:
            _stop(child)  # still running after a timeout, or a KeyboardInterrupt
    stderr = said.decode("utf-8", "replace")
    if stderr.strip():
        log.debug("%s printed on stderr:\n%s", renderer, stderr)
    if renderer == "pygraphviz" and child.returncode == NO_PYGRAPHVIZ:
        reason = first_error_line(stderr)
        raise RendererMissing(f"cannot render the graph: {reason}. {INSTALL_HINT}", stderr)
    if child.returncode != 0:
        reason = first_error_line(stderr)
        raise RenderError(f"{renderer} failed (exit {child.returncode}): {reason}", stderr)
    return picture


def _stop(child: subprocess.Popen) -> None:
    """Kill ``child``, and everything in its session, if it is still running."""
    if child.poll() is not None:
        return
    try:
        if hasattr(os, "killpg"):
            os.killpg(child.pid, signal.SIGKILL)
        else:  # Windows: no process groups to kill
            child.kill()
    except ProcessLookupError:
        pass
    child.wait()


def _too_slow_message(renderer: str, timeout: float) -> str:
    return (
        f"{renderer} took longer than {timeout:g} s to lay out this graph: it is too big to "
        "lay out in time. Fold it more (`wb.viz.draw(..., fold_limit=50)`, or "
        "`workbench render --fold-limit 50`), draw a smaller part of it, or allow more time "
        "(`graph.svg(timeout=120)`, `workbench render --timeout 120`)."
    )


def first_error_line(stderr: str) -> str:
    """The line that says what went wrong: warnings (fontconfig's come first) are skipped."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("Error")]
    others = [line for line in lines if "warning" not in line.lower()]
    return (errors or others or lines or ["it printed nothing on stderr"])[0]
