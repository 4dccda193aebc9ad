"""The layers can be seen: imports point down, with one circle on purpose.

Every module of ``workbench/`` is parsed and the imports made when it is loaded (at the
top level of the module, not inside functions) become edges of a graph. A circle in that
graph means two layers each need the other to load. The one allowed: ``tensor.py`` imports
the op library at its very end, for the operator methods of ``Tensor`` (``x * y`` calls
``ops.mul``), and the ops need ``Tensor``.

``viz/`` (pictures) sits below ``widgets/`` (the Jupyter widgets that show them), so no
module of ``viz/`` imports ``widgets/``, not even inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "workbench"

# (importer, imported) edges made for the Tensor's operator methods: tensor.py's last lines.
TENSOR_METHODS = {
    ("workbench.core.tensor", "workbench.ops"),
    ("workbench.core.tensor", "workbench.ops.inplace"),
    ("workbench.core.tensor", "workbench.core.checks"),
    ("workbench.core.tensor", "workbench.core.factories"),  # x.new_zeros(), x.new_tensor()...
    (
        "workbench.core.tensor",
        "workbench.core.sampling",
    ),  # x.uniform_(), x.normal_(), x.multinomial()
}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported(node: ast.stmt, this: str, is_package: bool) -> list[str]:
    """The dotted names an import statement names (a module, or a name in one)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        package = this.split(".") if is_package else this.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join(package + ([node.module] if node.module else []))
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def module_of(name: str, known: dict) -> str | None:
    """The workbench module ``name`` is, or is in (``workbench.ops.mul`` -> ``workbench.ops``)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def edges(top_level_only: bool) -> set[tuple[str, str]]:
    known = modules()
    found = set()
    for this, path in known.items():
        tree = ast.parse(path.read_text())
        statements = tree.body if top_level_only else list(ast.walk(tree))
        ancestors = {".".join(this.split(".")[:i]) for i in range(1, this.count(".") + 1)}
        for node in statements:
            for name in imported(node, this, path.name == "__init__.py"):
                target = module_of(name, known)
                if target and target != this and target not in ancestors:
                    found.add((this, target))
    return found


def circles(graph: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iteratively)."""
    succ: dict[str, list[str]] = {}
    for a, b in graph:
        succ.setdefault(a, []).append(b)
        succ.setdefault(b, [])
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in succ:
        if root in index:
            continue
        work = [(root, iter(succ[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(succ[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_circle_but_the_tensors_operator_methods():
    graph = {(a, b) for a, b in edges(top_level_only=True) if (a, b) not in TENSOR_METHODS}
    assert circles(graph) == []


def test_the_allowed_circle_is_still_there():
    """Without the exception the tensor and the ops form a circle: the check is not blind."""
    assert any("workbench.core.tensor" in c for c in circles(edges(top_level_only=True)))


def test_viz_never_imports_widgets():
    found = sorted(
        f"{a} imports {b}"
        for a, b in edges(top_level_only=False)
        if a.startswith("workbench.viz") and b.startswith("workbench.widgets")
    )
    assert found == []


def test_every_layer_folder_says_what_it_holds_and_may_import():
    """From the tree alone (issue 35, point 1): each folder of ``workbench/`` is a layer
    with a README of a few lines that names what it may import."""
    folders = [p for p in PACKAGE.iterdir() if (p / "__init__.py").exists()]
    assert len(folders) >= 10, folders
    for folder in folders:
        readme = folder / "README.md"
        assert readme.exists(), f"{folder.name}/ has no README.md"
        assert "May import" in readme.read_text(), (
            f"{folder.name}/README.md says nothing of its imports"
        )
