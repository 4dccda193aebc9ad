"""One install line everywhere: ``pip install autodiff-workbench`` (with its extras).

``workbench`` on PyPI is an unrelated project, so a ``pip install workbench`` anywhere in
the repository (README, docs, the hub image, the Lite site, an error message) would
bring that project instead. The package imported stays ``workbench``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Measurement records keep what earlier versions printed, word for word; this file
# spells the wrong lines out to test its pattern.
SKIPPED = {"bench/RESULTS.md", "tests/test_install_name.py"}
# `pip install` followed, on the same line, by a requirement named workbench (not
# autodiff-workbench): `workbench`, `workbench[lab]`, `'workbench[render]'`, `workbench @ ...`.
OLD_NAME = re.compile(r"pip install[^\n]*?(?<![\w-])['\"]?workbench(?![\w-])(?!\.)")


def tracked_text_files() -> list[Path]:
    names = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    files = []
    for name in names:
        path = ROOT / name
        if name in SKIPPED or not path.is_file() or path.suffix in {".png", ".whl", ".js"}:
            continue
        try:
            files.append((name, path.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue
    return files


def test_no_file_installs_the_other_projects_workbench():
    found = [
        f"{name}: {match.group(0)}"
        for name, text in tracked_text_files()
        for match in OLD_NAME.finditer(text)
    ]
    assert found == [], "install autodiff-workbench, not workbench:\n" + "\n".join(found)


def test_the_pattern_catches_the_old_name_and_passes_the_new_one():
    for wrong in (
        "pip install workbench",
        "%pip install -q workbench",
        "pip install 'workbench[render]'",
        'pip install -q "workbench @ git+https://example.org/x"',
    ):
        assert OLD_NAME.search(wrong), wrong
    for right in (
        "pip install autodiff-workbench",
        "pip install 'autodiff-workbench[lab]'",
        "%pip install -q autodiff-workbench",
        "pip install -e '.[dev]'",
    ):
        assert not OLD_NAME.search(right), right


def test_the_distribution_is_autodiff_workbench_and_the_package_workbench():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^name = "autodiff-workbench"$', text, re.M)
    assert '"autodiff-workbench[lab,render]"' in text  # the dev extra names itself
    assert (ROOT / "workbench" / "__init__.py").is_file()
