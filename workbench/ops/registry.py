"""One registry: each op is a forward kernel on raw arrays plus a gradient rule.

Registering an op, Relay style::

    @register_op("sigmoid", saves=("out",))
    def sigmoid(x):                     # forward kernel: arrays in, array out
        return 1 / (1 + np.exp(-x))

    @register_gradient("sigmoid")
    def sigmoid_grad(orig, grad):
        \"\"\"Forward: y = sigmoid(x)
        Backward: x̄ = ȳ · y · (1 − y)\"\"\"
        y = orig.out
        return [grad * y * (1 - y)]

A rule gets ``orig`` (the node recorded for the original call: ``orig.args``,
``orig.out``, ``orig.attrs``, ``orig.needs_input_grad``) and ``grad`` (ȳ, a Tensor)
and returns one gradient per input (``None`` where an input has none). Rules use
differentiable tensor ops only, so gradients of gradients come for free.

``saves`` says what the rule needs kept for backward: input names and ``"out"``. A
dict form ``{"a": ("b",)}`` saves ``a`` only when input ``b`` needs a gradient (mul
needs ``a`` only to differentiate w.r.t. ``b``), so memory and in-place checks stay
as tight as PyTorch's.

A node is named after its op, ``mul`` → ``MulBackward0``. ``node_name=`` gives PyTorch's
name where it differs (``layer_norm`` → ``NativeLayerNormBackward0``), or a function of
the node where PyTorch's name depends on the call (``sum`` over everything is
``SumBackward0``, over a dim ``SumBackward1``): a learner comparing a graph with
PyTorch's then reads the same names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..record.forward_ad import same_op

OPS: dict[str, OpDef] = {}


@dataclass(eq=False, slots=True)  # slots: apply_op reads several fields per call
class OpDef:
    name: str
    forward: Callable
    input_names: tuple
    save_inputs: tuple  # (index, needed_by) pairs; needed_by None means always
    save_out: tuple | bool  # True, False, or input indices whose grads need it
    view: bool = False
    differentiable: bool = True
    gradient: Callable | None = None
    formula: str = ""
    jvp: Callable | None = None  # forward mode: the tangent rule (see register_jvp)
    jvp_formula: str = ""
    node_name: str = ""
    names: Callable | None = None  # node → PyTorch's name for this call, when it varies
    extra: dict = field(default_factory=dict)
    writes_out: bool = False  # the kernel takes out=: an array of its result's shape to fill
    save_plans: dict = field(init=False)  # what_to_save's answer by needs: see SavePlans

    def __post_init__(self) -> None:
        self.save_plans = SavePlans(self)

    def what_to_save(self, needs: tuple) -> tuple:
        """``(input indices to save, whether to save the output)`` for a call whose
        inputs need gradients as ``needs`` says (mul keeps ``b`` only for ``a``'s)."""
        indices = tuple(
            sorted(
                index
                for index, needed_by in self.save_inputs
                if needed_by is None or any(needs[j] for j in needed_by)
            )
        )
        out = self.save_out is True or bool(self.save_out and any(needs[j] for j in self.save_out))
        return indices, out

    def __repr__(self) -> str:
        return f"<op {self.name}>"


class SavePlans(dict):
    """``op.save_plans[needs]`` is ``op.what_to_save(needs)``, worked out the first time a
    pattern of ``needs`` comes up and looked up after that: a node is recorded with a
    dict lookup, not a call."""

    def __init__(self, op: OpDef) -> None:
        super().__init__()
        self.op = op

    def __missing__(self, needs: tuple) -> tuple:
        plan = self[needs] = self.op.what_to_save(needs)
        return plan


def _node_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_")) + "Backward0"


def _conditions(needed_by, input_names) -> tuple | None:
    if needed_by is None:
        return None
    if isinstance(needed_by, str):
        needed_by = (needed_by,)
    return tuple(input_names.index(n) if isinstance(n, str) else n for n in needed_by)


def register_op(
    name: str,
    inputs: tuple = ("x",),
    saves=(),
    view: bool = False,
    differentiable: bool = True,
    node_name: str | Callable | None = None,
    writes_out: bool = False,
) -> Callable[[Callable], OpDef]:
    """Register a forward kernel under ``name``; returns the op's :class:`OpDef`.

    ``node_name``: PyTorch's name for the op's node (a string), or a function of the node
    that gives it (see the module docstring); by default ``name`` in CamelCase + Backward0.
    ``writes_out``: the kernel takes ``out=``, an array of its result's shape and dtype to
    write the result into (as a numpy ufunc, which is taken to do so): the compiled
    runner reuses such arrays from one binding to the next (wb.program's runner.py).
    """

    def decorate(forward: Callable) -> OpDef:
        if name in OPS:
            raise ValueError(f"op '{name}' is already registered")
        wanted = dict(saves) if isinstance(saves, dict) else {s: None for s in saves}
        save_inputs = []
        for slot, needed_by in wanted.items():
            if slot == "out":
                continue
            if slot not in inputs:
                raise ValueError(f"register_op('{name}'): saves names unknown input '{slot}'")
            save_inputs.append((inputs.index(slot), _conditions(needed_by, inputs)))
        save_out = False
        if "out" in wanted:
            save_out = _conditions(wanted["out"], inputs) or True
        op = OpDef(
            name=name,
            forward=forward,
            input_names=tuple(inputs),
            save_inputs=tuple(save_inputs),
            save_out=save_out,
            view=view,
            differentiable=differentiable,
            node_name=node_name if isinstance(node_name, str) else _node_name(name),
            names=node_name if callable(node_name) else None,
            writes_out=writes_out or isinstance(forward, np.ufunc),
        )
        OPS[name] = op
        return op

    return decorate


def register_gradient(name: str) -> Callable[[Callable], Callable]:
    """Attach a gradient rule ``rule(orig, grad) -> list`` to the op ``name``."""

    def decorate(rule: Callable) -> Callable:
        op = OPS[name]
        if op.gradient is not None:
            raise ValueError(f"op '{name}' already has a gradient rule")
        op.gradient = rule
        op.formula = formula_of(rule)
        return rule

    return decorate


def register_jvp(name: str) -> Callable[[Callable], Callable]:
    """Attach a forward-mode rule ``rule(orig, tangents) -> Tensor | None`` to the op ``name``.

    ``orig`` is the call (``orig.args``, ``orig.out``, ``orig.attrs``); ``tangents`` holds
    one tangent per input: ẋ for a float or complex tensor (zeros where it has none),
    ``None`` for a Python number or an integer tensor. The rule returns ẏ, the output's
    tangent, built from differentiable tensor ops (so that forward over reverse works),
    or ``None`` where the output has no tangent. Its docstring's ``Forward:`` and ``JVP:``
    lines are the formula the stepper shows.
    """

    def decorate(rule: Callable) -> Callable:
        op = OPS[name]
        if op.jvp is not None:
            raise ValueError(f"op '{name}' already has a JVP rule")
        op.jvp = rule
        op.jvp_formula = formula_of(rule, ("Forward", "JVP"))
        return rule

    return decorate


def register_linear_jvp(
    name: str, forward: str, tangent: str, moving: tuple[int, ...] | None = None
) -> None:
    """Attach the JVP of an op that is linear in its inputs (in those at ``moving`` only,
    when given): the op itself, run on the tangents (``same_op``). ``forward`` and
    ``tangent`` are its formula as the stepper shows it: ``Forward: y = reshape(x, shape)``,
    ``JVP: ẏ = reshape(ẋ, shape)``."""

    def linear_jvp(orig, tangents):
        return same_op(orig, tangents, moving)

    linear_jvp.__name__ = linear_jvp.__qualname__ = f"{name}_jvp"
    linear_jvp.__doc__ = f"Forward: {forward}\nJVP: {tangent}"
    register_jvp(name)(linear_jvp)


def register_rules(
    name: str, gradient: Callable, jvp: Callable, forward: str, backward: str, tangent: str
) -> None:
    """Attach to the op ``name`` rules that one function makes for several ops (floor's and
    ceil's, log10's and log2's): each is named after the op (``floor_grad``) and given the
    docstring a rule written out has, ``Forward: y = {forward}`` with ``Backward: {backward}``
    or ``JVP: {tangent}``, the formulas the stepper shows."""
    gradient.__name__ = gradient.__qualname__ = f"{name}_grad"
    jvp.__name__ = jvp.__qualname__ = f"{name}_jvp"
    gradient.__doc__ = f"Forward: y = {forward}\nBackward: {backward}"
    jvp.__doc__ = f"Forward: y = {forward}\nJVP: {tangent}"
    register_gradient(name)(gradient)
    register_jvp(name)(jvp)


def formula_of(rule: Callable, kinds: tuple = ("Forward", "Backward")) -> str:
    """The 'Forward: ... / Backward: ...' lines of a rule's docstring (``kinds`` names
    the lines to keep: a JVP rule's are 'Forward' and 'JVP'), tidied."""
    doc = rule.__doc__ or ""
    lines = [ln.strip() for ln in doc.strip().splitlines()]
    pattern = "(" + "|".join(kinds) + r")\b"
    keep = [ln for ln in lines if re.match(pattern, ln)]
    return "\n".join(keep)


def get_op(name: str) -> OpDef:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"no op named '{name}' is registered") from None
