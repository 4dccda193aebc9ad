"""Turn DOT text into SVG or PNG: the system's ``dot`` if there is one, else pygraphviz.

Why two renderers, and why pygraphviz: Graphviz is a C program, and asking every
learner to install it with their system's package manager is the step where
set-up guides fail. pygraphviz's manylinux/macOS wheels bundle Graphviz's own
libraries (layout engines and the SVG/PNG renderers), so ``pip install workbench``
alone can draw, in-process, with no ``dot`` on PATH. When a system ``dot`` exists
it is used first: it is what the user has chosen, and it runs in a subprocess with
a timeout, so a pathological graph can never hang the notebook.

Set ``WORKBENCH_RENDERER=dot`` or ``=pygraphviz`` to force one.
"""

from __future__ import annotations

import os
import shutil
import subprocess

FORMATS = ("svg", "png")
TIMEOUT_S = 60

INSTALL_HINT = (
    "Install one of them: `pip install pygraphviz` (its wheels bundle Graphviz, no system "
    "package needed), or Graphviz itself (`apt install graphviz`, `brew install graphviz`, "
    "`conda install graphviz`) so that `dot` is on PATH. The DOT text is always available "
    "as `graph.dot` without a renderer."
)


class RendererMissing(RuntimeError):
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
    looked = "a `dot` program on PATH" if forced == "dot" else "`dot` on PATH or pygraphviz"
    raise RendererMissing(f"cannot render the graph: found neither {looked}. {INSTALL_HINT}")


def _have_pygraphviz() -> bool:
    try:
        import pygraphviz  # noqa: F401
    except ImportError:
        return False
    return True


def render(dot_source: str, fmt: str = "svg") -> bytes:
    """Lay out and draw ``dot_source``; returns the SVG or PNG bytes."""
    if fmt not in FORMATS:
        raise ValueError(f"cannot render to {fmt!r}: choose one of {FORMATS} (or save the .dot)")
    if which_renderer() == "dot":
        return _render_with_dot(dot_source, fmt)
    return _render_with_pygraphviz(dot_source, fmt)


def _render_with_dot(dot_source: str, fmt: str) -> bytes:
    try:
        done = subprocess.run(
            [shutil.which("dot") or "dot", f"-T{fmt}"],
            input=dot_source.encode("utf-8"),
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(
            f"Graphviz `dot` took longer than {TIMEOUT_S} s to lay out this graph; draw it "
            "with folding on (the default) or a smaller part of the graph"
        ) from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        raise RuntimeError(f"Graphviz `dot` failed (exit {done.returncode}): {message}")
    return done.stdout


def _render_with_pygraphviz(dot_source: str, fmt: str) -> bytes:
    import pygraphviz

    graph = pygraphviz.AGraph(string=dot_source)
    return graph.draw(format=fmt, prog="dot")
