"""Grading apart from the learner's code: a graded cell checked by a fresh checker.

Under ``nbgrader autograde`` the learner's cells and the checker run in one kernel, so a
learner's cell could disarm the checker before the graded cell runs::

    import workbench.exercises as _e; _e.grade = lambda *a, **k: None

The course's autograde step (:mod:`workbench.teaching.classroom.preprocessors`) therefore runs each
graded cell ``grade("01-sigmoid-rule")`` as :func:`sealed_grade` instead, loaded from
this file by path (never through the kernel's modules), which

1. loads the checker (``workbench/exercises/``) afresh from its files, under a private
   module name: whatever the learner's code replaced in ``workbench.exercises`` or its
   submodules (``grade``, ``check_answer``, the registry ``EXERCISES``, a tolerance) is
   not what grades;
2. makes the exercise again from the teacher's help cell (the source notebook's, not the
   learner's copy), with the fresh checker's names;
3. compares the kernel's checker with the fresh one, function by function (their code),
   and the kernel's exercise with the teacher's: if the learner's code changed either,
   the exercise scores 0 and the message, which the feedback and the class report show,
   says what was changed;
4. otherwise grades the learner's answer with the fresh checker, as ``grade`` would.

It is a check in the learner's own process, not a sandbox: code that rewrites Python's
builtins, numpy or the engine's ops itself is beyond it (docs/teaching.md says so).
"""

from __future__ import annotations

import ast
import importlib.util
import secrets
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent  # workbench/exercises/
LIVE = "workbench.exercises"
CONSTANTS = (int, float, str, bool, type(None))
CHECKER_CHANGED = "checker_changed"  # the misconception id of a disarmed checker's message


def sealed_grade(grade_id: str, namespace: dict, help_source: str, points: float = 0):
    """Grade exercise ``grade_id`` of the notebook whose globals are ``namespace``, its
    exercise made from ``help_source`` (the teacher's help cell) by a fresh checker. An
    answer right in some of its parts scores that share of the cell's ``points``."""
    fresh = fresh_checker()
    show_its_errors(fresh)
    exercise = trusted_exercise(fresh, namespace, help_source, grade_id)
    changed = tampering(fresh, namespace, exercise, help_source)
    if changed:
        fresh.report.fail(
            f"The checker was changed by code in this notebook ({'; '.join(changed[:3])}), "
            f"so exercise {grade_id} scores 0, and your teacher sees this message. Write "
            "your answer without changing workbench.exercises.",
            kind=CHECKER_CHANGED,
        )
    if exercise.answer is None or exercise.answer not in namespace:
        return fresh.hints.Unanswered(
            f"Your answer, `{exercise.answer}`, is not defined in this notebook."
        )
    try:
        return exercise.grade(namespace[exercise.answer])
    except fresh.report.ExerciseError as wrong:
        if points and wrong.parts and wrong.parts[0]:
            return fresh.hints.PartlyRight(wrong, points)
        raise


