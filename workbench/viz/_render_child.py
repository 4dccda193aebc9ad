"""pygraphviz in a child process: DOT text on stdin, SVG or PNG bytes on stdout.

``python _render_child.py svg < graph.dot > graph.svg``

:mod:`workbench.viz.renderers` runs this file (by its path, so the child does not
import workbench) when there is no system ``dot``. Laying the graph out here rather
than in the notebook's process means a graph too big to lay out can be killed after
a time limit, and whatever Graphviz and its bundled fontconfig print on stderr goes
to the parent, which keeps it out of the notebook.

Exit status: 0 drawn, 1 Graphviz refused the graph (the reason is on stderr),
3 pygraphviz cannot be imported.
"""

import sys

NO_PYGRAPHVIZ = 3


def main(fmt: str) -> int:
    try:
        import pygraphviz
    except ImportError as err:
        print(f"cannot import pygraphviz: {err}", file=sys.stderr)
        return NO_PYGRAPHVIZ
    dot_source = sys.stdin.buffer.read().decode("utf-8")
    try:
        picture = pygraphviz.AGraph(string=dot_source).draw(format=fmt, prog="dot")
    except Exception as err:  # Graphviz has already printed its own "Error: ..." line
        print(f"Error: pygraphviz: {err}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(picture)
    return 0


if __name__ == "__main__":
    # This file's folder holds workbench.viz's own modules (dot.py, graph.py, ...), and
    # Python puts a script's folder first on the import path: take it off, so that none
    # of them can stand in for a module that pygraphviz imports.
    del sys.path[0]
    sys.exit(main(sys.argv[1]))
