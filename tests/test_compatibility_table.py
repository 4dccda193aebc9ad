"""docs/pytorch_compatibility.md says exactly what is there: every row of its tables is
checked against the workbench, standing in for ``torch``.

A row ``| `torch.x.y` | has |`` (or ``partial``) must name something the workbench has; a
``refused`` row must name something it lacks, and asking for it must raise an error that
says why (the reason in ``torch_alias.REFUSED``); every name in ``REFUSED`` has a row.
The page's last part, every public name by module, is written by
``scripts/compatibility_table.py`` and must be what that script writes now.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import workbench as wb
from workbench.compat.torch_alias import REFUSED

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "pytorch_compatibility.md"
ROW = re.compile(r"^\| `((?:torch|Tensor)\.[\w.]+)` \| (has|partial|refused) \|", re.M)


def rows() -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    return ROW.findall(text.split("## The compatibility table", 1)[1])


def lookup(name: str):
    """What ``torch.a.b`` (on the workbench) or ``Tensor.m`` names; raises if nothing."""
    first, *rest = name.split(".")
    value = wb.zeros(2) if first == "Tensor" else wb  # a tensor's methods, as a program asks
    for part in rest:
        value = getattr(value, part)
    return value


def test_the_table_has_rows_of_each_kind():
    statuses = [status for _, status in rows()]
    assert statuses.count("has") > 100 and statuses.count("partial") > 15
    assert statuses.count("refused") >= len(REFUSED)


@pytest.mark.parametrize("name", [n for n, s in rows() if s in ("has", "partial")])
def test_what_the_table_says_is_there_is_there(name):
    lookup(name)


@pytest.mark.parametrize("name", [n for n, s in rows() if s == "refused"])
def test_what_the_table_says_is_refused_is_refused_with_its_reason(name):
    with pytest.raises(AttributeError) as caught:
        lookup(name)
    assert REFUSED[name] in str(caught.value)


def test_every_refused_name_has_a_row():
    refused = {name for name, status in rows() if status == "refused"}
    assert set(REFUSED) <= refused, sorted(set(REFUSED) - refused)


def test_the_names_still_different_are_the_documented_ones():
    from tests.test_graph_names import STILL_DIFFERENT

    text = DOC.read_text(encoding="utf-8")
    for pytorch_name, ours in STILL_DIFFERENT.values():
        assert pytorch_name in text and ours in text


def generator_script():
    """scripts/compatibility_table.py, loaded as a module."""
    path = ROOT / "scripts" / "compatibility_table.py"
    spec = importlib.util.spec_from_file_location("compatibility_table", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_list_of_every_name_is_up_to_date():
    pytest.importorskip("torch")
    script = generator_script()
    text = DOC.read_text(encoding="utf-8")
    assert script.BEGIN in text
    assert script.page_with(text, script.listing()) == text, (
        "docs/pytorch_compatibility.md is out of date: run python scripts/compatibility_table.py"
    )


def test_a_name_added_to_the_workbench_makes_the_list_out_of_date(monkeypatch):
    """Not blind: a new layer shows in the list (in PyTorch's column, if PyTorch has it)."""
    pytest.importorskip("torch")
    script = generator_script()
    layer = type("RNN", (wb.nn.Module,), {"__module__": "workbench.nn.layers"})
    monkeypatch.setattr(wb.nn, "RNN", layer, raising=False)
    text = DOC.read_text(encoding="utf-8")
    row = next(line for line in script.listing().splitlines() if line.startswith("| `torch.nn` ("))
    assert "`RNN`" in row.split(" | ")[1]
    assert script.page_with(text, script.listing()) != text
