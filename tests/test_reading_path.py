"""The reading path of one small backward stays short (bench/reading_path.py counts it).

A newcomer follows ``wb.tensor([1.0, 2.0], requires_grad=True).sigmoid().sum().backward()``
through the code: it may call at most 55 workbench functions in at most 10 files, 650
source lines in all. The engine code ``backward()`` runs (under ``workbench/autograd/``)
is held to what it is now, 270 lines (the goal is 220): a change that lengthens the path
fails here and has to say why.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "reading_path.py"


@pytest.fixture(scope="module")
def path() -> dict:
    spec = importlib.util.spec_from_file_location("reading_path", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.measure()


def test_the_whole_path_is_short(path):
    listing = sorted(
        f"{c.co_filename.rsplit('workbench', 1)[-1]}:{c.co_qualname}" for c in path["_whole"]
    )
    assert path["functions"] <= 55, listing
    assert path["files"] <= 10, sorted({c.co_filename for c in path["_whole"]})
    assert path["lines"] <= 650


def test_the_engine_part_is_short(path):
    assert path["engine_lines"] <= 270, sorted(c.co_qualname for c in path["_engine"])


def test_the_count_sees_the_engine(path):
    """Not blind: the loop and the node's rule are on the path."""
    names = {c.co_qualname for c in path["_engine"]}
    assert {"GraphTask.loop", "GraphTask.run_node", "OpNode.apply"} <= names
    assert path["calls"] >= path["functions"]
