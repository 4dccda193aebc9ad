"""``workbench render TRACE.json --kind backward --step 12 -o out.svg``."""

from __future__ import annotations

import json

import pytest

import workbench as wb
from workbench.teaching.cli import main


@pytest.fixture
def trace_file(tmp_path):
    x = wb.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    w = wb.tensor([0.5, -1.0], requires_grad=True)
    with wb.trace() as tr:
        (x * w).sigmoid().sum().backward()
    return tr.save(tmp_path / "run.json")


@pytest.mark.parametrize("suffix", ["svg", "png", "dot"])
def test_render_writes_each_format(trace_file, tmp_path, suffix, capsys):
    out = tmp_path / f"step.{suffix}"
    assert (
        main(["render", str(trace_file), "--kind", "backward", "--step", "2", "-o", str(out)]) == 0
    )
    assert f"wrote {out}" in capsys.readouterr().out
    data = out.read_bytes()
    if suffix == "png":
        assert data.startswith(b"\x89PNG")
    elif suffix == "svg":
        assert b'class="node backward active"' in data
    else:
        assert data.startswith(b"digraph") and b"active" in data


def test_render_forward_next_to_the_trace_by_default(trace_file):
    assert main(["render", str(trace_file), "--kind", "forward"]) == 0
    assert trace_file.with_suffix(".forward.svg").read_text().startswith("<?xml")


def test_render_refuses_a_bad_trace_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "autodiff-workbench-trace", "schema_version": 7}))
    assert main(["render", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("workbench render: ") and "newer than" in err
    assert "Traceback" not in err


def test_render_explains_a_step_out_of_range(trace_file, capsys):
    assert main(["render", str(trace_file), "--step", "40"]) == 2
    assert "steps 1..5" in capsys.readouterr().err


def test_render_of_a_missing_file(tmp_path, capsys):
    assert main(["render", str(tmp_path / "nope.json")]) == 2
    assert "nope.json" in capsys.readouterr().err
