"""Complex numbers and the small floats everywhere a learner looks: pictures, the stepper's
panel, traces saved and loaded (exactly, through the untrusted-file loader)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import workbench as wb
from workbench.trace import summarize, summary_array
from workbench.trace.format import TraceFormatError
from workbench.viz.labels import array_text, values_text
from workbench.widgets.panel import format_array


# ------------------------------------------------------------------ values as text
def test_complex_values_read_as_written():
    assert array_text(np.array(3 + 4j)) == "3+4j"
    assert array_text(np.array([3 + 4j, -1 - 0.5j, 2j])) == "[3+4j, -1-0.5j, 0+2j]"
    assert values_text(np.array([0.12345 - 1e-5j], np.complex64)) == "[0.1235-0j]"


def test_bfloat16_values_get_four_decimals():
    assert (
        array_text(np.array([1.3, -2.7], wb.bfloat16)) == "[ 1.2969, -2.7031]"
    )  # 1.3 rounds to 1.296875
    assert values_text(np.array(2.5, wb.bfloat16)) == "2.5"


@pytest.mark.parametrize(
    "value, expected",
    [
        (np.array([3 + 4j, 1j], np.complex64), "[3+4j, 0+1j]  shape (2,) complex64"),
        (np.array([1.5, 2.0], wb.bfloat16), "[1.5, 2. ]  shape (2,) bfloat16"),
        (np.array([1.5, 2.0], np.float16), "[1.5, 2. ]  shape (2,) float16"),
        (np.array(3 + 4j), "3+4j complex128"),
        (np.array([1.5, 2.0], np.float32), "[1.5, 2. ]  shape (2,)"),  # the default: unnamed
    ],
)
def test_panel_text_names_the_dtype_as_torch_repr_does(value, expected):
    assert format_array(value) == expected


def test_stepper_panel_shows_complex_gradients():
    z = wb.tensor(np.array([3 + 4j]), requires_grad=True, name="z")
    loss = (z * z.conj()).real.sum()  # |z|²: z̄ = 2z
    stepper = wb.widgets.BackwardStepper(loss)
    stepper.run_to(z)
    assert "6+8j" in format_array(stepper.record.leaf.after)
    assert "6+8j" in stepper.panel.value and "complex128" in stepper.panel.value


def test_pictures_show_complex_values_and_small_dtypes():
    z = wb.tensor(np.array([3 + 4j], np.complex64), requires_grad=True, name="z")
    x = wb.tensor([1.5, -2.0], dtype=wb.bfloat16, requires_grad=True, name="x")
    loss = (z * z).abs().sum() + (x * x).float().sum()
    lines = [
        line for v in wb.viz.draw(loss, kind="forward").model.vertices.values() for line in v.lines
    ]
    assert "[3+4j]" in lines and "(1,) complex64" in lines
    assert "(2,) bfloat16" in lines and "[ 1.5, -2. ]" in lines


# ------------------------------------------------------------------ traces
ARRAYS = {
    "complex64": np.array([3 + 4j, 0.1 - 0.2j, np.inf - 1j, complex(np.nan, 2)], np.complex64),
    "complex128": np.array([[1 / 3 + 2j / 7, -0.0 - 1e-300j]]),
    "bfloat16": np.array([1.3, -2.7, 3.0e38, np.inf, np.nan, 1e-40], wb.bfloat16),
    "float16": np.array([[0.1, 65504.0], [-np.inf, 6e-8]], np.float16),
}


@pytest.mark.parametrize("name", ARRAYS)
def test_summaries_round_trip_exactly(name):
    array = ARRAYS[name]
    summary = json.loads(json.dumps(summarize(array), allow_nan=False))  # strict JSON
    back = summary_array(summary)
    assert back.dtype == array.dtype and back.shape == array.shape
    np.testing.assert_array_equal(back.view(np.uint8), array.view(np.uint8))  # bit for bit


def test_a_trace_of_complex_and_bfloat16_work_saves_and_loads_exactly(tmp_path):
    z = wb.tensor(ARRAYS["complex64"][:2], requires_grad=True)
    x = wb.tensor(ARRAYS["bfloat16"][:3], requires_grad=True)
    with wb.trace() as trace:
        ((z * z).abs().sum() + (x * 0.5).float().sum()).backward()
    path = tmp_path / "trace.json"
    trace.save(path)
    loaded = wb.Trace.load(path)
    before = [summary_array(r["value"]) for r in trace.of_kind("op_recorded")]
    after = [summary_array(r["value"]) for r in loaded.of_kind("op_recorded")]
    assert {a.dtype.name for a in after} >= {"complex64", "bfloat16", "float32"}
    for a, b in zip(before, after):
        assert a.dtype == b.dtype
        assert a.tobytes() == b.tobytes()  # bit for bit


def _load_summary(tmp_path, summary: dict):
    """A one-record trace holding ``summary`` as an op's value, loaded from a file."""
    z = wb.tensor([1.0, 2.0], requires_grad=True)
    with wb.trace() as trace:
        z * 2
    path = tmp_path / "trace.json"
    trace.save(path)
    data = json.loads(path.read_text())
    data["events"][0]["value"] = summary
    path.write_text(json.dumps(data))
    return wb.Trace.load(path)


def test_the_loader_checks_bfloat16_values(tmp_path):
    good = {"shape": [2], "dtype": "bfloat16", "values": [1.5, "nan"]}
    record = _load_summary(tmp_path, good).of_kind("op_recorded")[0]
    assert summary_array(record["value"]).dtype == wb.bfloat16
    too_large = {"shape": [1], "dtype": "bfloat16", "values": [1e39]}
    with pytest.raises(TraceFormatError, match="does not fit in bfloat16"):
        _load_summary(tmp_path, too_large)
    with pytest.raises(TraceFormatError, match="not a numeric dtype"):
        _load_summary(tmp_path, {"shape": [1], "dtype": "V2", "values": [1]})


def test_the_loader_checks_both_parts_of_complex_values(tmp_path):
    bad = {"shape": [2], "dtype": "complex64", "values": {"real": [1.0, 2.0], "imag": [1.0]}}
    with pytest.raises(TraceFormatError, match="imag"):
        _load_summary(tmp_path, bad)
    huge = {"shape": [1], "dtype": "complex64", "values": {"real": [1e39], "imag": [0.0]}}
    with pytest.raises(TraceFormatError, match="does not fit in float32"):
        _load_summary(tmp_path, huge)


def test_a_torch_trace_keeps_bfloat16_bit_for_bit():
    torch = pytest.importorskip("torch")
    from workbench.trace.torch_replay import to_numpy

    t = torch.tensor([1.3, -2.7, float("inf")], dtype=torch.bfloat16)
    array = to_numpy(t)
    assert array.dtype == wb.bfloat16
    np.testing.assert_array_equal(array.astype(np.float32), t.float().numpy())
