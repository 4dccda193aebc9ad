"""Python 3.10 to 3.14: what the package says it supports, and nothing those versions removed.

The tests run on one Python (3.11 here) and the browser's is 3.14 (Pyodide 314), so the
code must not lean on what 3.12–3.14 removed or changed: modules dropped by PEP 594
and 632 (distutils, imp, cgi...), ``ast.Num`` and its siblings, naive UTC datetimes
(``utcnow``), ``pkgutil.find_loader``, ``typing.ByteString``,
``locale.getdefaultlocale``, ``asyncio.get_event_loop`` outside a loop, reading
``__annotations__`` directly (lazy in 3.14), ``multiprocessing`` without naming its
start method (3.14's default on Linux is forkserver), ``tarfile.extractall`` without a
filter, ``shutil.rmtree(onerror=)``. This test reads every module's syntax tree for them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(
    p
    for folder in ("workbench", "scripts", "bench", "tests")
    for p in (ROOT / folder).rglob("*.py")
)
REMOVED_MODULES = {
    "distutils", "imp", "asynchat", "asyncore", "smtpd", "cgi", "cgitb", "crypt", "imghdr",
    "mailcap", "msilib", "nis", "nntplib", "ossaudiodev", "pipes", "sndhdr", "spwd", "sunau",
    "telnetlib", "uu", "xdrlib", "lib2to3", "audioop", "chunk", "pkg_resources",
}  # fmt: skip
AST_REMOVED = {"Num", "Str", "Bytes", "NameConstant", "Ellipsis"}  # ast's, gone in 3.14
CHANGED_ATTRIBUTES = {
    "utcnow", "utcfromtimestamp", "find_loader", "get_loader", "ByteString",
    "getdefaultlocale", "get_event_loop", "__annotations__", "makeSuite", "extractall",
}  # fmt: skip
THIS_FILE = Path(__file__).resolve()


def findings(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            names = []
        found += [f"import {n}" for n in names if n.split(".")[0] in REMOVED_MODULES]
        if isinstance(node, ast.Import | ast.ImportFrom):
            found += [f"import {n}" for n in names if n.split(".")[0] == "multiprocessing"]
        if isinstance(node, ast.Attribute) and node.attr in CHANGED_ATTRIBUTES:
            found.append(f".{node.attr}")
        if isinstance(node, ast.Attribute) and node.attr in AST_REMOVED:
            if isinstance(node.value, ast.Name) and node.value.id == "ast":
                found.append(f".{node.attr}")
        if isinstance(node, ast.keyword) and node.arg == "onerror":
            found.append("onerror=")
    return [f"{path.relative_to(root)}:{item}" for item in found]


def test_no_module_uses_what_python_312_to_314_removed_or_changed():
    found = [item for path in SOURCES if path != THIS_FILE for item in findings(path)]
    assert found == []


def test_the_check_finds_what_it_looks_for(tmp_path):
    sample = tmp_path / "old.py"
    sample.write_text(
        "import imp\nfrom distutils import core\nimport ast, datetime\n"
        "x = ast.Num(1)\nd = datetime.datetime.utcnow()\nimport multiprocessing\n"
        "import shutil\nshutil.rmtree('x', onerror=print)\n"
    )
    got = sorted(item.split(":", 1)[1] for item in findings(sample, tmp_path))
    wanted = ["import imp", "import distutils", ".Num", ".utcnow", "import multiprocessing"]
    assert got == sorted([*wanted, "onerror="])


def test_the_supported_versions_are_said_the_same_everywhere():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^requires-python = ">=3.10"(  #.*)?$', text, re.M)
    assert re.search(r'^target-version = "py310"(  #.*)?$', text, re.M)  # ruff: the oldest we support
    versions = re.findall(r'"Programming Language :: Python :: (3\.\d+)"', text)
    assert versions == ["3.10", "3.11", "3.12", "3.13", "3.14"]
    readme = (ROOT / "README.md").read_text()
    assert "Python 3.10 to 3.14" in readme and "Pyodide 314" in readme
