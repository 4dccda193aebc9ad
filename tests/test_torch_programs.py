"""PyTorch programs run unchanged on the workbench and give PyTorch's numbers.

Every program in tests/torch_programs/ runs twice, each time in a fresh Python process:
once as it is (real PyTorch 2.13.0), once after ``import workbench;
workbench.as_torch()``. Each prints ``RESULT {json}`` last; the two results must agree:
the same keys, strings and integers equal, floats within ``RTOL``/``ATOL`` (float32
training loops that run hundreds of steps in two libraries differ in the last bits of
their sums), lists element by element. The programs are written in the idioms of the
PyTorch tutorials, d2l and makemore (device lines, DataLoader loops, seeded generators,
the accuracy line, custom Functions, nn.Module subclasses, optimizers and schedulers).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

PROGRAMS_DIR = Path(__file__).resolve().parent / "torch_programs"
PROGRAMS = sorted(p for p in PROGRAMS_DIR.glob("*.py") if p.stem not in ("__init__", "names"))
RTOL, ATOL = 1e-4, 1e-6
ON_THE_WORKBENCH = "import workbench; workbench.as_torch(); "


def _command(program: Path, workbench: bool) -> list[str]:
    code = f"import runpy; runpy.run_path({str(program)!r}, run_name='__main__')"
    return [sys.executable, "-c", (ON_THE_WORKBENCH if workbench else "") + code]


def run_both(program: Path) -> tuple[dict, dict]:
    """The RESULT of ``program`` with PyTorch and with the workbench (run side by side)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    runs = [
        subprocess.Popen(
            _command(program, workbench),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=program.parent,
        )
        for workbench in (False, True)
    ]
    results = []
    for label, run in zip(("PyTorch", "workbench"), runs):
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, f"{program.name} failed with {label}:\n{err[-3000:]}"
        lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
        assert lines, f"{program.name} printed no RESULT line with {label}:\n{out[-2000:]}"
        results.append(json.loads(lines[-1].removeprefix("RESULT ")))
    return results[0], results[1]


def differences(expected, got, where: str = "") -> list[str]:
    """Where ``got`` differs from ``expected`` (floats: beyond RTOL and ATOL)."""
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(expected) != set(got):
            shown = sorted(got) if isinstance(got, dict) else got
            return [f"{where}: keys {sorted(expected)} != {shown}"]
        return [
            d for key in expected for d in differences(expected[key], got[key], f"{where}.{key}")
        ]
    if isinstance(expected, list):
        if not isinstance(got, list) or len(expected) != len(got):
            return [f"{where}: {expected} != {got}"]
        return [
            d
            for i, (e, g) in enumerate(zip(expected, got))
            for d in differences(e, g, f"{where}[{i}]")
        ]
    if isinstance(expected, float) or isinstance(got, float):
        if isinstance(expected, bool) or isinstance(got, bool):
            return [f"{where}: {expected!r} != {got!r}"]
        if math.isnan(expected) and math.isnan(got):
            return []
        if math.isclose(expected, got, rel_tol=RTOL, abs_tol=ATOL):
            return []
        return [f"{where}: PyTorch {expected!r}, workbench {got!r}"]
    return [] if expected == got else [f"{where}: PyTorch {expected!r}, workbench {got!r}"]


def test_there_are_at_least_twenty_programs():
    assert len(PROGRAMS) >= 20, [p.name for p in PROGRAMS]


def test_the_comparison_sees_a_difference():
    """Not blind: a float beyond the tolerance, a renamed node, a missing key all count."""
    assert differences({"loss": 1.0}, {"loss": 1.001})
    assert differences({"names": ["MseLossBackward0"]}, {"names": ["MeanBackward0"]})
    assert differences({"a": 1, "b": 2}, {"a": 1})
    assert not differences({"loss": 1.0, "n": [1, 2]}, {"loss": 1.0 + 1e-7, "n": [1, 2]})


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_the_program_gives_pytorchs_result(program):
    expected, got = run_both(program)
    found = differences(expected, got)
    assert not found, f"{program.name}:\n" + "\n".join(found)


def test_the_docs_count_the_programs_there_are():
    root = PROGRAMS_DIR.parent.parent
    page = (root / "docs" / "pytorch_compatibility.md").read_text(encoding="utf-8")
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert f"runs {len(PROGRAMS)} programs" in page
    assert f"and {len(PROGRAMS)} programs in the idioms" in readme
