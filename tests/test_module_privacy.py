"""No module of workbench reads or writes another module's private names.

A name that starts with one underscore is a module's own business. Another module
that needs it goes through a public function or object instead; global state (grad
mode, anomaly mode, the checkpoint stage recorder, ...) lives in
:mod:`workbench.core.state` and is changed only by its functions, so every change can be
found by searching for one name.

The checks parse every file in ``workbench/``. The first flags ``module._name`` where
``module`` was bound by importing a workbench module: ``from . import dispatch``,
``from ..autograd import grad_mode``, ``import workbench.core.scope as scope``,
``import workbench as wb`` (then ``wb.core.scope._state`` counts too), or
``importlib.import_module("workbench.core.tensor")``. Attributes of objects
(``tensor._data``, ``node._seq``) are not module names and are not checked, and
neither is a private submodule (``workbench.ops.inplace``): it belongs to the package.
The second flags assignments, outside ``workbench/core/state.py``, to another module's
names (``tensor._ops = ...``) or to the attributes of the state's objects
(``state.grad_mode.enabled = False``).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workbench"
STATE = "workbench.core.state"


def module_name(path: Path) -> str:
    """``workbench/autograd/engine.py`` -> ``workbench.autograd.engine``."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of workbench."""
    if dotted != "workbench" and not dotted.startswith("workbench."):
        return False
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def imported_names(tree: ast.Module, this: str, is_package: bool) -> dict[str, str]:
    """Every name an import binds anywhere in the file, and what it names (``a.b.c``)."""
    package = this if is_package else this.rpartition(".")[0]
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:  # ``import workbench.x`` binds ``workbench``
                    bound[alias.name.partition(".")[0]] = alias.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parents = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parents + ([node.module] if node.module else []))
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{base}.{alias.name}"
        elif isinstance(node, ast.Assign) and _is_import_module_call(node.value):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = node.value.args[0].value
    return bound


def imported_modules(tree: ast.Module, this: str, is_package: bool) -> dict[str, str]:
    """The names bound anywhere in the file to a workbench module, and the module."""
    bound = imported_names(tree, this, is_package)
    return {name: dotted for name, dotted in bound.items() if is_module(dotted)}


def _is_import_module_call(value: ast.expr) -> bool:
    """``importlib.import_module("...")`` (or ``import_module("...")``)."""
    if not isinstance(value, ast.Call) or not value.args:
        return False
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    first = value.args[0]
    return (
        name == "import_module" and isinstance(first, ast.Constant) and isinstance(first.value, str)
    )


def module_of(expr: ast.expr, bound: dict[str, str]) -> str | None:
    """The workbench module ``expr`` names (``dispatch``, ``wb.core.scope``), or None."""
    if isinstance(expr, ast.Name):
        return bound.get(expr.id)
    if _is_import_module_call(expr):
        dotted = expr.args[0].value
        return dotted if is_module(dotted) else None
    if isinstance(expr, ast.Attribute):
        outer = module_of(expr.value, bound)
        if outer is not None and is_module(f"{outer}.{expr.attr}"):
            return f"{outer}.{expr.attr}"
    return None


def private_accesses(source: str, this: str, is_package: bool = False) -> list[str]:
    """``line: module._name`` for each access of another module's private name, also as
    ``from module import _name``."""
    tree = ast.parse(source)
    bound = imported_modules(tree, this, is_package)
    found = private_imports(tree, this, is_package)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not is_private(node.attr):
            continue
        owner = module_of(node.value, bound)
        if owner is None or owner == this or is_module(f"{owner}.{node.attr}"):
            continue
        found.append((node.lineno, f"{node.lineno}: {owner}.{node.attr}"))
    return [access for _, access in sorted(found)]


def assigned_attributes(tree: ast.Module) -> list[ast.Attribute]:
    """The ``a.b`` targets of every assignment (``=``, ``+=``, ``del``, unpacking)."""
    targets = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets += node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets.append(node.target)
    found = []
    while targets:
        target = targets.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            targets += target.elts
        elif isinstance(target, ast.Starred):
            targets.append(target.value)
        elif isinstance(target, ast.Attribute):
            found.append(target)
    return found


