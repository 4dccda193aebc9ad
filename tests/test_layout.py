"""The layout: module names that explain themselves, and a README that matches the tree.

No two modules of ``workbench/`` may have names that say the same thing. Two names
say the same thing when, after each word has lost its ending (``reductions`` and
``reduce`` both become ``reduc``, ``checkpointing`` becomes ``checkpoint``), they are
equal or one starts with all the words of the other (``checkpoint`` and
``checkpoint_markers``). A package's name counts too (``nn/``). The stemming is crude
on purpose: it only has to catch one word in two forms. Names that differ in every
word but mean the same thing (``elementwise`` and ``math`` did) are for reviewers.

Some pairs are meant, mostly because PyTorch or TVM use the name in both places. They
are in ``ALLOWED``, each with its reason; an entry that no longer matches a pair fails
``test_every_allowed_pair_still_exists``.

The README's "Layout" table names paths (``workbench/ops/{unary,scans}.py`` stands for
two); each must exist, and every module of ``workbench/ops/`` must be in the table.
"""

from __future__ import annotations

import re
from itertools import combinations
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "workbench"

# Plural and verbal endings, longest first: "reductions" -> "reduc", "reduce" -> "reduc".
ENDINGS = ("tions", "tion", "ions", "ion", "ings", "ing", "es", "s", "e")

# {pair of modules (paths relative to workbench/): why both names stay}
ALLOWED: dict[frozenset, str] = {
    frozenset({"record/forward_ad.py", "func/forward.py"}): (
        "PyTorch's paths: torch.autograd.forward_ad (dual tensors) and torch.func's "
        "forward-mode transforms (jvp, jacfwd, hessian, linearize)"
    ),
    frozenset({"autograd/functional.py", "nn/functional.py"}): (
        "PyTorch's paths: torch.autograd.functional and torch.nn.functional"
    ),
    frozenset({"autograd/functional.py", "func/functional_call.py"}): (
        "PyTorch's names: torch.autograd.functional (jacobian, hessian...) and "
        "torch.func.functional_call (a module run with other tensors as its parameters)"
    ),
    frozenset({"func/functional_call.py", "nn/functional.py"}): (
        "PyTorch's names: torch.func.functional_call and torch.nn.functional (F.relu...)"
    ),
    frozenset({"record/grad_mode.py", "ops/grad.py"}): (
        "PyTorch's torch.autograd.grad_mode and TVM's tvm.relax.op.grad"
    ),
    frozenset({"core/backend.py", "compat/backends.py"}): (
        "backend.py picks numpy or CuPy; backends.py is PyTorch's torch.backends (cudnn, mps "
        "switches a PyTorch program sets), a path PyTorch programs import"
    ),
    frozenset({"nn/utils.py", "utils/"}): (
        "PyTorch's paths: torch.nn.utils (gradient clipping) and torch.utils (data, checkpoint)"
    ),
    frozenset({"autograd/function.py", "func/"}): (
        "PyTorch's paths: torch.autograd.function (Function) and torch.func (the transforms)"
    ),
    frozenset({"record/graph.py", "viz/graph.py"}): (
        "torch.autograd.graph (nodes, saved-tensor hooks) and the drawing of a graph"
    ),
    frozenset({"record/memory.py", "viz/memory.py"}): (
        "saved-tensor memory: counted in autograd/, plotted in viz/"
    ),
    frozenset({"nn/losses.py", "ops/losses.py"}): (
        "the loss ops PyTorch records as one node (mse_loss, binary cross entropy: kernels "
        "and rules) and, in nn/, the loss modules that call them (torch.nn.MSELoss...)"
    ),
    frozenset({"nn/", "ops/nn.py"}): (
        "the kernels and rules of the nn ops (conv2d, pools, losses) and, in nn/, the "
        "layers built on them (torch.nn)"
    ),
    frozenset({"trace/", "widgets/trace_steps.py"}): (
        "trace_steps.py turns a saved trace into the stepper's steps: its name says both"
    ),
    frozenset({"utils/checkpoint.py", "widgets/checkpoint_explorer.py"}): (
        "torch.utils.checkpoint's path, and the widget that explores it"
    ),
    frozenset({"viz/live.py", "widgets/live.py"}): (
        "viz/live.py draws live tensors (not a saved trace); widgets/live.py is LiveGraph"
    ),
}