def fresh_checker() -> types.ModuleType:
    """``workbench.exercises`` loaded anew from its files, as ``workbench._sealed_<random>``:
    its own functions, constants and registry; the engine (``workbench``) is shared."""
    name = f"workbench._sealed_{secrets.token_hex(8)}"
    spec = importlib.util.spec_from_file_location(
        name, HERE / "__init__.py", submodule_search_locations=[str(HERE)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its submodules' relative imports look it up
    spec.loader.exec_module(module)
    return module


def show_its_errors(fresh) -> None:
    """In a notebook, the fresh checker's errors show as the kernel's own would: the
    message, then one line (its classes are not the kernel's, whose handler is there)."""
    shell = fresh.report.running_ipython()
    if shell is not None:
        shell.set_custom_exc(fresh.report.HANDLED, fresh.report.notebook_handler)


def trusted_exercise(fresh, namespace: dict, help_source: str, grade_id: str):
    """The exercise as the teacher's help cell makes it, with the fresh checker's names
    (an ``import`` of ``workbench.exercises`` in the cell gets the fresh one too)."""
    scope = {**namespace, **checker_names(fresh, help_source)}
    kept = sys.modules.get(LIVE)
    sys.modules[LIVE] = fresh
    try:
        exec(compile(help_source, f"<help cell of {grade_id}>", "exec"), scope)
    finally:
        if kept is None:
            sys.modules.pop(LIVE, None)
        else:
            sys.modules[LIVE] = kept
    exercise = fresh.hints.EXERCISES.get(grade_id)
    if exercise is None:
        raise RuntimeError(f"the help cell given makes no exercise {grade_id}")
    return exercise


def checker_names(fresh, help_source: str) -> dict:
    """The fresh checker's functions and classes that the help cell names (``Exercise``,
    ``check_rule``, ``check_x_grad`` from a submodule...), by those names."""
    used = {
        node.id
        for node in ast.walk(ast.parse(help_source))
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    prefix = fresh.__name__
    found = {}
    for name, module in list(sys.modules.items()):
        if name != prefix and not name.startswith(prefix + "."):
            continue
        for attr, value in vars(module).items():
            own = getattr(value, "__module__", "") or ""
            if attr in used and own.startswith(prefix) and callable(value):
                found.setdefault(attr, value)
    return found


# ------------------------------------------------------------------ what was changed
def tampering(fresh, namespace: dict, exercise, help_source: str) -> list[str]:
    """What the learner's code changed: the kernel's checker modules against the fresh
    ones, the notebook's names for the checker's functions the help cell uses (and
    ``grade``), and the exercise itself."""
    changed = []
    prefix = fresh.__name__
    for name, fresh_module in list(sys.modules.items()):
        if name != prefix and not name.startswith(prefix + "."):
            continue
        live_name = LIVE + name[len(prefix) :]
        live_module = sys.modules.get(live_name)
        if live_module is None:
            continue  # not imported in the kernel (or removed): nothing there to grade with
        changed += [f"{live_name}.{what}" for what in module_changes(live_module, fresh_module)]
    names = {"grade": fresh.grade, **checker_names(fresh, help_source)}
    for name, value in names.items():
        if name in namespace and not same_object(namespace[name], value):
            changed.append(f"the name {name} in the notebook")
    changed += exercise_changes(exercise)
    return changed


def module_changes(live: types.ModuleType, fresh: types.ModuleType) -> list[str]:
    """The functions, classes and constants of ``fresh`` that ``live`` holds otherwise."""
    found = []
    for name, value in vars(fresh).items():
        if name.startswith("__"):
            continue
        if isinstance(value, (types.FunctionType, type)) or type(value) in CONSTANTS:
            if name not in vars(live) or not same_object(vars(live)[name], value):
                found.append(name)
    return found


def same_object(live, fresh, depth: int = 0) -> bool:
    """The same function (the same code, and the same functions in its closure), class
    (the same methods) or constant; a module's own objects only."""
    if type(fresh) in CONSTANTS:
        return type(live) is type(fresh) and live == fresh
    if isinstance(fresh, types.FunctionType):
        return isinstance(live, types.FunctionType) and same_function(live, fresh, depth)
    if isinstance(fresh, type):
        return isinstance(live, type) and same_class(live, fresh, depth)
    return True  # a module, an object with state: not compared


def same_function(live, fresh, depth: int = 0) -> bool:
    """The same code, the same functions in its closure (a ``@checker``'s check), and
    defaults alike."""
    if depth > 3:
        return True
    if not same_code(live.__code__, fresh.__code__):
        return False
    for live_cell, fresh_cell in zip(live.__closure__ or (), fresh.__closure__ or ()):
        fresh_inner = cell_value(fresh_cell)
        if isinstance(fresh_inner, types.FunctionType):
            inner = cell_value(live_cell)
            if not isinstance(inner, types.FunctionType):
                return False
            if not same_function(inner, fresh_inner, depth + 1):
                return False
    return defaults_alike(live, fresh)


def cell_value(cell):
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def defaults_alike(live, fresh) -> bool:
    """Equal defaults; one that is the fresh copy's own object (a class) compares by kind."""
    ours, theirs = live.__defaults__ or (), fresh.__defaults__ or ()
    return len(ours) == len(theirs) and all(
        a == b or type(a).__name__ == type(b).__name__ for a, b in zip(ours, theirs)
    )


def same_class(live: type, fresh: type, depth: int) -> bool:
    for name, value in vars(fresh).items():
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        elif isinstance(value, property):
            value = value.fget
        if not isinstance(value, types.FunctionType):
            continue
        theirs = vars(live).get(name)
        if isinstance(theirs, (staticmethod, classmethod)):
            theirs = theirs.__func__
        elif isinstance(theirs, property):
            theirs = theirs.fget
        if not isinstance(theirs, types.FunctionType) or not same_code(
            theirs.__code__, value.__code__
        ):
            return False
    return True


def same_code(live: types.CodeType, fresh: types.CodeType) -> bool:
    """The same bytecode, names and constants (nested code compared the same way); the
    file name and line numbers may differ (a help cell run by IPython, or compiled here)."""
    if live.co_code != fresh.co_code or live.co_names != fresh.co_names:
        return False
    if len(live.co_consts) != len(fresh.co_consts):
        return False
    for a, b in zip(live.co_consts, fresh.co_consts):
        if isinstance(b, types.CodeType):
            if not isinstance(a, types.CodeType) or not same_code(a, b):
                return False
        elif type(a) is not type(b) or a != b:
            return False
    return True


def exercise_changes(trusted) -> list[str]:
    """The kernel's exercise of the same name against the teacher's: its check, its
    answer's name, methods of its own."""
    live_hints = sys.modules.get(LIVE + ".hints")
    registry = getattr(live_hints, "EXERCISES", None)
    if not isinstance(registry, dict) or trusted.name not in registry:
        return [f"the exercise {trusted.name} taken out of the registry"]
    live = registry[trusted.name]
    found = []
    if type(live) is not getattr(live_hints, "Exercise", None):
        found.append(f"the exercise {trusted.name} replaced")
    elif [name for name in vars(live) if callable(getattr(type(live), name, None))]:
        found.append(f"a method of the exercise {trusted.name} replaced")
    else:
        checker = getattr(live, "checker", None)
        code = getattr(checker, "__code__", None)
        if code is None or not same_code(code, trusted.checker.__code__):
            found.append(f"the check of {trusted.name} changed")
        if getattr(live, "answer", None) != trusted.answer:
            found.append(f"the answer {trusted.name} checks changed")
    return found
