"""Pictures: DOT content and snapshots, SVG ids/classes, renderers, folding, lazy import.

Update the DOT snapshots after an intended change with
``UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_viz.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import ipywidgets
import pytest

import workbench as wb
from workbench.core import events
from workbench.viz import renderers as render_module

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"


def product_sum(b_requires_grad: bool = True):
    """((a*b)+a).sum() with fresh ids."""
    events.reset_ids()
    a = wb.tensor([1.0, 2.0], requires_grad=True, name="a")
    b = wb.tensor([3.0, 4.0], requires_grad=b_requires_grad, name="b")
    return ((a * b) + a).sum()


def broadcast_sigmoid_trace():
    """sigmoid(x * w) with w broadcast over rows, recorded with its backward."""
    events.reset_ids()
    x = wb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True, name="x")
    w = wb.tensor([0.5, -1.0], requires_grad=True, name="w")
    with wb.trace() as tr:
        (x * w).sigmoid().sum().backward()
    return tr


def backward_edges(graph) -> set:
    """(tail name, head name) of the gradient edges between backward nodes."""
    vertices = graph.model.vertices

    def name(vid):
        v = vertices[vid]
        return v.lines[0] if v.kind == "backward" else f"AccumulateGrad({v.lines[1]})"

    kinds = ("backward", "accumulate")
    return {
        (name(e.tail), name(e.head))
        for e in graph.model.edges
        if vertices[e.tail].kind in kinds and vertices[e.head].kind in kinds
    }


def svg_classes(svg: str) -> dict:
    return {m[0]: m[1].split() for m in re.findall(r'<g id="([^"]+)" class="([^"]+)"', svg)}


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path.name}: run with UPDATE_SNAPSHOTS=1 to create it"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed (see module docstring)"


# ------------------------------------------------------------------ DOT
def test_reference_d1_7_export_of_product_sum():
    """Sum → Add → {Mul → {AccumulateGrad(a), None}, AccumulateGrad(a)} (b needs no grad)."""
    graph = wb.viz.draw(product_sum(b_requires_grad=False), kind="backward")
    acc_a = "AccumulateGrad(a)"
    assert backward_edges(graph) == {
        ("SumBackward0", "AddBackward0"),
        ("AddBackward0", "MulBackward0"),
        ("AddBackward0", acc_a),
        ("MulBackward0", acc_a),
    }
    mul = next(v for v in graph.model.vertices.values() if v.lines[0] == "MulBackward0")
    flows = [e for e in graph.model.edges if e.tail == mul.id and e.kind == "flow"]
    assert len(flows) == 1  # b needs no gradient: its slot is None, no edge
    assert f'"{mul.id}.b"' in graph.dot  # but mul saved b to compute a's gradient


def test_dot_is_deterministic_and_matches_snapshots():
    backward = wb.viz.draw(product_sum(), kind="backward").dot
    assert wb.viz.draw(product_sum(), kind="backward").dot == backward
    check_snapshot("product_sum_backward.dot", backward)
    check_snapshot("product_sum_forward.dot", wb.viz.draw(product_sum(), kind="forward").dot)
    traced = wb.viz.draw(broadcast_sigmoid_trace(), kind="backward", step=3).dot
    check_snapshot("sigmoid_broadcast_backward_step2.dot", traced)


def test_backward_graph_shows_formulas_saved_tensors_and_collapse_sum():
    x = wb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    w = wb.tensor([0.5, -1.0], requires_grad=True)
    graph = wb.viz.draw((x * w).sigmoid().sum(), kind="backward")
    assert "SigmoidBackward0\\nx̄ = ȳ · y · (1 − y)" in graph.dot
    (collapse,) = [v for v in graph.model.vertices.values() if v.kind == "collapse"]
    assert collapse.lines == ["collapse_sum_like", "Σ over axes (0,)", "(2, 2) → (2,)"]
    head = next(e.head for e in graph.model.edges if e.tail == collapse.id)
    assert graph.model.vertices[head].kind == "accumulate"  # it feeds w's AccumulateGrad
    assert any(
        v.kind == "saved" and v.lines[0] == "saved out" for v in graph.model.vertices.values()
    )


def test_forward_graph_shows_tensors_and_ops_with_grads_once_known():
    loss = product_sum()
    before = wb.viz.draw(loss, kind="forward")
    assert "a\\n(2,) float32\\n[1., 2.]" in before.dot
    assert "grad" not in before.dot
    loss.backward()
    after = wb.viz.draw(loss, kind="forward")
    assert "grad [4., 5.]" in after.dot  # a.grad = b + 1
    ops = [v.lines[0] for v in after.model.vertices.values() if v.kind == "op"]
    assert ops == ["mul", "add", "sum"]


def test_forward_and_backward_share_ids():
    loss = product_sum()
    forward = wb.viz.draw(loss, kind="forward").model.vertices
    backward = wb.viz.draw(loss, kind="backward").model.vertices
    ops = {vid for vid, v in forward.items() if v.kind == "op"}
    nodes = {vid for vid, v in backward.items() if v.kind == "backward"}
    assert ops == nodes
    leaves = {vid for vid, v in forward.items() if v.kind == "leaf"}
    assert leaves == {"t1", "t2"}


def test_trace_and_live_pictures_use_the_same_ids():
    events.reset_ids()
    x = wb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    w = wb.tensor([0.5, -1.0], requires_grad=True)
    with wb.trace() as tr:
        loss = (x * w).sigmoid().sum()
        loss.backward(retain_graph=True)
    live = wb.viz.draw(loss).model.vertices
    traced = wb.viz.draw(tr).model.vertices
    assert set(live) == set(traced)
    assert [v.kind for v in live.values()] == [traced[k].kind for k in live]


def test_predicted_step_order_is_the_order_backward_runs():
    programs = [
        lambda a, b: ((a * b) + a).sum(),
        lambda a, b: (a.exp() * b.sin() + (a * b).tanh() * a).sum(),
        lambda a, b: ((a + b) * (a - b) * a).mean(),
    ]
    for program in programs:
        a = wb.tensor([0.5, -1.0, 2.0], requires_grad=True)
        b = wb.tensor([1.5, 0.5, -0.25], requires_grad=True)
        loss = program(a, b)
        predicted = wb.viz.draw(loss).order
        with wb.trace() as tr:
            loss.backward()
        assert predicted == [s.node for s in tr.backward_steps]


def test_higher_order_graph_renders():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    (g,) = wb.autograd.grad((x * x * x).sum(), x, create_graph=True)
    graph = wb.viz.draw(g, kind="backward")
    names = [v.lines[0] for v in graph.model.vertices.values() if v.kind == "backward"]
    assert "MulBackward0" in names and "AddBackward0" in names  # d/dx of 3x² is built of ops
    assert "<svg" in graph.svg()
    with wb.trace() as tr:
        g.sum().backward()
    assert len(wb.viz.draw(tr).order) == len(tr.backward_steps) > 3


# ------------------------------------------------------------------ SVG
def test_svg_without_dot_on_path_has_stable_ids_and_step_classes(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` anywhere: pygraphviz draws
    assert render_module.which_renderer() == "pygraphviz"
    graph = wb.viz.draw(broadcast_sigmoid_trace(), kind="backward", step=3)
    active = graph.order[2]
    classes = svg_classes(graph.svg())
    assert "active" in classes[active] and "node" in classes[active]
    for done in graph.order[:2]:
        assert "done" in classes[done]
    assert "active" in classes[f"{active}.sum1"]  # mul's collapse-sum runs in mul's step
    later = graph.order[3]
    assert "active" not in classes[later] and "done" not in classes[later]
    assert f'<g id="{active}" class="node backward active">' in graph.svg()


def test_jupyter_shows_a_widget_laid_out_in_the_browser_with_no_renderer(monkeypatch):
    """IPython asks every ``_repr_*``: none of them may run a native renderer."""
    from IPython.core.formatters import DisplayFormatter

    from workbench.widgets import GraphView

    def no_renderer(*args, **kwargs):
        raise AssertionError("displaying a drawing ran a native renderer")

    monkeypatch.setattr("workbench.viz.graph.render", no_renderer)
    graph = wb.viz.draw(product_sum(), kind="forward", step=1)
    shown, _ = DisplayFormatter().format(graph)
    assert set(shown) == {"application/vnd.jupyter.widget-view+json", "text/plain"}
    model_id = shown["application/vnd.jupyter.widget-view+json"]["model_id"]
    view = ipywidgets.widgets.widget._instances[model_id]
    assert isinstance(view, GraphView) and view.dot == graph.dot
    assert shown["text/plain"] == repr(graph)
    view.close()


def test_save(tmp_path):
    graph = wb.viz.draw(product_sum(), kind="forward", step=1)
    assert graph.save(tmp_path / "g.dot").read_text() == graph.dot
    assert graph.save(tmp_path / "g.svg").read_text().count("<svg") == 1
    assert graph.save(tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="cannot save as 'gif'"):
        graph.save(tmp_path / "g.gif")


def fake_dot(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "dot"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return script


def test_system_dot_is_used_first_and_classes_are_added_if_it_drops_them(monkeypatch, tmp_path):
    log = tmp_path / "calls.txt"
    fake_dot(
        tmp_path, f'echo "$@" > {log}\n/bin/cat >> {log}\necho \'<svg><g id="n1" class="node">\'\n'
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    graph = wb.viz.draw(product_sum(), step=1)
    assert render_module.which_renderer() == "dot"
    svg = graph.svg()
    assert log.read_text().startswith("-Tsvg\n" + "digraph workbench {")
    assert svg == '<svg><g id="n1" class="node backward">\n'  # n1: MulBackward0, not active


def test_a_slow_dot_times_out_instead_of_hanging(monkeypatch, tmp_path):
    fake_dot(tmp_path, "/bin/sleep 5\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(render_module, "TIMEOUT_S", 0.5)
    with pytest.raises(RuntimeError, match="took longer than"):
        wb.viz.draw(product_sum()).svg()


def test_missing_renderer_says_how_to_fix_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "pygraphviz", None)  # import fails
    graph = wb.viz.draw(product_sum())
    assert graph.dot.startswith("digraph")  # DOT needs no renderer
    with pytest.raises(wb.viz.RendererMissing, match=r"pip install 'autodiff-workbench\[render\]'"):
        graph.svg()


# -------------------------------------------------------------- folding
def deep_chain(n: int):
    z = wb.tensor([0.5], requires_grad=True)
    for _ in range(n):
        z = z.sin() * 0.9
    return z.sum()


def test_big_graphs_fold_repeated_structure_with_a_note():
    graph = wb.viz.draw(deep_chain(150), kind="backward")
    assert len(graph.model.vertices) <= wb.viz.FOLD_LIMIT
    assert graph.notes and graph.notes[0].startswith("Folded")
    assert "Folded" in graph.dot  # the note is on the picture
    (fold,) = [v for v in graph.model.vertices.values() if v.kind == "fold"]
    assert "× [MulBackward0 → SinBackward0]" in fold.label
    unfolded = wb.viz.draw(deep_chain(150), fold_limit=None)
    assert len(unfolded.model.vertices) > 300 and not unfolded.notes


def test_a_step_inside_a_fold_lights_up_the_fold():
    graph = wb.viz.draw(deep_chain(100), kind="backward", step=51)
    (fold,) = [v for v in graph.model.vertices.values() if v.kind == "fold"]
    assert fold.classes == ["active"]


def test_fold_by_name_scope():
    tr = broadcast_sigmoid_trace()
    for record in tr.of_kind("op_recorded"):
        if not record["in_backward"]:
            scope = ["net", "head"] if record["op"] == "sum" else ["net", "layer"]
            record["scope"] = scope
    graph = wb.viz.draw(tr, kind="backward", fold_limit=6)
    folds = {vid: v for vid, v in graph.model.vertices.items() if v.kind == "fold"}
    assert "scope:net/layer" in folds
    assert folds["scope:net/layer"].lines[0] == "net/layer"
    assert any("name-scope" in note for note in graph.notes)


def test_bad_requests_are_explained():
    with pytest.raises(ValueError, match="does not require grad"):
        wb.viz.draw(wb.tensor([1.0]) * 2)
    with pytest.raises(ValueError, match="kind must be"):
        wb.viz.draw(product_sum(), kind="sideways")
    with pytest.raises(IndexError, match="steps 1..5"):
        wb.viz.draw(product_sum(), step=6)
    with pytest.raises(IndexError, match="steps 1..5"):
        wb.viz.draw(product_sum(), step=0)  # steps count from 1, as in the stepper
    with pytest.raises(TypeError, match="takes a Tensor"):
        wb.viz.draw("loss")


# --------------------------------------------------------------- import
def test_importing_workbench_loads_no_drawing_libraries():
    code = (
        "import sys, workbench as wb\n"
        "heavy = ['graphviz', 'pygraphviz', 'matplotlib', 'ipywidgets', 'IPython', 'jupyter',\n"
        "         'jupyterlab', 'workbench.viz']\n"
        "print([m for m in heavy if m in sys.modules])\n"
        "wb.viz.draw\n"
        "print('workbench.viz' in sys.modules)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split("\n")[:2] == ["[]", "True"]


def test_trace_of_a_partial_grad_names_the_nodes_that_did_not_run():
    x = wb.tensor([1.0, 2.0], requires_grad=True)
    y = wb.tensor([3.0, 4.0], requires_grad=True)
    loss = (x * y).sum()
    with wb.trace() as tr:
        wb.autograd.grad(loss, [x])
    vertices = wb.viz.draw(tr).model.vertices
    accumulate_y = loss.grad_fn.next_functions[0][0].next_functions[1][0]
    assert vertices[accumulate_y.uid].lines == [accumulate_y.uid, "(did not run)"]
    with pytest.raises(ValueError, match="no forward op"):
        wb.viz.draw(tr, kind="forward")