def stem(word: str) -> str:
    """``word`` without its first matching ending (at least three letters stay)."""
    for ending in ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


def stemmed_words(name: str) -> tuple:
    """``checkpoint_markers`` -> ``("checkpoint", "marker")``; ``_inplace`` -> ``("inplac",)``."""
    return tuple(stem(word) for word in name.strip("_").split("_"))


def say_the_same(a: str, b: str) -> bool:
    """Equal after stemming, or one name's words begin the other's."""
    short, long = sorted((stemmed_words(a), stemmed_words(b)), key=len)
    return long[: len(short)] == short


def module_names() -> dict[str, str]:
    """Every module and package under workbench/, as {path relative to workbench/: name}."""
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name != "__init__.py":
            names[path.relative_to(PACKAGE).as_posix()] = path.stem
        elif path.parent != PACKAGE:
            names[path.parent.relative_to(PACKAGE).as_posix() + "/"] = path.parent.name
    return names


def same_name_pairs() -> set[frozenset]:
    pairs = combinations(module_names().items(), 2)
    return {frozenset({pa, pb}) for (pa, a), (pb, b) in pairs if say_the_same(a, b)}


def test_the_check_finds_one_word_in_two_forms():
    assert say_the_same("reduce", "reductions")
    assert say_the_same("checkpoint", "checkpointing")
    assert say_the_same("checkpoint", "checkpoint_markers")
    assert not say_the_same("steps", "stepper")
    assert not say_the_same("function", "functional")
    assert not say_the_same("trace", "from_trace")


def test_no_two_modules_have_names_that_say_the_same_thing():
    found = sorted(" and ".join(sorted(pair)) for pair in same_name_pairs() - ALLOWED.keys())
    assert not found, "modules whose names say the same thing:\n" + "\n".join(found)


def test_every_allowed_pair_still_exists():
    stale = sorted(" and ".join(sorted(pair)) for pair in ALLOWED.keys() - same_name_pairs())
    assert not stale, "ALLOWED entries that match no pair any more:\n" + "\n".join(stale)


def expand_braces(path: str) -> list[str]:
    """``a/{b,c}.py`` -> ``["a/b.py", "a/c.py"]`` (one pair of braces at most)."""
    match = re.search(r"\{([^}]*)\}", path)
    if match is None:
        return [path]
    head, tail = path[: match.start()], path[match.end() :]
    return [head + part + tail for part in match.group(1).split(",")]


def layout_paths() -> list[str]:
    """The paths in the first column of the README's "Layout" table."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]  # no header
    paths = []
    for row in rows:
        first_cell = row.split("|")[1]
        for quoted in re.findall(r"`([^`]+)`", first_cell):
            paths += expand_braces(quoted)
    return paths


def test_every_path_in_the_readme_layout_exists():
    paths = layout_paths()
    assert "workbench/ops/broadcasting.py" in paths  # the table was found and read
    missing = [path for path in paths if not (ROOT / path).exists()]
    assert not missing, "README's Layout table names paths that do not exist: " + str(missing)


def test_the_readme_layout_names_every_op_module():
    listed = set(layout_paths())
    modules = sorted(
        path.relative_to(ROOT).as_posix()
        for path in (PACKAGE / "ops").glob("*.py")
        if path.name != "__init__.py"
    )
    unlisted = [module for module in modules if module not in listed]
    assert not unlisted, "ops modules missing from README's Layout table: " + str(unlisted)