def state_writes(source: str, this: str, is_package: bool = False) -> list[str]:
    """``line: what`` for each assignment to another module's name or to the state's objects."""
    if this == STATE:
        return []
    tree = ast.parse(source)
    names = imported_names(tree, this, is_package)
    modules = {name: dotted for name, dotted in names.items() if is_module(dotted)}
    state_objects = {name for name, dotted in names.items() if dotted.startswith(STATE + ".")}
    found = []
    for target in assigned_attributes(tree):
        owner = target.value
        module = module_of(owner, modules)
        if module is not None and module != this:  # tensor._ops = ...
            found.append((target.lineno, f"{target.lineno}: {module}.{target.attr}"))
        elif isinstance(owner, ast.Attribute) and module_of(owner.value, modules) == STATE:
            found.append((target.lineno, f"{target.lineno}: state.{owner.attr}.{target.attr}"))
        elif isinstance(owner, ast.Name) and owner.id in state_objects:  # from .state import x
            found.append((target.lineno, f"{target.lineno}: state.{owner.id}.{target.attr}"))
    return [write for _, write in sorted(found)]


def private_imports(tree: ast.Module, this: str, is_package: bool) -> list[tuple]:
    """``(line, "module._name")`` for each ``from module import _name`` of another module."""
    found = []
    for dotted in imported_names(tree, this, is_package).values():
        owner, _, attr = dotted.rpartition(".")
        if is_private(attr) and is_module(owner) and owner != this and not is_module(dotted):
            line = next(
                node.lineno
                for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and any(a.name == attr for a in node.names)
            )
            found.append((line, f"{line}: {dotted}"))
    return found


def offenders(check) -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = check(path.read_text(), module_name(path), path.name == "__init__.py")
        found += [f"{path.relative_to(ROOT)}:{line}" for line in lines]
    return found


def test_no_module_touches_another_modules_private_names():
    found = offenders(private_accesses)
    assert not found, "private names of other modules used:\n" + "\n".join(found)


def test_only_the_state_module_changes_global_state():
    found = offenders(state_writes)
    assert not found, "state changed outside workbench/core/state.py:\n" + "\n".join(found)


def test_the_check_finds_each_kind_of_import():
    source = """
import importlib
import workbench as wb
import workbench.core.scope as scope_module
from . import dispatch
from ..core import scope
from . import grad_mode as modes

dispatch._stage.record = None
wb.record.dispatch._anomaly
scope._state.stack
scope_module._state
modes._state.enabled
importlib.import_module("workbench.core.tensor")._ops
tensor_module = importlib.import_module("workbench.core.tensor")
tensor_module._ops = None
from .grad_mode import _DecoratorContextManager
"""
    found = private_accesses(source, "workbench.record.recompute")
    assert [line.partition(": ")[2] for line in found] == [
        "workbench.record.dispatch._stage",
        "workbench.record.dispatch._anomaly",
        "workbench.core.scope._state",
        "workbench.core.scope._state",
        "workbench.record.grad_mode._state",
        "workbench.core.tensor._ops",
        "workbench.core.tensor._ops",
        "workbench.record.grad_mode._DecoratorContextManager",
    ]


def test_the_check_leaves_object_attributes_and_own_names_alone():
    source = """
from . import dispatch
from ..ops import inplace as _inplace
from ..core.tensor import Tensor

def f(x, node):
    x._data, node._seq, Tensor._make, dispatch.__name__
    _inplace.check_inplace(x)
    dispatch.apply_op
"""
    assert private_accesses(source, "workbench.record.recompute") == []
    own = "from . import dispatch\ndispatch._stage"
    assert private_accesses(own, "workbench.record.dispatch") == []


def test_the_state_check_finds_writes_from_outside():
    source = """
import importlib
from ..core import state
from ..core.state import grad_mode
from ..record import dispatch

state.grad_mode.enabled = False
grad_mode.inference, x = True, 1
state.anomaly.enabled += 1
del state.stage.record
dispatch.apply_op = None
importlib.import_module("workbench.core.tensor")._ops = None
x.y = state.grad_mode.enabled  # reading is fine, and so is writing an object's attribute
state.set_grad_enabled_flag(False)
"""
    found = state_writes(source, "workbench.autograd.engine")
    assert [line.partition(": ")[2] for line in found] == [
        "state.grad_mode.enabled",
        "state.grad_mode.inference",
        "state.anomaly.enabled",
        "state.stage.record",
        "workbench.record.dispatch.apply_op",
        "workbench.core.tensor._ops",
    ]
    assert state_writes(source, STATE) == []
