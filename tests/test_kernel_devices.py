"""Kernels make their arrays on the device of their inputs.

A kernel gets numpy arrays on the CPU and CuPy arrays on the GPU, and calls numpy's
functions either way: ``np.exp(x)`` dispatches to CuPy through ``__array_ufunc__``.
Functions that *create* an array from nothing but a shape or Python data
(``np.zeros(shape)``, ``np.arange(n)``, ``np.asarray(result)``) cannot dispatch, so
they always make a numpy array, and a GPU kernel that mixes it with CuPy arrays fails.
Kernels ask ``backend.xp(x)`` for the right module instead (``xp.zeros(shape)``), or
use ``backend.asarray(value, like=x)``.

No GPU is needed to catch the mistake: this test reads the kernel modules with
``ast`` and names every such call. A call that is genuinely CPU-only goes in
``ALLOWED``, with the reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "workbench"

# The modules whose code runs on tensors' arrays: kernels, gradient rules, layers,
# optimizers and in-place writes. (factories.py is not here: it builds arrays with
# numpy on purpose, then moves them to the device that was asked for.)
KERNEL_MODULES = sorted(
    [
        *PACKAGE.glob("ops/*.py"),
        *PACKAGE.glob("nn/*.py"),
        *PACKAGE.glob("optim/*.py"),
        PACKAGE / "ops/inplace.py",
    ]
)

# numpy functions that make a new array from shapes, Python numbers or lists, so their
# result is a numpy array whatever device the kernel's inputs are on. (Functions that
# take an array, such as np.zeros_like, np.where or np.pad, dispatch to CuPy and are fine.)
CREATING = {
    "array",
    "asarray",
    "asanyarray",
    "ascontiguousarray",
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "linspace",
    "eye",
    "identity",
    "tri",
    "indices",
}

# Calls that may stay, as {(module, enclosing function, numpy function): why}. The
# module is relative to workbench/, and each entry must still match a call (a stale
# entry fails test_every_allowed_call_still_exists).
ALLOWED: dict[tuple[str, str, str], str] = {
    # Nothing needs it today. An entry would look like:
    # ("ops/example.py", "_error_message", "arange"):
    #     "builds a Python-side index for an error message; never meets a device array",
}


def _numpy_imports(tree: ast.Module) -> tuple[set[str], dict[str, str]]:
    """The names numpy is imported under (``import numpy as np`` → {"np"}), and the
    creating functions imported from it (``from numpy import zeros as z`` → {"z": "zeros"})."""
    modules, functions = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "numpy"}
        elif isinstance(node, ast.ImportFrom) and node.module == "numpy":
            functions |= {a.asname or a.name: a.name for a in node.names if a.name in CREATING}
    return modules, functions


def creating_calls(source: str) -> list[tuple[int, str, str]]:
    """``(line, enclosing function, numpy function)`` for each array-creating numpy call.

    The enclosing function is the innermost ``def`` around the call, dotted through
    classes and outer functions (``Adam._update``), or ``<module>``.
    """
    tree = ast.parse(source)
    numpy, imported = _numpy_imports(tree)
    found = []

    def visit(node: ast.AST, scope: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scope = node.name if scope == "<module>" else f"{scope}.{node.name}"
        if isinstance(node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id in numpy
                and func.attr in CREATING
            ):
                found.append((node.lineno, scope, func.attr))  # np.zeros(...)
            elif isinstance(func, ast.Name) and func.id in imported:
                found.append((node.lineno, scope, imported[func.id]))  # zeros(...)
        for child in ast.iter_child_nodes(node):
            visit(child, scope)

    visit(tree, "<module>")
    return found


def _module_calls():
    for path in KERNEL_MODULES:
        module = path.relative_to(PACKAGE).as_posix()
        for line, scope, name in creating_calls(path.read_text(encoding="utf-8")):
            yield module, line, scope, name


def test_kernels_create_arrays_on_their_inputs_device():
    offenders = [
        f"workbench//{module}:{line} in {scope}(): np.{name}(...)"
        for module, line, scope, name in _module_calls()
        if (module, scope, name) not in ALLOWED
    ]
    if offenders:
        pytest.fail(
            "these calls make a numpy array even when the kernel's inputs are CuPy arrays on "
            "the GPU; use xp = backend.xp(x) and xp.zeros(...), xp.arange(...), or "
            "backend.asarray(value, like=x) (or, if the call is really CPU-only, add it to "
            "ALLOWED in this file with the reason):\n  " + "\n  ".join(offenders),
            pytrace=False,
        )


def test_every_allowed_call_still_exists():
    present = {(module, scope, name) for module, _, scope, name in _module_calls()}
    stale = sorted(set(ALLOWED) - present)
    assert not stale, f"ALLOWED lists calls that are gone; remove them: {stale}"


def test_the_scan_finds_creating_calls():
    """The checker itself: it must see through aliases and name the enclosing function."""
    source = (
        "import numpy as xnp\n"
        "from workbench import backend\n"
        "def kernel(x):\n"
        "    out = xnp.zeros(x.shape)\n"
        "    xp = backend.xp(x)\n"
        "    return out + xp.arange(3) + xnp.exp(x) + xnp.zeros_like(x)\n"
        "class Optimizer:\n"
        "    def step(self, x):\n"
        "        return xnp.asarray(x.sum())\n"
        "from numpy import arange as numbers, exp\n"
        "y = numbers(3) + exp(1.0)\n"
    )
    assert creating_calls(source) == [
        (4, "kernel", "zeros"),
        (9, "Optimizer.step", "asarray"),
        (11, "<module>", "arange"),
    ]
    assert creating_calls("import math\nmath.zeros = None\n") == []
